import type { DimsyncError } from '../../core/errors.ts'
import { rejectedBatchError } from '../../core/check-failure.ts'
import { LeaseLostError, WarehouseError } from '../../core/errors.ts'
import { parseFenceRefusal } from '../../sql/render-fence.ts'
import type { CompiledStatement } from '../../sql/dialect.ts'
import { STEP_FAILED } from '../../sql/bigquery/bigquery-script.ts'

/** The error of a finished BigQuery job (`status.errorResult`, `status.errors`). */
export interface JobError {
  readonly reason?: string
  readonly message?: string
  readonly location?: string
}

/**
 * Maps a failed job to a dimsync error. A merge script re-raises its failure as `dimsync step <label>: <msg>`,
 * `<msg>` being BigQuery's `@@error.message`; the label picks the failing statement, so the error carries its
 * SQL. dimsync's own checks become BatchRejectedError / MassDeleteRefusedError (nothing was written); anything
 * else is a WarehouseError naming the job, the step and the reason, marked retryable when the reason is
 * transient (see transientReason). `httpStatus`: the status of a failed API call, when the job never ran.
 */
export function jobFailure(
  jobId: string,
  error: JobError,
  statements: readonly CompiledStatement[],
  httpStatus?: number,
): DimsyncError {
  const raw = error.message ?? error.reason ?? 'unknown error'
  let label = `job ${jobId}`
  let message = raw
  const step = raw.indexOf(STEP_FAILED)
  if (step >= 0) {
    const rest = raw.slice(step + STEP_FAILED.length)
    const colon = rest.indexOf(': ')
    if (colon > 0) {
      label = rest.slice(0, colon)
      message = rest.slice(colon + 2)
    }
  }
  const rejected = rejectedBatchError(message)
  if (rejected !== undefined) return rejected
  const fenced = parseFenceRefusal(message)
  if (fenced !== undefined) return new LeaseLostError(fenced.table, fenced.message)
  const statement = statements.find((s) => s.label === label)
  const transient = transientReason(error.reason, message, httpStatus)
  const reason = transient ?? error.reason
  return new WarehouseError(label, statement?.sql ?? '', {
    cause: new Error(`BigQuery job ${jobId} failed${reason ? ` (${reason})` : ''}: ${message}`),
    retryable: transient !== undefined,
  })
}

/** dimsync's reason for an API call that got no answer (connection failed or timed out); transient. */
export const NO_RESPONSE = 'noResponse'

const TRANSIENT_REASONS: ReadonlySet<string> = new Set([
  NO_RESPONSE,
  'backendError',
  'internalError',
  'rateLimitExceeded',
  'jobBackendError',
  'jobInternalError',
])

/**
 * BigQuery's texts for transient failures. A statement failing inside a script's exception handler is known
 * there only by `@@error.message` (the handler's RAISE reports `invalidQuery`), so the reason is recovered from
 * the text BigQuery writes for it.
 */
const TRANSIENT_TEXTS: readonly (readonly [RegExp, string])[] = [
  [/Retrying may solve the problem/i, 'backendError'],
  [/internal error occurred|caused by a transient issue/i, 'internalError'],
  [/Exceeded rate limits/i, 'rateLimitExceeded'],
  [/concurrent update|could not serialize access/i, 'concurrent update'],
]

/**
 * The transient reason of a failure, or undefined when retrying cannot help (a rejected batch, a permission, a
 * daily quota, invalid SQL): the job's reason when it is a transient one, else the reason BigQuery's text
 * names, else a 5xx or 429 answer to an API call.
 */
export function transientReason(
  reason: string | undefined,
  message: string,
  httpStatus?: number,
): string | undefined {
  if (reason !== undefined && TRANSIENT_REASONS.has(reason)) return reason
  const text = TRANSIENT_TEXTS.find(([pattern]) => pattern.test(message))
  if (text !== undefined) return text[1]
  if (httpStatus !== undefined && (httpStatus >= 500 || httpStatus === 429)) return `HTTP ${httpStatus}`
  return undefined
}
