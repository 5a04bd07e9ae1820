import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/**
 * BigQuery's load jobs fill no JSON column from Parquet (the emulator refuses it as BigQuery documents): the
 * staging table holds JSON columns as STRING while the parts load, then one statement parses them. A retried load
 * of the same batch (its merge failed, say) finds them parsed and parses nothing again.
 */
const PROJECT = 'acme-dw'
const DATASET = 'history'
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'doc', type: 'JSON' },
]

let dir: string
let partPath: string
let emulator: BigQueryEmulator

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-json-stage-'))
  partPath = join(dir, 'part-00000.parquet')
  const duck = await DuckDBInstance.create(':memory:')
  const connection = await duck.connect()
  await connection.run(
    `COPY (SELECT * FROM (VALUES (CAST(1 AS BIGINT), CAST('{"a":[1,2.5],"b":"x"}' AS JSON)), (2, NULL)) t(customer_id, doc))
     TO '${partPath}' (FORMAT parquet)`,
  )
  connection.closeSync()
  duck.closeSync()
  emulator = await BigQueryEmulator.start()
  emulator.createDataset(PROJECT, DATASET, { location: 'EU' })
})
afterAll(async () => {
  await emulator?.stop()
  if (dir) await rm(dir, { recursive: true, force: true })
})

describe('BigQueryWarehouse.loadBatch with a JSON column', () => {
  it('stages it as text, parses it once the rows are all there, and a retry parses nothing again', async () => {
    const warehouse = new BigQueryWarehouse({
      project: PROJECT,
      location: 'EU',
      ...emulator.clientOptions(),
      pollIntervalMs: 20,
    })
    const stage = { schema: DATASET, name: '_dimsync_stage_dim_customer_b1' }
    const load = {
      table: tableSpec({ name: 'customers', target: 'dim_customer' }),
      batchId: 'b1',
      stage,
      partPaths: [partPath],
      columns: COLUMNS,
      rowCount: 2,
    }
    const parses = () =>
      emulator.requests.filter((r) => JSON.stringify(r.json ?? {}).includes('PARSE_JSON')).length
    const docField = () =>
      emulator.store
        .getTable({ projectId: PROJECT, datasetId: DATASET, tableId: stage.name })
        ?.columns.find((c) => c.field.name === 'doc')?.field

    await warehouse.loadBatch(load)
    expect(docField()).toMatchObject({ type: 'JSON' })
    expect(parses()).toBe(1)
    const rows = emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: stage.name })!
    expect(rows.map((r) => [Number(r.customer_id), r.doc]).sort()).toEqual([
      [1, '{"a":[1,2.5],"b":"x"}'],
      [2, null],
    ])

    await warehouse.loadBatch(load)
    expect(parses()).toBe(1)
    expect(docField()).toMatchObject({ type: 'JSON' })
    expect(emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: stage.name })).toHaveLength(2)
  })
})
