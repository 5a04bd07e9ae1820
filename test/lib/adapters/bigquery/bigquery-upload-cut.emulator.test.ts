import { PassThroughClient } from 'google-auth-library'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'
import { ZetaSqlService } from '../../../support/bigquery-emulator/zetasql-service.ts'
import { FaultProxy } from '../../../support/faults/fault-proxy.ts'
import { FaultSchedule, type FaultKind } from '../../../support/faults/fault-schedule.ts'
import { TestBatches } from '../../../support/staged-batches.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

/**
 * An upload whose connection is cut (the request never arrived, or arrived and its answer was lost). Found by the
 * chaos test (test/infra/chaos.test.ts, seed 2): the client library sends a request that got no response again
 * by itself (its noResponseRetries, which `maxRetries: 0` does not turn off), with the part's stream already
 * read, so the resent upload never ended and the merge waited out the upload timeout (5 minutes by default)
 * before its own retry reopened the part.
 */
const UPLOAD = 'bigquery jobs.insert(upload)'
const UPLOAD_TIMEOUT_MS = 30_000

let zeta: ZetaSqlService
let batches: TestBatches
beforeAll(async () => {
  zeta = await ZetaSqlService.start()
  batches = await TestBatches.create()
})
afterAll(async () => {
  await batches.dispose()
  await zeta.stop()
})

describe('an upload whose connection is cut', () => {
  for (const kind of ['drop', 'timeout'] as const satisfies readonly FaultKind[]) {
    it(`(${kind}) is sent again by dimsync with the part reopened at once, not after the upload timeout`, async () => {
      const emulator = await BigQueryEmulator.start({ zetaSql: zeta })
      emulator.createDataset('acme-dw', 'history', { location: 'EU' })
      const firstUpload = (call: string, n: number) => (call === UPLOAD && n === 1 ? [kind] : [])
      const schedule = new FaultSchedule({ seed: 1, rate: 1, policy: firstUpload })
      const proxy = await FaultProxy.start('bigquery', emulator.url, schedule)
      try {
        const table = tableSpec({ deletes: 'invalidate' })
        const batchId = '20240310T143000.000Z-aaaaaa'
        const columns = [
          { name: 'customer_id', type: 'BIGINT' },
          { name: 'name', type: 'VARCHAR' },
        ]
        await batches.stage(table.name, columns, [{ customer_id: 1, name: 'Ana' }], {
          extractedAt: '2024-03-10T14:30:00.000Z',
          batchId,
        })
        const warehouse = new BigQueryWarehouse({
          project: 'acme-dw',
          location: 'EU',
          apiEndpoint: proxy.url,
          authClient: new PassThroughClient(),
          pollIntervalMs: 5,
          retryDelayMs: 1,
          uploadTimeoutMs: UPLOAD_TIMEOUT_MS,
        })
        const started = Date.now()
        const merged = await mergeBatch(
          { warehouse, staging: batches },
          { table, schema: 'history', batchId, now: new Date('2024-03-10T14:31:00Z') },
        )
        expect(merged.status).toBe('merged')
        expect(Date.now() - started).toBeLessThan(UPLOAD_TIMEOUT_MS)
        // The cut upload, then dimsync's own retry: the client sent nothing by itself.
        expect(proxy.calls.filter((c) => c.call === UPLOAD).map((c) => c.kind)).toEqual([kind, 'pass'])
        expect(
          emulator.rows({ projectId: 'acme-dw', datasetId: 'history', tableId: table.target }),
        ).toHaveLength(1)
      } finally {
        await proxy.stop()
        await emulator.stop()
      }
    }, 120_000)
  }
})
