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
