/**
 * BigQuery's limit on the text of one query (a script included): 1,024K characters, comments and white space
 * included ("The query is too large. The maximum standard SQL query length is 1024.00K characters"). Whether K is
 * 1,000 or 1,024 is not documented: the lower reading is taken, so what dimsync sends is never refused for it.
 */
export const MAX_QUERY_CHARACTERS = 1_024_000

/**
 * Why the merge script of `table` cannot be sent to BigQuery, naming the table, its length and the limit; undefined
 * when it fits. Checked before submission: BigQuery would refuse it only after the batch was loaded.
 */
export function scriptLengthProblem(
  table: string,
  text: string,
  columns: number | undefined,
): string | undefined {
  if (text.length <= MAX_QUERY_CHARACTERS) return undefined
  const k = (n: number) => `${Math.ceil(n / 1000).toLocaleString('en-US')}K`
  const width = columns === undefined ? '' : ` (${columns} columns)`
  return (
    `table ${table}: its merge script is ${k(text.length)} characters${width}, over BigQuery's limit of ` +
    `${k(MAX_QUERY_CHARACTERS)} characters per query; nothing was merged. Exclude columns the dimension does not ` +
    'need (exclude:), or rename long source columns in a query source'
  )
}
