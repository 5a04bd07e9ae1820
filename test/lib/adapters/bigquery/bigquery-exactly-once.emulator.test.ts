import { describe, expect, it } from 'vitest'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { jobId } from '../../../../lib/adapters/warehouse/bigquery-job-ids.ts'
import type { TableSpec } from '../../../../lib/core/table-spec.ts'
import { createBigQueryDialect } from '../../../../lib/sql/bigquery/bigquery-dialect.ts'
import { renderLedgerOnceCheck } from '../../../../lib/sql/render-committed-batch.ts'
import { stagingTableName } from '../../../../lib/sql/render-merge-script.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { emulatorPerTest } from '../../../support/bigquery-emulator/emulator-per-test.ts'
import type { StatementInfo } from '../../../support/bigquery-emulator/script-interpreter.ts'
import { CAPTURE_COLUMNS, captureTable } from '../../../support/history-arbitraries.ts'
import type { Value } from '../../../support/staged-batches.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/*
 * A batch is committed exactly once, and known to be: a transient failure at a statement after COMMIT (the DROP of
 * the staging table, the counts query) is retried, and the retry finds the batch in the ledger. It ends as a
 * success with the counts the merge recorded inside its transaction: never merged again, never refused as out of
 * order against itself, never recorded twice.
 */

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'
const LOCATION = 'EU'
const LEDGER = { projectId: PROJECT, datasetId: DATASET, tableId: '_dimsync_batches' }
const BACKEND_ERROR = {
  reason: 'backendError',
  message: 'Error encountered during execution. Retrying may solve the problem.',
}

const bq = emulatorPerTest({ project: PROJECT, dataset: DATASET, location: LOCATION })

const warehouse = () =>
  new BigQueryWarehouse({
    project: PROJECT,
    location: LOCATION,
    ...bq.emulator.clientOptions(),
    pollIntervalMs: 5,
    retryDelayMs: 1,
  })

const merge = (w: BigQueryWarehouse, table: TableSpec, batchId: string) =>
  mergeBatch(
    { warehouse: w, staging: bq.batches },
    { table, schema: DATASET, batchId, now: new Date('2030-03-10T14:31:00Z') },
  )

const dimensionRows = (table: TableSpec) =>
  bq.emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: table.target }) ?? []
const ledgerRows = (batchId: string) => (bq.emulator.rows(LEDGER) ?? []).filter((r) => r.batch_id === batchId)
const dropOf = (stage: string) => (s: StatementInfo) =>
  s.text.startsWith('DROP TABLE') && s.text.includes(stage) && s.jobId.startsWith('dimsync_merge_')
const countsQuery = (s: StatementInfo) =>
  s.jobId.startsWith('dimsync_merge_') && /^SELECT b\.events/.test(s.text)

const SNAPSHOT = tableSpec({ deletes: 'invalidate' })
const SNAPSHOT_COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
]

async function snapshots(): Promise<string> {
  const first = await bq.batches.stage(
    SNAPSHOT.name,
    SNAPSHOT_COLUMNS,
    [
      { customer_id: 1, name: 'Ana' },
      { customer_id: 2, name: 'Bruno' },
    ],
    { extractedAt: '2030-03-01T00:00:00.000Z', batchId: '20300301T000000.000Z-aaaaaa' },
  )
  expect((await merge(warehouse(), SNAPSHOT, first)).status).toBe('merged')
  return bq.batches.stage(
    SNAPSHOT.name,
    SNAPSHOT_COLUMNS,
    [
      { customer_id: 1, name: 'Ana B.' },
      { customer_id: 3, name: 'Carla' },
    ],
    { extractedAt: '2030-03-10T00:00:00.000Z', batchId: '20300310T000000.000Z-bbbbbb' },
  )
}

const snapshotVersions = () =>
  dimensionRows(SNAPSHOT).map((r) => [r.customer_id, r.name, r.valid_to === null ? 'open' : r.valid_to])
const SECOND_SNAPSHOT_VERSIONS = [
  ['1', 'Ana', '2030-03-10 00:00:00+00'],
  ['2', 'Bruno', '2030-03-10 00:00:00+00'],
  ['1', 'Ana B.', 'open'],
  ['3', 'Carla', 'open'],
]
// Ana changed, Carla new, Bruno deleted.
const SECOND_SNAPSHOT_COUNTS = {
  events: 3,
  insertedVersions: 2,
  closedVersions: 2,
  deletedKeys: 1,
  unchangedEvents: 0,
  lateKeys: 0,
}

