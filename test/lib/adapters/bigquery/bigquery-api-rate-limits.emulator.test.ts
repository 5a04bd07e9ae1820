import { describe, expect, it } from 'vitest'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { WarehouseError } from '../../../../lib/core/errors.ts'
import { reportedErrorName } from '../../../../lib/core/retry-policy.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { emulatorPerTest } from '../../../support/bigquery-emulator/emulator-per-test.ts'
import type { RequestInfo } from '../../../support/bigquery-emulator/faults.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

/**
 * BigQuery answers a short-term rate limit on any API call with 403 `rateLimitExceeded`, which the client library
 * does not retry (it retries by status: 429 and 5xx). Found by the chaos test (test/infra/chaos.test.ts, seed 1):
 * such an answer to reading a table's schema, a dataset or a job ended the merge as a WarehouseError the state
 * machine never retries, so the load failed and waited for the next schedule.
 */
const PROJECT = 'acme-dw'
const DATASET = 'history'
const LOCATION = 'EU'
const table = tableSpec({ deletes: 'invalidate' })
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
]
const RATE_LIMITED = {
  reason: 'rateLimitExceeded',
  message:
    'Exceeded rate limits: too many api requests per user per method for this user_method. For more information, see https://cloud.google.com/bigquery/docs/troubleshoot-quotas',
}

const bq = emulatorPerTest({ project: PROJECT, dataset: DATASET, location: LOCATION })

const warehouse = () =>
  new BigQueryWarehouse({
    project: PROJECT,
    location: LOCATION,
    ...bq.emulator.clientOptions(),
    pollIntervalMs: 5,
    retryDelayMs: 1,
    // One attempt per call: the answer's classification (retryable or not) reaches the merge's caller, as it
    // does when a call's attempts run out.
    maxAttempts: 1,
  })

async function mergeOnce(batchId: string) {
  await bq.batches.stage(table.name, COLUMNS, [{ customer_id: 1, name: 'Ana' }], {
    extractedAt: '2024-03-10T14:30:00.000Z',
    batchId,
  })
  return mergeBatch(
    { warehouse: warehouse(), staging: bq.batches },
    { table, schema: DATASET, batchId, now: new Date('2024-03-10T14:31:00Z') },
  )
}

describe('a BigQuery API call answered rateLimitExceeded (403) is transient', () => {
  const calls: readonly [string, (r: RequestInfo) => boolean][] = [
    [
      'reading the dimension’s schema',
      (r) => r.method === 'GET' && r.path.endsWith(`/tables/${table.target}`),
    ],
    ['checking the dataset', (r) => r.method === 'GET' && r.path.endsWith(`/datasets/${DATASET}`)],
    ['reading a job', (r) => r.method === 'GET' && /\/jobs\/dimsync_/.test(r.path)],
    [
      'reading the ledger (a query)',
      (r) =>
        r.method === 'POST' &&
        /\/jobs$/.test(r.path) &&
        JSON.stringify(bq.emulator.requests.at(-1)?.json ?? {}).includes("SELECT 'applied' AS fact"),
    ],
    [
      'recording the column types',
      (r) =>
        r.method === 'POST' &&
        /\/jobs$/.test(r.path) &&
        // The request being served is the last one recorded (its body is not part of RequestInfo).
        JSON.stringify(bq.emulator.requests.at(-1)?.json ?? {}).includes(
          'INSERT INTO `acme-dw`.`history`.`_dimsync_columns`',
        ),
    ],
  ]
  for (const [what, match] of calls) {
    it(`${what}: the merge fails as RetryableError (the state machine retries it), and its retry merges`, async () => {
      bq.emulator.faults.failRequest(match, 403, RATE_LIMITED)
      const batchId = '20240310T143000.000Z-aaaaaa'
      const error = await mergeOnce(batchId).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(WarehouseError)
      expect((error as Error).message).toContain('Exceeded rate limits')
      expect(reportedErrorName(error as WarehouseError)).toBe('RetryableError')
      expect((await mergeOnce(batchId)).status).toBe('merged')
    })
  }

  it('a permission refused (403 accessDenied) stays permanent', async () => {
    bq.emulator.faults.failRequest(
      (r) => r.method === 'GET' && r.path.endsWith(`/tables/${table.target}`),
      403,
      {
        reason: 'accessDenied',
        message: 'Access Denied: Table acme-dw:history.dim_customer: Permission bigquery.tables.get denied',
      },
    )
    const error = await mergeOnce('20240310T143000.000Z-bbbbbb').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WarehouseError)
    expect(reportedErrorName(error as WarehouseError)).toBe('WarehouseError')
  })
})
