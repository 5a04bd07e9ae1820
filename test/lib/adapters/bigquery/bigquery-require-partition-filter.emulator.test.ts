import { describe, expect, it } from 'vitest'
/*
 * BigQuery refuses a statement that reads a table with require_partition_filter without a filter on its
 * partitioning column that can prune. The dimension is partitioned by valid_to; dimsync's statements filter it to
 * the open versions wherever they can, so a table whose merges never read closed versions merges as before; one
 * whose merge must (type 1, 3 and 6 overwrites, the late path, mirrors, bitemporal tables) is refused before
 * anything runs, naming the statements and the way out.
 */
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { DimsyncError } from '../../../../lib/core/errors.ts'
import type { TableSpec } from '../../../../lib/core/table-spec.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { emulatorPerTest } from '../../../support/bigquery-emulator/emulator-per-test.ts'
import type { Value } from '../../../support/staged-batches.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'
const LOCATION = 'EU'
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'tier', type: 'VARCHAR' },
]

const bq = emulatorPerTest({ project: PROJECT, dataset: DATASET, location: LOCATION })

const warehouse = () =>
  new BigQueryWarehouse({
    project: PROJECT,
    location: LOCATION,
    ...bq.emulator.clientOptions(),
    pollIntervalMs: 5,
    retryDelayMs: 1,
  })

let n = 0
async function merge(table: TableSpec, rows: readonly Record<string, Value>[], at: string) {
  const batchId = await bq.batches.stage(table.name, COLUMNS, rows, {
    extractedAt: at,
    batchId: `${at.replace(/[-:.]/g, '')}-b${++n}`,
  })
  return mergeBatch(
    { warehouse: warehouse(), staging: bq.batches },
    { table, schema: DATASET, batchId, now: new Date(at), allowMassDelete: true },
  )
}

const versions = (table: TableSpec) =>
  (bq.emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: table.target }) ?? [])
    .map((r) => `${r.customer_id} ${r.name} ${r.tier} ${r.valid_to === null ? 'open' : 'closed'}`)
    .sort()

const requireFilter = (table: TableSpec) =>
  bq.emulator.query(
    PROJECT,
    `ALTER TABLE history.${table.target} SET OPTIONS (require_partition_filter = TRUE)`,
    {
      location: LOCATION,
    },
  )

describe('a dimension with require_partition_filter (BigQuery refuses reads without a partition filter)', () => {
  it('all tracked columns: every merge statement filters valid_to, so later batches (changes, new keys, deletes) merge', async () => {
    const table = tableSpec({ deletes: 'invalidate' })
    await merge(
      table,
      [
        { customer_id: 1, name: 'Ana', tier: 'a' },
        { customer_id: 2, name: 'Bo', tier: 'a' },
      ],
      '2024-03-10T00:00:00.000Z',
    )
    await requireFilter(table)
    const later = await merge(
      table,
      [
        { customer_id: 1, name: 'Ana B', tier: 'b' },
        { customer_id: 3, name: 'Cy', tier: 'a' },
      ],
      '2024-03-11T00:00:00.000Z',
    )
    expect(later.status).toBe('merged')
    expect(later.keys).toEqual({ newKeys: 1, changedKeys: 1, deletedKeys: 1 })
    expect(versions(table)).toEqual(['1 Ana B b open', '1 Ana a closed', '2 Bo a closed', '3 Cy a open'])
    // And the emulator does refuse an unfiltered read of it, as BigQuery would.
    await expect(
      bq.emulator.query(PROJECT, `SELECT COUNT(*) AS n FROM history.${table.target}`, { location: LOCATION }),
    ).rejects.toThrow(
      "Cannot query over table 'history.dim_customer' without a filter over column(s) 'valid_to' that can be used for partition elimination",
    )
  })

  it('type 1 columns: overwriting every version of a key reads closed versions, so dimsync refuses before merging, naming the statement and the way out', async () => {
    const table = tableSpec({ deletes: 'invalidate', tracked: { kind: 'list', columns: ['name'] } })
    await merge(table, [{ customer_id: 1, name: 'Ana', tier: 'a' }], '2024-03-10T00:00:00.000Z')
    await merge(table, [{ customer_id: 1, name: 'Ana B', tier: 'a' }], '2024-03-10T12:00:00.000Z')
    await requireFilter(table)
    const before = versions(table)
    const jobsBefore = bq.emulator.jobs.list(PROJECT).length
    const error = await merge(
      table,
      [{ customer_id: 1, name: 'Ana B', tier: 'b' }],
      '2024-03-11T00:00:00.000Z',
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DimsyncError)
    expect((error as DimsyncError).retryable).toBe(false)
    expect((error as DimsyncError).message).toBe(
      'table customers: dimension acme-dw.history.dim_customer has require_partition_filter set, and these merge ' +
        'statements read closed versions, which BigQuery refuses without a filter on valid_to: type 1: keep those ' +
        'with older versions; overwrite type 1 columns; nothing was merged. Remove the option (ALTER TABLE `acme-dw`.`history`.`dim_customer` SET ' +
        'OPTIONS (require_partition_filter = FALSE)); queries of the current versions can read the _current view, ' +
        'which filters valid_to',
    )
    expect(versions(table)).toEqual(before)
    // A plan reports the same refusal as a warning.
    const planned = await mergeBatch(
      { warehouse: warehouse(), staging: bq.batches },
      {
        table,
        schema: DATASET,
        batchId: await bq.batches.stage(table.name, COLUMNS, [{ customer_id: 1, name: 'Ana B', tier: 'c' }], {
          extractedAt: '2024-03-12T00:00:00.000Z',
          batchId: '20240312T000000000Z-plan',
        }),
        now: new Date('2024-03-12T00:00:00.000Z'),
        dryRun: true,
      },
    )
    expect(planned.warnings).toEqual([(error as DimsyncError).message])
    expect(planned.reads?.find((r) => r.label === 'overwrite type 1 columns')).toEqual({
      label: 'overwrite type 1 columns',
      notEstimable:
        "BigQuery refuses it: Cannot query over table 'history.dim_customer' without a filter over column(s) " +
        "'valid_to' that can be used for partition elimination",
    })
    expect(versions(table)).toEqual(before)
    expect(
      bq.emulator.jobs
        .list(PROJECT)
        .slice(jobsBefore)
        .some((j) => j.jobId.startsWith('dimsync_merge_')),
    ).toBe(false)
    // Without dimsync's check, BigQuery (the emulator) refuses the statement itself.
    await bq.emulator.query(
      PROJECT,
      `ALTER TABLE history.${table.target} SET OPTIONS (require_partition_filter = FALSE)`,
      {
        location: LOCATION,
      },
    )
    expect(
      (await merge(table, [{ customer_id: 1, name: 'Ana B', tier: 'b' }], '2024-03-11T00:00:00.000Z')).status,
    ).toBe('merged')
    expect(versions(table)).toEqual(['1 Ana B b open', '1 Ana b closed'])
  })
})