describe('a batch committed exactly once on BigQuery, whatever fails after COMMIT', () => {
  it('snapshot table, the DROP of the staging table fails transiently: success with the committed counts, not "out of order"', async () => {
    const second = await snapshots()
    bq.emulator.faults.failStatement(dropOf(stagingTableName(SNAPSHOT.target, second)), BACKEND_ERROR)
    const result = await merge(warehouse(), SNAPSHOT, second)
    expect(result.status).toBe('merged')
    expect(result.counts).toEqual(SECOND_SNAPSHOT_COUNTS)
    expect(ledgerRows(second)).toHaveLength(1)
    expect(snapshotVersions()).toEqual(SECOND_SNAPSHOT_VERSIONS)
    // The retry dropped the staging table the first attempt could not.
    expect(
      bq.emulator.store.getTable({ ...LEDGER, tableId: stagingTableName(SNAPSHOT.target, second) }),
    ).toBeUndefined()
  })

  it('snapshot table, the counts query fails transiently: success with the committed counts, not "Not found: Table …_dimsync_stage_…"', async () => {
    const second = await snapshots()
    bq.emulator.faults.failStatement(countsQuery, BACKEND_ERROR)
    const result = await merge(warehouse(), SNAPSHOT, second)
    expect(result.status).toBe('merged')
    expect(result.counts).toEqual(SECOND_SNAPSHOT_COUNTS)
    expect(ledgerRows(second)).toHaveLength(1)
    expect(snapshotVersions()).toEqual(SECOND_SNAPSHOT_VERSIONS)
    // Two merge jobs: the one that committed, and the retry that found the batch in the ledger.
    expect(
      bq.emulator.jobs.get(PROJECT, jobId('merge', SNAPSHOT.target, second, { attempt: 2 }))?.state,
    ).toBe('DONE')
  })

  it('change-time delta table, the DROP fails transiently: the batch is merged and recorded once', async () => {
    const table = captureTable('invalidate', null)
    const row = (key: number, day: string, region: string): Record<string, Value> => ({
      customer_id: key,
      region,
      tier: 'gold',
      changed_at: `2030-03-${day}T00:00:00.000Z`,
      deleted: false,
    })
    const first = await bq.batches.stage(table.name, CAPTURE_COLUMNS, [row(1, '01', 'north')], {
      extractedAt: '2030-03-02T00:00:00.000Z',
      mode: 'incremental',
      batchId: '20300302T000000.000Z-cccccc',
    })
    expect((await merge(warehouse(), table, first)).status).toBe('merged')
    const second = await bq.batches.stage(
      table.name,
      CAPTURE_COLUMNS,
      [row(1, '05', 'south'), row(2, '06', 'east')],
      {
        extractedAt: '2030-03-07T00:00:00.000Z',
        mode: 'incremental',
        batchId: '20300307T000000.000Z-dddddd',
      },
    )
    bq.emulator.faults.failStatement(dropOf(stagingTableName(table.target, second)), BACKEND_ERROR)
    const result = await merge(warehouse(), table, second)
    expect(result.status).toBe('merged')
    expect(result.counts).toEqual({
      events: 2,
      insertedVersions: 2,
      closedVersions: 1,
      deletedKeys: 0,
      unchangedEvents: 0,
      lateKeys: 0,
    })
    expect(ledgerRows(second)).toHaveLength(1)
    expect(dimensionRows(table).map((r) => [r.customer_id, r.region])).toEqual([
      ['1', 'north'],
      ['1', 'south'],
      ['2', 'east'],
    ])
  })

  it('the ledger refuses a second row for a batch: the statement inside the merge’s transaction fails on a second one', async () => {
    const second = await snapshots()
    // A concurrent merge of the same batch committed its row while this one ran (BigQuery does not enforce the
    // ledger's primary key): the row this merge writes is the batch's second.
    const d = createBigQueryDialect({ project: PROJECT })
    const batches = { schema: DATASET, name: '_dimsync_batches' }
    const check = renderLedgerOnceCheck(d, batches, SNAPSHOT.target, second)
    const copyFirst =
      `INSERT INTO ${d.table(batches)} (target, table_name, batch_id, extracted_at, mode, applied_at)\n` +
      `SELECT target, table_name, '${second}', extracted_at, mode, applied_at FROM ${d.table(batches)}\n` +
      `WHERE batch_id <> '${second}'`
    await bq.emulator.query(PROJECT, copyFirst, { location: LOCATION })
    await bq.emulator.query(PROJECT, check.sql, { location: LOCATION }) // one row: accepted
    await bq.emulator.query(PROJECT, copyFirst, { location: LOCATION })
    await expect(bq.emulator.query(PROJECT, check.sql, { location: LOCATION })).rejects.toThrow(
      `batch ${second} of ${SNAPSHOT.target} would be recorded 2 times in the batch ledger`,
    )
  })
})

describe('a snapshot delivered twice', () => {
  it('is already applied under its second batch id, and leaves no staging table behind', async () => {
    const second = await snapshots()
    expect((await merge(warehouse(), SNAPSHOT, second)).status).toBe('merged')
    // A start delivered twice extracts the same rows at the same time under another batch id.
    const again = await bq.batches.stage(
      SNAPSHOT.name,
      SNAPSHOT_COLUMNS,
      [
        { customer_id: 1, name: 'Ana B.' },
        { customer_id: 3, name: 'Carla' },
      ],
      { extractedAt: '2030-03-10T00:00:00.000Z', batchId: '20300310T000000.000Z-cccccc' },
    )
    const result = await merge(warehouse(), SNAPSHOT, again)
    expect(result).toMatchObject({ status: 'already-applied', sameAs: second })
    expect(snapshotVersions()).toEqual(SECOND_SNAPSHOT_VERSIONS)
    expect(ledgerRows(again)).toEqual([])
    const stagingTables = bq.emulator.store
      .listTables(PROJECT, DATASET)
      .map((t) => t.ref.tableId)
      .filter((name) => name.startsWith('_dimsync_stage_'))
    expect(stagingTables).toEqual([])
  })
})
