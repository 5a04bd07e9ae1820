import type { DimsyncError } from '../../core/errors.ts'
import { rejectedBatchError } from '../../core/check-failure.ts'
import { WarehouseError } from '../../core/errors.ts'
import type { CompiledStatement } from '../../sql/dialect.ts'
import { STEP_FAILED } from '../../sql/bigquery/bigquery-script.ts'

/** The error of a finished BigQuery job (`status.errorResult`, `status.errors`). */
export interface JobError {
  readonly reason?: string
  readonly message?: string
  readonly location?: string
}

/**
 * Maps a failed job to a dimsync error. A merge script re-raises its failure as `dimsync step "<label>": <msg>`;
 * the label picks the failing statement, so the error carries its SQL. dimsync's own checks become
 * BatchRejectedError / MassDeleteRefusedError (nothing was written); anything else is a WarehouseError naming
 * the job and the step. Transient reasons (backendError, rateLimitExceeded, internalError, concurrent updates)
 * are marked retryable.
 */
export function jobFailure(
  jobId: string,
  error: JobError,
  statements: readonly CompiledStatement[],
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
  const statement = statements.find((s) => s.label === label)
  const failure = new WarehouseError(label, statement?.sql ?? '', {
    cause: new Error(`BigQuery job ${jobId} failed${error.reason ? ` (${error.reason})` : ''}: ${message}`),
  })
  if (isTransient(error)) Object.defineProperty(failure, 'retryable', { value: true })
  return failure
}

function isTransient(error: JobError): boolean {
  const reason = error.reason ?? ''
  return (
    ['backendError', 'rateLimitExceeded', 'internalError', 'jobBackendError'].includes(reason) ||
    /concurrent update|could not serialize access/i.test(error.message ?? '')
  )
}
