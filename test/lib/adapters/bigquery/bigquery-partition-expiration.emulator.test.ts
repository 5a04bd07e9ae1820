import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openBigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-credentials.ts'
import {
  BigQueryWarehouse,
  type BigQueryWarehouseOptions,
} from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { DimsyncError, WarehouseError } from '../../../../lib/core/errors.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'
import { ZetaSqlService } from '../../../support/bigquery-emulator/zetasql-service.ts'
import { TestBatches, type Value } from '../../../support/staged-batches.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/*
 * BigQuery deletes the partitions of a table older than its partition expiration. The dimension is partitioned by
 * the month of valid_to, so an expiration deletes closed versions: history silently lost. dimsync refuses to merge
 * into a dimension with one (its own, or the dataset's default, which BigQuery gives the dimension when dimsync
 * creates it), names the setting and the way out, and writes nothing; `allowPartitionExpiration` accepts it.
 * A plan (dry run) warns instead.
 */

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'
const LOCATION = 'EU'
const DAY = 86_400_000
const table = tableSpec({})
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
]
const DIMENSION = { projectId: PROJECT, datasetId: DATASET, tableId: table.target }

let zeta: ZetaSqlService
let emulator: BigQueryEmulator
let batches: TestBatches

beforeAll(async () => {
  zeta = await ZetaSqlService.start()
  batches = await TestBatches.create()
})
afterAll(async () => {
  await batches.dispose()
  await zeta.stop()
})
afterEach(async () => {
  await emulator.stop()
})

async function start(dataset: { defaultPartitionExpirationMs?: number } = {}): Promise<void> {
  emulator = await BigQueryEmulator.start({ zetaSql: zeta })
  emulator.createDataset(PROJECT, DATASET, { location: LOCATION, ...dataset })
}

const warehouse = (options: Partial<BigQueryWarehouseOptions> = {}) =>
  new BigQueryWarehouse({
    project: PROJECT,
    location: LOCATION,
    ...emulator.clientOptions(),
    pollIntervalMs: 5,
    retryDelayMs: 1,
    ...options,
  })

const merge = async (
  w: BigQueryWarehouse,
  rows: readonly Record<string, Value>[],
  at: string,
  options: { dryRun?: boolean } = {},
) => {
  const batchId = await batches.stage(table.name, COLUMNS, rows, {
    extractedAt: at,
    batchId: `${at.replace(/[-:]/g, '')}-${'abcdef'}`,
  })
  return mergeBatch(
    { warehouse: w, staging: batches },
    { table, schema: DATASET, batchId, now: new Date(at), allowMassDelete: true, ...options },
  )
}

describe('partition expiration on BigQuery', () => {
  it('refuses to create a dimension in a dataset whose default partition expiration would delete its closed history, naming the setting and the way out; nothing is written', async () => {
    await start({ defaultPartitionExpirationMs: 90 * DAY })
    const error = await merge(
      warehouse(),
      [{ customer_id: 1, name: 'Ana' }],
      '2024-03-10T00:00:00.000Z',
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DimsyncError)
    expect(error).not.toBeInstanceOf(WarehouseError)
    expect((error as DimsyncError).retryable).toBe(false)
    expect((error as DimsyncError).message).toBe(
      'table customers: dataset acme-dw.history has a default partition expiration of 90 days ' +
        '(defaultPartitionExpirationMs), which BigQuery gives dimension acme-dw.history.dim_customer when dimsync ' +
        'creates it: BigQuery would then delete the closed versions of each month 90 days after it began, ' +
        'silently losing history; nothing was merged. Remove the default (ALTER SCHEMA `acme-dw`.`history` SET ' +
        'OPTIONS (default_partition_expiration_days = NULL)), or set warehouse.allow_partition_expiration: true ' +
        'to accept that BigQuery deletes old versions',
    )
    expect(emulator.store.getTable(DIMENSION)).toBeUndefined()
    expect(emulator.jobs.list(PROJECT).some((j) => j.jobId.startsWith('dimsync_merge_'))).toBe(false)
  })

  it('refuses a later batch once the dimension has a partition expiration of its own; merges again once it is removed', async () => {
    await start()
    const w = warehouse()
    await merge(w, [{ customer_id: 1, name: 'Ana' }], '2024-03-10T00:00:00.000Z')
    await emulator.query(
      PROJECT,
      'ALTER TABLE history.dim_customer SET OPTIONS (partition_expiration_days = 30)',
      { location: LOCATION },
    )
    const before = emulator.rows(DIMENSION)
    const error = await merge(w, [{ customer_id: 1, name: 'Ana B.' }], '2024-03-11T00:00:00.000Z').catch(
      (e: unknown) => e,
    )
    expect((error as DimsyncError).message).toBe(
      'table customers: dimension acme-dw.history.dim_customer has a partition expiration of 30 days ' +
        '(partition_expiration_days): BigQuery would delete the closed versions of each month 30 days after it ' +
        'began, silently losing history; nothing was merged. Remove it (ALTER TABLE ' +
        '`acme-dw`.`history`.`dim_customer` SET OPTIONS (partition_expiration_days = NULL)), or set ' +
        'warehouse.allow_partition_expiration: true to accept that BigQuery deletes old versions',
    )
    expect(emulator.rows(DIMENSION)).toEqual(before)
    await emulator.query(
      PROJECT,
      'ALTER TABLE history.dim_customer SET OPTIONS (partition_expiration_days = NULL)',
      { location: LOCATION },
    )
    expect((await merge(w, [{ customer_id: 1, name: 'Ana B.' }], '2024-03-11T00:00:00.000Z')).status).toBe(
      'merged',
    )
    expect(emulator.rows(DIMENSION)).toHaveLength(2)
  })

  it('merges when the user accepts the expiration (allowPartitionExpiration); a plan warns instead of refusing', async () => {
    await start({ defaultPartitionExpirationMs: 90 * DAY })
    const plan = await merge(warehouse(), [{ customer_id: 1, name: 'Ana' }], '2024-03-10T00:00:00.000Z', {
      dryRun: true,
    })
    expect(plan.status).toBe('dry-run')
    expect(plan.warnings).toEqual([
      expect.stringMatching(
        /^table customers: dataset acme-dw.history has a default partition expiration of 90 days/,
      ),
    ])
    // The warehouse as the config opens it (warehouse.allow_partition_expiration: true).
    const accepting = await openBigQueryWarehouse(
      {
        type: 'bigquery',
        project: PROJECT,
        dataset: DATASET,
        schema: DATASET,
        location: LOCATION,
        allowPartitionExpiration: true,
      },
      { endpoint: emulator.url, extra: { pollIntervalMs: 5 } },
    )
    const merged = await merge(accepting, [{ customer_id: 1, name: 'Ana' }], '2024-03-10T00:00:00.000Z')
    expect(merged.status).toBe('merged')
    expect(emulator.rows(DIMENSION)).toHaveLength(1)
  })
})
