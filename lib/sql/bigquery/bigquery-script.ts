import { RESERVED_PREFIX } from '../../core/dimension-layout.ts'
import type { SessionScript } from '../../core/compiled-sql.ts'
import type { CompiledStatement, ScriptParts, SqlDialect } from '../dialect.ts'

/*
 * The script's variables are named in dimsync's reserved prefix (RESERVED_PREFIX, which no source column may use):
 * BigQuery resolves a bare name to a column before a variable, so a column named like a variable would take its
 * place in every statement that reads that column's table.
 */
/** Script variable holding the label of the running step, so a failure names it. */
export const STEP_VARIABLE = `${RESERVED_PREFIX}step`
/** Script variable holding the batch's earliest event time (see SqlDialect.earliestEventTime). */
export const EVENTS_FROM_VARIABLE = `${RESERVED_PREFIX}events_from`
/** Prefix of the message a failed merge script raises; the adapter parses it back (see bigquery-errors.ts). */
export const STEP_FAILED = 'dimsync step '
/** Script variable holding the error message while the handler rolls back. */
const ERROR_VARIABLE = `${RESERVED_PREFIX}error`
/** Session variable holding the guard of a run of statements split over several queries (evaluated once). */
const GUARD_VARIABLE = `${RESERVED_PREFIX}guard`

/**
 * A merge as one GoogleSQL script: DDL first (BigQuery refuses DDL on permanent tables inside a transaction),
 * then the merge inside `BEGIN TRANSACTION … COMMIT TRANSACTION` with an exception handler that rolls back and
 * re-raises the error prefixed with the failing step's label, then the statements after the commit (the last
 * statement's rows are the script job's result).
 */
export function renderBigQueryScriptText(d: SqlDialect, script: ScriptParts): string {
  const { step, steps } = stepWriters(d)
  const text = [
    `-- ${oneLine(script.title)}`,
    ...declarations(),
    ...committedBatch(script, step),
    ...steps(
      script.ddl.filter((s) => s.sql !== script.committed?.ledger.sql),
      '',
    ),
    'BEGIN',
    '  BEGIN TRANSACTION;',
    ...steps(script.merge, '  '),
    '  COMMIT TRANSACTION;',
    ...rollbackAndRaise(d),
    ...steps(script.after, ''),
  ].join('\n')
  return `${text}\n`
}

/**
 * The merge of `script` as the queries of one BigQuery session, each at most `maxCharacters` long: a query may
 * leave a transaction open for the session's next one (BEGIN TRANSACTION in one, COMMIT TRANSACTION in a later
 * one). Each query's statements run inside an exception handler that rolls the session's transaction back and
 * re-raises with the failing step's label, as the script's does. A run of statements under one guard that does
 * not fit one query is split, its guard evaluated once into a session variable before the first of them.
 */
export function renderBigQuerySessionScript(
  d: SqlDialect,
  script: ScriptParts,
  maxCharacters: number,
): SessionScript {
  const committed = script.committed
  if (committed === undefined) throw new Error('a session merge needs the ledger check of its batch')
  const { step, steps } = stepWriters(d)
  const title = (what: string) => `-- ${oneLine(script.title)}: ${what}`
  const ledgerCheck = [
    title('session query 1, the ledger'),
    ...sessionDeclarations(),
    step(committed.ledger, ''),
    `SELECT ${committed.isCommitted} AS committed;`,
  ].join('\n')
  const answer = [title('the batch is already merged'), ...committed.after.map((s) => step(s, ''))].join('\n')
  const ddl = steps(
    script.ddl.filter((s) => s.sql !== committed.ledger.sql),
    '',
  )
  const merge = guardedRuns(script.merge).flatMap(({ onlyIf, run }) => {
    const whole = steps(run, '  ')
    // A run too long for one query (with room for the query's handler) is split into its statements; their guard
    // is evaluated once, before the first, so each statement runs under the answer the run would have had.
    if (whole.join('\n').length <= maxCharacters - 2_000) return whole
    if (onlyIf === undefined) return run.flatMap((s) => steps([s], '  '))
    return [
      `  SET ${STEP_VARIABLE} = ${d.stringLiteral(run[0]!.label)};\n` +
        `  SET ${GUARD_VARIABLE} = (${onlyIf.replaceAll('\n', '\n  ')});`,
      ...run.map((s) => steps([{ ...s, onlyIf: GUARD_VARIABLE }], '  ').join('\n')),
    ]
  })
  const after = steps(script.after, '')
  // Each query: [DDL] [BEGIN TRANSACTION] BEGIN <merge> EXCEPTION … END [COMMIT TRANSACTION; <after>].
  const compose = (part: Part, n: number) =>
    [
      title(`session query ${n + 2}`),
      ...part.ddl,
      ...(part.begins ? ['BEGIN TRANSACTION;'] : []),
      ...(part.merge.length === 0 ? [] : ['BEGIN', ...part.merge, ...rollbackAndRaise(d)]),
      ...(part.commits ? ['COMMIT TRANSACTION;', ...after] : []),
    ].join('\n')
  const parts: Part[] = []
  let current: Part = { ddl: [], begins: false, merge: [], commits: false }
  const fits = (part: Part) => compose(part, parts.length).length <= maxCharacters
  const add = (change: (part: Part) => Part) => {
    const next = change(current)
    if (fits(next) || isEmpty(current)) current = next
    else {
      parts.push(current)
      current = change({ ddl: [], begins: false, merge: [], commits: false })
    }
  }
  for (const unit of ddl) add((p) => ({ ...p, ddl: [...p.ddl, unit] }))
  // BEGIN TRANSACTION opens the query of the first merge statement (a query of DDL alone ends before it).
  merge.forEach((unit, i) => add((p) => ({ ...p, begins: p.begins || i === 0, merge: [...p.merge, unit] })))
  add((p) => ({ ...p, commits: true }))
  parts.push(current)
  // A query still over the limit holds a statement over it by itself: the adapter refuses it (script-length.ts).
  const jobs = parts.map((part, n) => `${compose(part, n)}\n`)
  return { ledgerCheck: `${ledgerCheck}\n`, committed: `${answer}\n`, jobs }
}

