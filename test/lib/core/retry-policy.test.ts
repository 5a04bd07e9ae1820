import { describe, expect, it } from 'vitest'
import { AwsServiceError } from '../../../lib/adapters/aws/aws-errors.ts'
import {
  BatchRejectedError,
  ConfigError,
  DimsyncError,
  LeaseLostError,
  LockHeldError,
  MassDeleteRefusedError,
  SourceError,
  StagingError,
  WarehouseBusyError,
  WarehouseError,
  WatermarkConflictError,
} from '../../../lib/core/errors.ts'
import { RETRY_ERROR_NAMES, reportedErrorName } from '../../../lib/core/retry-policy.ts'

/** One of each error class, as a function throws it. */
const thrown = [
  new DimsyncError('m'),
  new ConfigError('dimsync.yaml', ['tables[0].key: must not be empty']),
  new BatchRejectedError('customers', 'b1', 'm'),
  new MassDeleteRefusedError('customers', 'b1', 'm'),
  new LockHeldError('customers', 'run-1', '2024-01-01T00:00:00Z'),
  new LeaseLostError('customers', 'm'),
  new WatermarkConflictError('customers', 'm'),
  new SourceError('customers', 'm'),
  new StagingError('m'),
  new WarehouseError('merge', 'SELECT 1'),
  new WarehouseBusyError('/data/dw.duckdb', 'm'),
  new AwsServiceError('s3', 'SlowDown', 'm', { retryable: true }),
]

describe('retry policy (the errorTypes the state machine retries, derived from the error classes)', () => {
  it('every error reports the name of its class, which is what the retriers match', () => {
    for (const error of thrown) expect(error.name).toBe(error.constructor.name)
  })

  it('never retries what a retry cannot fix; retries a held lock and transient failures with backoff', () => {
    expect(RETRY_ERROR_NAMES).toEqual({
      neverRetried: ['ConfigError', 'BatchRejectedError', 'MassDeleteRefusedError', 'LeaseLostError'],
      retriedWithBackoff: ['LockHeldError', 'RetryableError'],
    })
  })

  it('a function reports a retryable error as RetryableError, unless it has a retrier of its own', () => {
    const reported = thrown.map((error) => [error.name, reportedErrorName(error)])
    expect(reported.filter(([name, as]) => name !== as)).toEqual([
      ['WarehouseBusyError', 'RetryableError'],
      ['AwsServiceError', 'RetryableError'],
    ])
    expect(reportedErrorName(new SourceError('customers', 'connection dropped', { retryable: true }))).toBe(
      'RetryableError',
    )
    const retried = new Set(RETRY_ERROR_NAMES.retriedWithBackoff)
    const neverRetried = new Set(RETRY_ERROR_NAMES.neverRetried)
    for (const error of thrown) {
      const as = reportedErrorName(error)
      // A retryable error is always caught by the backoff retrier, never by the give-up one.
      if (error.retryable) expect(retried.has(as) && !neverRetried.has(as), error.name).toBe(true)
    }
  })
})
