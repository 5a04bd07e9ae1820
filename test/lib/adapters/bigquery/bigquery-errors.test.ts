import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { jobFailure } from '../../../../lib/adapters/warehouse/bigquery-errors.ts'
import { backoffDelayMs } from '../../../../lib/adapters/warehouse/bigquery-job-attempts.ts'
import { checkFailureMarkers } from '../../../../lib/core/check-failure.ts'
import { MassDeleteRefusedError, WarehouseError } from '../../../../lib/core/errors.ts'
import { propertySeed } from '../../../support/property-seed.ts'

const STATEMENTS = [{ label: 'insert new versions', sql: 'INSERT INTO t SELECT 1' }]
/** What a merge script's handler raises: the step's label, then BigQuery's @@error.message. */
const raised = (message: string) => ({
  reason: 'invalidQuery',
  message: `dimsync step insert new versions: ${message} at [52:3]`,
})

describe('jobFailure (a failed BigQuery job as a dimsync error)', () => {
  it.each([
    ['Error encountered during execution. Retrying may solve the problem.', 'backendError'],
    [
      'An internal error occurred and the request could not be completed. This is usually caused by a transient issue.',
      'internalError',
    ],
    ['Exceeded rate limits: too many table update operations for this table.', 'rateLimitExceeded'],
    ['Transaction is aborted due to concurrent update against table p.d.t.', 'concurrent update'],
    ['Could not serialize access to table p:d.t due to concurrent update', 'concurrent update'],
  ])(
    'a transient failure inside the script’s handler is retryable, named by its reason: %s',
    (message, reason) => {
      const error = jobFailure('job_1', raised(message), STATEMENTS) as WarehouseError
      expect(error).toBeInstanceOf(WarehouseError)
      expect(error.retryable).toBe(true)
      expect(error.label).toBe('insert new versions')
      expect(error.sql).toBe('INSERT INTO t SELECT 1')
      expect(error.message).toContain(`(${reason})`)
    },
  )

  it.each(['backendError', 'internalError', 'rateLimitExceeded', 'jobBackendError'])(
    'a job failing with reason %s outside a handler is retryable',
    (reason) => {
      expect(jobFailure('job_1', { reason, message: 'whatever the text' }, []).retryable).toBe(true)
    },
  )

  it.each([
    ['accessDenied', 'Access Denied: Table p:d.t: Permission bigquery.tables.updateData denied'],
    ['quotaExceeded', 'Quota exceeded: Your project exceeded quota for imports per table.'],
    ['invalidQuery', 'Unrecognized name: foo at [3:1]'],
  ])('a failure retrying cannot fix is not retryable: %s', (reason, message) => {
    expect(jobFailure('job_1', { reason, message }, STATEMENTS).retryable).toBe(false)
    expect(jobFailure('job_1', raised(message), STATEMENTS).retryable).toBe(false)
  })

  it('a failed check is the batch refused, never retryable', () => {
    const { open, close } = checkFailureMarkers({ kind: 'mass-delete', table: 'customers', batchId: 'b1' })
    const error = jobFailure('job_1', raised(`${open}would delete 2 of 3 keys${close}`), STATEMENTS)
    expect(error).toBeInstanceOf(MassDeleteRefusedError)
    expect(error.retryable).toBe(false)
  })

  it('a failed API call is retryable on 5xx and 429, not on 4xx', () => {
    expect(
      jobFailure('insert', { reason: 'invalid', message: 'Service Unavailable' }, [], 503).retryable,
    ).toBe(true)
    expect(jobFailure('insert', { reason: 'invalid', message: 'Too Many Requests' }, [], 429).retryable).toBe(
      true,
    )
    expect(jobFailure('insert', { reason: 'invalid', message: 'Bad Request' }, [], 400).retryable).toBe(false)
  })
})

describe('backoffDelayMs', () => {
  it('waits between half and all of base · 2^(n-1), at most 32 × base', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (failures, base, random) => {
          const ceiling = base * Math.min(2 ** (failures - 1), 32)
          const delay = backoffDelayMs(failures, base, random)
          expect(delay).toBeGreaterThanOrEqual(ceiling / 2)
          expect(delay).toBeLessThanOrEqual(ceiling)
        },
      ),
      { seed: propertySeed(2), numRuns: 500 },
    )
  })
})
