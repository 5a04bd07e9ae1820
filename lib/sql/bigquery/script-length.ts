import type { CompiledScript } from '../../core/compiled-sql.ts'

/**
 * BigQuery's limit on the text of one query (a script included): 1,024K characters, comments and white space
 * included ("The query is too large. The maximum standard SQL query length is 1024.00K characters"). Whether K is
 * 1,000 or 1,024 is not documented: the lower reading is taken, so what dimsync sends is never refused for it.
 */
export const MAX_QUERY_CHARACTERS = 1_024_000

const k = (n: number) => `${Math.ceil(n / 1000).toLocaleString('en-US')}K`

/** The queries a merge script is sent as: the script, or (over the limit) the queries of its session. */
export function scriptQueries(script: CompiledScript): readonly string[] {
  if (script.text.length <= MAX_QUERY_CHARACTERS || script.session === undefined) return [script.text]
  return [script.session.ledgerCheck, ...script.session.jobs]
}

/**
 * Why the merge script of `table` cannot be sent to BigQuery, naming the table, its length, its longest
 * statement and the limit; undefined when it fits one query, or when each query of its session does. Checked
 * before submission: BigQuery would refuse it only after the batch was loaded.
 */
export function scriptLengthProblem(
  table: string,
  script: CompiledScript,
  columns: number | undefined,
): string | undefined {
  if (scriptQueries(script).every((q) => q.length <= MAX_QUERY_CHARACTERS)) return undefined
  const width = columns === undefined ? '' : ` (${columns} columns)`
  const longest = [...script.ddl, ...script.merge, ...script.after].reduce((a, b) =>
    b.sql.length > a.sql.length ? b : a,
  )
  return (
    `table ${table}: its merge script is ${k(script.text.length)} characters${width}, over BigQuery's limit of ` +
    `${k(MAX_QUERY_CHARACTERS)} characters per query, and its statement "${longest.label}" (${k(longest.sql.length)} ` +
    'characters) does not fit one query of a session either; nothing was merged. Exclude columns the dimension ' +
    'does not need (exclude:), or rename long source columns in a query source'
  )
}
