import { checkFailureMarkers, type CheckIdentity } from '../core/check-failure.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * An expression that aborts the merge with a failed check: `message` (a STRING expression, the text people read)
 * inside the check's markers, so the adapter turns it back into BatchRejectedError / MassDeleteRefusedError
 * (parseCheckFailure) without reading the English text.
 */
export function raiseCheck(d: SqlDialect, check: CheckIdentity, message: string): string {
  const { open, close } = checkFailureMarkers(check)
  return d.raiseError(`${d.stringLiteral(open)} || ${message} || ${d.stringLiteral(close)}`)
}

/** How many examples a refusal lists. */
const EXAMPLES = 10

/**
 * A statement that refuses the batch when `offending` (a query) returns rows: `<message(count)>, for example:
 * <up to ten examples, in order>; nothing was written`. `offending` has a STRING column `k` that orders the
 * examples; `example` (a STRING expression over its columns, `k` by default) is what each example shows, and
 * `message` gets the number of offending rows as an INT64 expression.
 */
export function refuseWithExamples(
  d: SqlDialect,
  check: CheckIdentity,
  refusal: {
    readonly offending: string
    readonly message: (count: string) => string
    readonly example?: string
  },
): string {
  const str = (text: string) => d.stringLiteral(text)
  return (
    `WITH dup AS (\n  ${refusal.offending}\n),\n` +
    `sample AS (SELECT * FROM dup ORDER BY k LIMIT ${EXAMPLES})\n` +
    `SELECT ${raiseCheck(
      d,
      check,
      `${refusal.message('x.c')} || ${str(', for example: ')} || ` +
        `(SELECT STRING_AGG(${refusal.example ?? 'k'}, '; ' ORDER BY k) FROM sample) || ${str('; nothing was written')}`,
    )}\nFROM (SELECT COUNT(*) AS c FROM dup) x WHERE x.c > 0`
  )
}
