import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { planLoadGroups } from '../../../../lib/adapters/warehouse/bigquery-load-groups.ts'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/**
 * Load jobs per batch are bounded: consecutive staged parts are combined into one load job (up to a size), and
 * the jobs of a batch run in parallel. Twelve parts of 100 rows in groups of four: three load jobs, every row
 * staged with its values.
 */
const PROJECT = 'acme-dw'
const DATASET = 'history'
const PARTS = 12
const ROWS_PER_PART = 100
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'balance', type: 'DECIMAL(12,2)' },
  { name: 'seen', type: 'TIMESTAMP WITH TIME ZONE' },
]

let dir: string
let partPaths: string[]
let emulator: BigQueryEmulator

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-load-groups-'))
  const duck = await DuckDBInstance.create(':memory:')
  const connection = await duck.connect()
  await connection.run(`SET TimeZone='UTC'`)
  partPaths = []
  for (let part = 0; part < PARTS; part++) {
    const path = join(dir, `part-${String(part).padStart(5, '0')}.parquet`)
    await connection.run(
      `COPY (SELECT CAST(${part * ROWS_PER_PART} + i AS BIGINT) AS customer_id, 'name ' || (${part * ROWS_PER_PART} + i) AS name,
         CAST((${part * ROWS_PER_PART} + i) / 4 AS DECIMAL(12,2)) AS balance,
         TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (${part * ROWS_PER_PART} + i) SECOND AS seen
       FROM range(${ROWS_PER_PART}) t(i)) TO '${path}' (FORMAT parquet)`,
    )
    partPaths.push(path)
  }
  connection.closeSync()
  duck.closeSync()
  emulator = await BigQueryEmulator.start({ minimumJobRunMs: 200 })
  emulator.createDataset(PROJECT, DATASET, { location: 'EU' })
})
afterAll(async () => {
  await emulator?.stop()
  if (dir) await rm(dir, { recursive: true, force: true })
})

describe('planLoadGroups', () => {
  it('packs consecutive parts up to the size; a larger part is a group of its own', () => {
    expect(planLoadGroups([4, 4, 4, 4, 4], 8)).toEqual([[0, 1], [2, 3], [4]])
    expect(planLoadGroups([3, 20, 3, 3], 8)).toEqual([[0], [1], [2, 3]])
    expect(planLoadGroups([], 8)).toEqual([])
  })
})

describe('BigQueryWarehouse.loadBatch groups parts into few load jobs, run in parallel', () => {
  it(`${PARTS} parts in groups of 4: 3 load jobs, uploaded before the first finished, every row staged`, async () => {
    const partBytes = (await stat(partPaths[0]!)).size
    const warehouse = new BigQueryWarehouse({
      project: PROJECT,
      location: 'EU',
      ...emulator.clientOptions(),
      pollIntervalMs: 20,
      loadGroupBytes: partBytes * 4 + partBytes / 2,
      loadConcurrency: 3,
    })
    const table = tableSpec({ name: 'customers', target: 'dim_customer' })
    const stage = { schema: DATASET, name: '_dimsync_stage_dim_customer_b1' }
    await warehouse.loadBatch({
      table,
      batchId: 'b1',
      stage,
      partPaths,
      columns: COLUMNS,
      rowCount: PARTS * ROWS_PER_PART,
    })

    const uploads = emulator.requests
      .map((r, index) => ({ r, index }))
      .filter(({ r }) => r.upload !== undefined)
    expect(uploads).toHaveLength(3)
    const firstJob = uploads[0]!.r.upload!.resource.jobReference.jobId as string
    const lastPollOfFirst = Math.max(
      ...emulator.requests.map((r, index) =>
        r.method === 'GET' && r.path.endsWith(`/jobs/${firstJob}`) ? index : -1,
      ),
    )
    // Sequential loads would upload the next group only after polling the first job to DONE.
    expect(Math.max(...uploads.map((u) => u.index))).toBeLessThan(lastPollOfFirst)

    const rows = emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: stage.name })!
    expect(rows).toHaveLength(PARTS * ROWS_PER_PART)
    const byId = new Map(rows.map((r) => [Number(r.customer_id), r]))
    expect(byId.size).toBe(PARTS * ROWS_PER_PART)
    expect(byId.get(1199)).toMatchObject({ name: 'name 1199', balance: '299.75' })
    expect(byId.get(61)).toEqual({
      customer_id: '61',
      name: 'name 61',
      balance: '15.25',
      seen: '2024-01-01 00:01:01+00',
    })
  }, 120_000)
})

describe('BigQueryWarehouse.loadBatch never uploads Parquet 2.0 encodings', () => {
  // A batch staged for the embedded warehouse (lib/core/staged-parquet.ts), merged into BigQuery after the config
  // changed. The emulator refuses such files: what BigQuery's reader makes of them cannot be checked here.
  it('rewrites a single part staged in them; uploads a single portable part as it is', async () => {
    const duck = await DuckDBInstance.create(':memory:')
    const connection = await duck.connect()
    await connection.run(`SET TimeZone='UTC'`)
    const rows = 3000
    const select = `SELECT CAST(i AS BIGINT) AS customer_id, 'name ' || i AS name, CAST(i / 4 AS DECIMAL(12,2)) AS balance,
         TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) SECOND AS seen FROM range(${rows}) t(i)`
    const parts = { V2: join(dir, 'single-v2.parquet'), V1: join(dir, 'single-v1.parquet') }
    for (const [version, path] of Object.entries(parts))
      await connection.run(`COPY (${select}) TO '${path}' (FORMAT parquet, PARQUET_VERSION ${version})`)
    connection.closeSync()
    duck.closeSync()
    const warehouse = new BigQueryWarehouse({
      project: PROJECT,
      location: 'EU',
      ...emulator.clientOptions(),
      pollIntervalMs: 20,
    })
    for (const [version, path] of Object.entries(parts)) {
      const stage = { schema: DATASET, name: `_dimsync_stage_single_${version}` }
      const before = emulator.requests.length
      await warehouse.loadBatch({
        table: tableSpec({ name: 'customers', target: 'dim_customer' }),
        batchId: `single-${version}`,
        stage,
        partPaths: [path],
        columns: COLUMNS,
        rowCount: rows,
      })
      const loaded = emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: stage.name })!
      expect(loaded, version).toHaveLength(rows)
      expect(
        loaded.find((r) => r.customer_id === '2999'),
        version,
      ).toMatchObject({
        name: 'name 2999',
        balance: '749.75',
        seen: '2024-01-01 00:49:59+00',
      })
      const [upload] = emulator.requests.slice(before).filter((r) => r.upload !== undefined)
      const partBytes = (await stat(path)).size
      if (version === 'V1') expect(upload!.upload!.bytes, 'the part itself').toBe(partBytes)
      else expect(upload!.upload!.bytes, 'a rewritten file').not.toBe(partBytes)
    }
  }, 120_000)
})
