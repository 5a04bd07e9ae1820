import {
  BatchRejectedError,
  ConfigError,
  LeaseLostError,
  LockHeldError,
  MassDeleteRefusedError,
  type DimsyncError,
} from './errors.ts'

/**
 * How the orchestration retries a failed step, by the name of the error the function threw (Lambda reports it as
 * the errorType that the state machine's retriers match). The names come from the error classes themselves, so
 * renaming a class cannot leave a retrier matching nothing.
 */

type ErrorClass = abstract new (...args: never[]) => DimsyncError

/** The one errorType of every transient failure (an error marked `retryable`), see `reportedErrorName`. */
export const RETRYABLE_ERROR_NAME = 'RetryableError'

/** Failures that waiting out another run can fix: retried on their own, slower schedule. */
const RETRIED_LATER: readonly ErrorClass[] = [LockHeldError]

/** Failures a retry cannot fix: bad config or event, a batch breaking its contract, the mass-delete guard, a lost lease. */
const NEVER_RETRIED: readonly ErrorClass[] = [
  ConfigError,
  BatchRejectedError,
  MassDeleteRefusedError,
  LeaseLostError,
]

/** The errorTypes each retrier matches (the first matching retrier wins, so `neverRetried` goes first). */
export const RETRY_ERROR_NAMES = Object.freeze({
  neverRetried: Object.freeze(NEVER_RETRIED.map((error) => error.name)),
  retriedWithBackoff: Object.freeze([...RETRIED_LATER.map((error) => error.name), RETRYABLE_ERROR_NAME]),
})

/**
 * The errorType a function reports for `error`: transient failures (marked `retryable`) under one name, so the
 * orchestration retries exactly those; errors retried on their own schedule, and all others, under their own.
 */
export function reportedErrorName(error: { readonly name: string; readonly retryable?: unknown }): string {
  if (error.retryable !== true) return error.name
  return RETRIED_LATER.some((retried) => retried.name === error.name) ? error.name : RETRYABLE_ERROR_NAME
}
