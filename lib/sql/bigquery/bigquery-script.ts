import { RESERVED_PREFIX } from '../../core/dimension-layout.ts'
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

/**
 * A merge as one GoogleSQL script: DDL first (BigQuery refuses DDL on permanent tables inside a transaction),
 * then the merge inside `BEGIN TRANSACTION … COMMIT TRANSACTION` with an exception handler that rolls back and
 * re-raises the error prefixed with the failing step's label, then the statements after the commit (the last
 * statement's rows are the script job's result).
 */
export function renderBigQueryScriptText(d: SqlDialect, script: ScriptParts): string {
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
  const text = [
    `-- ${oneLine(script.title)}`,
    `DECLARE ${v} STRING DEFAULT '';`,
    `DECLARE ${ERROR_VARIABLE} STRING DEFAULT '';`,
    `DECLARE ${EVENTS_FROM_VARIABLE} TIMESTAMP;`,
    ...committedBatch(script, step),
    ...steps(
      script.ddl.filter((s) => s.sql !== script.committed?.ledger.sql),
      '',
    ),
    'BEGIN',
    '  BEGIN TRANSACTION;',
    ...steps(script.merge, '  '),
    '  COMMIT TRANSACTION;',
    'EXCEPTION WHEN ERROR THEN',
    // Keep the message first: a failing ROLLBACK (no open transaction) would replace @@error.
    `  SET ${ERROR_VARIABLE} = CONCAT(${d.stringLiteral(STEP_FAILED)}, ${v}, ': ', @@error.message);`,
    '  BEGIN',
    '    ROLLBACK TRANSACTION;',
    '  EXCEPTION WHEN ERROR THEN',
    `    SET ${ERROR_VARIABLE} = ${ERROR_VARIABLE};`,
    '  END;',
    `  RAISE USING MESSAGE = ${ERROR_VARIABLE};`,
    'END;',
    ...steps(script.after, ''),
  ].join('\n')
  return `${text}\n`
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
