import { describe, expect, it } from 'vitest'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { LeaseLostError } from '../../../../lib/core/errors.ts'
import { FENCE_TABLE, type FenceHolder } from '../../../../lib/sql/render-fence.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { emulatorPerTest } from '../../../support/bigquery-emulator/emulator-per-test.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/*
 * Fencing at the warehouse: a lease holder advances the table's fence (`_dimsync_fences`) to its token before its
 * merge, and the merge script checks it just before COMMIT. Two holders race here: A's lease lapses after its
 * lease check passed and while its merge job is queued; B takes the lease (a higher token) and advances the fence.
 * A's merge cannot commit beside B: it rolls back with LeaseLostError, and B's merge commits.
 */

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'
const LOCATION = 'EU'
const table = tableSpec({ deletes: 'invalidate' })
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
]
const A: FenceHolder = { token: 7, owner: 'run-a' }
const B: FenceHolder = { token: 8, owner: 'run-b' }

const bq = emulatorPerTest({ project: PROJECT, dataset: DATASET, location: LOCATION })

const warehouse = () =>
  new BigQueryWarehouse({
    project: PROJECT,
    location: LOCATION,
    ...bq.emulator.clientOptions(),
    pollIntervalMs: 5,
    retryDelayMs: 1,
  })

const merge = (batchId: string, fence: FenceHolder, beforeCommit?: () => Promise<void>) =>
  mergeBatch(
    { warehouse: warehouse(), staging: bq.batches },
    {
      table,
      schema: DATASET,
      batchId,
      now: new Date('2030-03-10T14:31:00Z'),
      fence,
      ...(beforeCommit ? { beforeCommit } : {}),
    },
  )

const stage = () =>
  bq.batches.stage(
    table.name,
    COLUMNS,
    [
      { customer_id: 1, name: 'Ana' },
      { customer_id: 2, name: 'Bruno' },
    ],
    { extractedAt: '2030-03-01T00:00:00.000Z', batchId: '20300301T000000.000Z-aaaaaa' },
  )

const rows = (tableId: string) => bq.emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId }) ?? []

describe('the lease fence at the warehouse', () => {
  it('two holders race: the holder whose lease lapsed while its job queued cannot commit; the new holder does', async () => {
    const batchId = await stage()
    // A's lease check passes (A advanced the fence to its token); then, before A's script reaches COMMIT, B takes
    // the lease and advances the fence to B's token, as B's merge does first (B's job queues behind A's).
    const bTakesOver = async () => {
      expect(rows(FENCE_TABLE)).toMatchObject([{ target: table.target, token: '7', owner: 'run-a' }])
      await bq.emulator.query(
        PROJECT,
        `UPDATE \`${PROJECT}.${DATASET}.${FENCE_TABLE}\` SET token = ${B.token}, owner = '${B.owner}' WHERE TRUE`,
        { location: LOCATION },
      )
    }
    const lapsed = await merge(batchId, A, bTakesOver).catch((e: unknown) => e)
    expect(lapsed).toBeInstanceOf(LeaseLostError)
    expect((lapsed as LeaseLostError).message).toBe(
      `table customers: lease of run run-a (token 7) was taken over by run run-b (token 8) before this merge ` +
        'committed; it was rolled back, nothing was written',
    )
    expect(rows(table.target)).toEqual([])
    expect(rows('_dimsync_batches')).toEqual([])

    const current = await merge(batchId, B)
    expect(current.status).toBe('merged')
    expect(rows(table.target)).toHaveLength(2)
    expect(rows(FENCE_TABLE)).toMatchObject([{ target: table.target, token: '8', owner: 'run-b' }])
  })

  it('each new lease advances the fence; a lapsed holder advancing late leaves it where it is and is refused', async () => {
    const batchId = await stage()
    expect((await merge(batchId, B)).status).toBe('merged')
    expect(rows(FENCE_TABLE)).toMatchObject([{ token: '8', owner: 'run-b' }])
    const next = await bq.batches.stage(table.name, COLUMNS, [{ customer_id: 1, name: 'Ana B.' }], {
      extractedAt: '2030-03-02T00:00:00.000Z',
      batchId: '20300302T000000.000Z-bbbbbb',
    })
    await expect(merge(next, A)).rejects.toBeInstanceOf(LeaseLostError)
    expect(rows(FENCE_TABLE)).toMatchObject([{ token: '8', owner: 'run-b' }])
    expect(rows('_dimsync_batches').map((r) => r.batch_id)).toEqual([batchId])
    expect((await merge(next, { token: 9, owner: 'run-c' })).status).toBe('merged')
    expect(rows(FENCE_TABLE)).toMatchObject([{ token: '9', owner: 'run-c' }])
  })

  it('a table too wide for one query (a session transaction of several queries): the lapsed holder cannot commit either', async () => {
    // 1,200 columns of 200 characters: the merge is over BigQuery's query length and runs as a session's queries.
    const wideTable = tableSpec({ name: 'wide', target: 'dim_wide' })
    const names = Array.from({ length: 1_199 }, (_, i) =>
      `attribute_${String(i).padStart(5, '0')}`.padEnd(200, '_x'),
    )
    const columns = [
      { name: 'customer_id', type: 'BIGINT' },
      ...names.map((name) => ({ name, type: 'VARCHAR' })),
    ]
    const batchId = await bq.batches.stage(
      wideTable.name,
      columns,
      [1, 2].map((id) => ({ customer_id: id, ...Object.fromEntries(names.map((n) => [n, `v${id}`])) })),
      { extractedAt: '2030-03-01T00:00:00.000Z', batchId: '20300301T000000.000Z-cccccc' },
    )
    const mergeWide = (fence: FenceHolder, beforeCommit?: () => Promise<void>) =>
      mergeBatch(
        { warehouse: warehouse(), staging: bq.batches },
        {
          table: wideTable,
          schema: DATASET,
          batchId,
          now: new Date('2030-03-10T14:31:00Z'),
          fence,
          ...(beforeCommit ? { beforeCommit } : {}),
        },
      )
    const bTakesOver = async () => {
      await bq.emulator.query(
        PROJECT,
        `UPDATE \`${PROJECT}.${DATASET}.${FENCE_TABLE}\` SET token = ${B.token}, owner = '${B.owner}' WHERE TRUE`,
        { location: LOCATION },
      )
    }
    const lapsed = await mergeWide(A, bTakesOver).catch((e: unknown) => e)
    expect(lapsed).toBeInstanceOf(LeaseLostError)
    // The check ran in the session's last query, before its COMMIT.
    const sessionQueries = bq.emulator.requests
      .map(
        (r) =>
          (r.json as { configuration?: { query?: { query?: string; connectionProperties?: unknown } } })
            ?.configuration?.query,
      )
      .filter((q) => q?.connectionProperties !== undefined)
      .map((q) => q!.query!)
    const fenced = sessionQueries.findIndex((q) => q.includes("SET __dimsync_step = 'check the lease fence'"))
    expect(sessionQueries[fenced]).toContain('COMMIT TRANSACTION;')
    expect(sessionQueries.slice(0, fenced).some((q) => q.includes('BEGIN TRANSACTION;'))).toBe(true)
    expect(rows('dim_wide')).toEqual([])
    expect(rows('_dimsync_batches')).toEqual([])
    expect((await mergeWide(B)).status).toBe('merged')
    expect(rows('dim_wide')).toHaveLength(2)
  }, 120_000)
})
