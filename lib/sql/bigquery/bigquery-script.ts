import type { CompiledStatement, ScriptParts, SqlDialect } from '../dialect.ts'

/** Script variable holding the label of the running step, so a failure names it. */
export const STEP_VARIABLE = 'dimsync_step'
/** Prefix of the message a failed merge script raises; the adapter parses it back (see bigquery-errors.ts). */
export const STEP_FAILED = 'dimsync step '
/** Script variable holding the error message while the handler rolls back. */
const ERROR_VARIABLE = 'dimsync_error'

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
  const text = [
    `-- ${oneLine(script.title)}`,
    `DECLARE ${v} STRING DEFAULT '';`,
    `DECLARE ${ERROR_VARIABLE} STRING DEFAULT '';`,
    ...script.ddl.map((s) => step(s, '')),
    'BEGIN',
    '  BEGIN TRANSACTION;',
    ...script.merge.map((s) => step(s, '  ')),
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
    ...script.after.map((s) => step(s, '')),
  ].join('\n')
  return `${text}\n`
}

const oneLine = (text: string) => text.replace(/[\r\n]+/g, ' ')