interface Part {
  readonly ddl: readonly string[]
  readonly begins: boolean
  readonly merge: readonly string[]
  readonly commits: boolean
}

const isEmpty = (part: Part) =>
  part.ddl.length === 0 && !part.begins && part.merge.length === 0 && !part.commits

const declarations = () => [
  `DECLARE ${STEP_VARIABLE} STRING DEFAULT '';`,
  `DECLARE ${ERROR_VARIABLE} STRING DEFAULT '';`,
  `DECLARE ${EVENTS_FROM_VARIABLE} TIMESTAMP;`,
]
const sessionDeclarations = () => [...declarations(), `DECLARE ${GUARD_VARIABLE} BOOL;`]

/** The handler closing a `BEGIN` block of merge statements: roll back, re-raise with the step's label. */
function rollbackAndRaise(d: SqlDialect): string[] {
  return [
    'EXCEPTION WHEN ERROR THEN',
    // Keep the message first: a failing ROLLBACK (no open transaction) would replace @@error.
    `  SET ${ERROR_VARIABLE} = CONCAT(${d.stringLiteral(STEP_FAILED)}, ${STEP_VARIABLE}, ': ', @@error.message);`,
    '  BEGIN',
    '    ROLLBACK TRANSACTION;',
    '  EXCEPTION WHEN ERROR THEN',
    `    SET ${ERROR_VARIABLE} = ${ERROR_VARIABLE};`,
    '  END;',
    `  RAISE USING MESSAGE = ${ERROR_VARIABLE};`,
    'END;',
  ]
}

function stepWriters(d: SqlDialect) {
  const v = STEP_VARIABLE
  const step = (s: CompiledStatement, indent: string) =>
    `${indent}SET ${v} = ${d.stringLiteral(s.label)};\n${indent}${s.sql.replaceAll('\n', `\n${indent}`)};`
  const steps = (statements: readonly CompiledStatement[], indent: string) =>
    guardedRuns(statements).map(({ onlyIf, run }) =>
      onlyIf === undefined
        ? run.map((s) => step(s, indent)).join('\n')
        : [
            `${indent}IF ${onlyIf.replaceAll('\n', `\n${indent}`)} THEN`,
            ...run.map((s) => step(s, `${indent}  `)),
            `${indent}END IF;`,
          ].join('\n'),
    )
  return { step, steps }
}

/**
 * A batch already in the ledger (a retry after its COMMIT): the recorded counts are the answer, and the script
 * returns before its DDL and merge.
 */
function committedBatch(
  script: ScriptParts,
  step: (s: CompiledStatement, indent: string) => string,
): string[] {
  const committed = script.committed
  if (committed === undefined) return []
  return [
    step(committed.ledger, ''),
    `IF ${committed.isCommitted} THEN`,
    ...committed.after.map((s) => step(s, '  ')),
    '  RETURN;',
    'END IF;',
  ]
}

/**
 * Consecutive statements with the same guard, in order: each run of guarded statements becomes one
 * `IF <guard> THEN … END IF` block, so a skipped part (the late path of a batch without late keys) reads nothing.
 */
function guardedRuns(statements: readonly CompiledStatement[]) {
  const runs: { onlyIf: string | undefined; run: CompiledStatement[] }[] = []
  for (const s of statements) {
    const last = runs.at(-1)
    if (last !== undefined && last.onlyIf === s.onlyIf) last.run.push(s)
    else runs.push({ onlyIf: s.onlyIf, run: [s] })
  }
  return runs
}

const oneLine = (text: string) => text.replace(/[\r\n]+/g, ' ')
