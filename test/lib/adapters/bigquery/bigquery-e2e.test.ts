import { randomBytes } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { TestBatches } from '../../../support/staged-batches.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/**
 * Opt-in end-to-end test against a real BigQuery project (the only skipped test of the suite): set
 * DIMSYNC_BQ_PROJECT (and DIMSYNC_BQ_DATASET, an existing dataset, default `dimsync_e2e`; DIMSYNC_BQ_LOCATION,
 * default `US`) with Application Default Credentials that may create tables and run jobs there. It merges two
 * snapshots and reads the history back; tables it creates are named with a random suffix and dropped after.
 */
const project = process.env.DIMSYNC_BQ_PROJECT
const dataset = process.env.DIMSYNC_BQ_DATASET ?? 'dimsync_e2e'
const location = process.env.DIMSYNC_BQ_LOCATION ?? 'US'

describe.skipIf(project === undefined)('BigQuery end to end (DIMSYNC_BQ_PROJECT set)', () => {
  const suffix = randomBytes(3).toString('hex')
  const table = tableSpec({ target: `dim_customer_${suffix}`, deletes: 'invalidate' })
  const columns = [
    { name: 'customer_id', type: 'BIGINT' },
    { name: 'name', type: 'VARCHAR' },
    { name: 'region', type: 'VARCHAR' },
  ]
  let warehouse: BigQueryWarehouse
  let batches: TestBatches

  afterAll(async () => {
    if (!warehouse) return
    for (const name of [table.target, `${table.target}_current`])
      await warehouse
        .query(`DROP TABLE IF EXISTS \`${project}\`.\`${dataset}\`.\`${name}\``)
        .catch(() => undefined)
    await warehouse
      .query(`DROP VIEW IF EXISTS \`${project}\`.\`${dataset}\`.\`${table.target}_current\``)
      .catch(() => undefined)
    await batches?.dispose()
  })

  it('merges two snapshots into history, idempotently', async () => {
    warehouse = new BigQueryWarehouse({ project: project!, location })
    batches = await TestBatches.create()
    const deps = { warehouse, staging: batches }
    const first = await batches.stage(
      table.name,
      columns,
      [
        { customer_id: 101, name: 'Ana', region: 'South' },
        { customer_id: 102, name: 'Bruno', region: 'North' },
      ],
      { extractedAt: '2024-01-01T09:00:00.000Z', batchId: `e2e-${suffix}-1` },
    )
    await mergeBatch(deps, { table, schema: dataset, batchId: first, now: new Date() })
    const second = await batches.stage(
      table.name,
      columns,
      [{ customer_id: 101, name: 'Ana', region: 'North' }],
      { extractedAt: '2024-03-10T14:30:00.000Z', batchId: `e2e-${suffix}-2` },
    )
    const merged = await mergeBatch(deps, { table, schema: dataset, batchId: second, now: new Date() })
    expect(merged.counts).toMatchObject({ insertedVersions: 1, closedVersions: 2, deletedKeys: 1 })
    const again = await mergeBatch(deps, { table, schema: dataset, batchId: second, now: new Date() })
    expect(again.status).toBe('already-applied')
    const rows = await warehouse.query(
      `SELECT customer_id, region, is_current FROM \`${project}\`.\`${dataset}\`.\`${table.target}\` ORDER BY dimsync_sk`,
    )
    expect(rows).toEqual([
      { customer_id: 101, region: 'South', is_current: false },
      { customer_id: 102, region: 'North', is_current: false },
      { customer_id: 101, region: 'North', is_current: true },
    ])
  })
})
