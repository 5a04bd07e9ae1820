import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { readdirSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { S3StagingStore } from '../../../../lib/adapters/staging/s3-staging-store.ts'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { startS3rver, type S3rverHandle } from '../../../support/aws/s3rver.ts'
import { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/**
 * The BigQuery merge of a batch staged on S3 holds only the load groups in flight on local disk, not the whole
 * batch: twelve parts, loaded in groups of two, two jobs at once. Whenever a load job's upload reaches BigQuery,
 * at most 2 groups × 2 parts are in the staging store's scratch folder (the function's /tmp); before, all twelve
 * were downloaded before the first job was submitted. The merge still proves the load complete (row count).
 */
const PROJECT = 'acme-dw'
const DATASET = 'history'
const PARTS = 12
const ROWS_PER_PART = 50
const PARTS_PER_GROUP = 2
const CONCURRENCY = 2
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
]

let s3: S3rverHandle
let emulator: BigQueryEmulator
let scratchRoot: string

beforeAll(async () => {
  s3 = await startS3rver()
  emulator = await BigQueryEmulator.start()
  emulator.createDataset(PROJECT, DATASET, { location: 'EU' })
  scratchRoot = await mkdtemp(join(tmpdir(), 'dimsync-load-on-demand-'))
})
afterAll(async () => {
  await emulator?.stop()
  await s3?.stop()
  if (scratchRoot) await rm(scratchRoot, { recursive: true, force: true })
})

/**
 * Every file below `dir` (any depth), with its size. The loader removes files on other threads meanwhile: one gone
 * by the time it is looked at is not counted.
 */
function filesBelow(dir: string): { name: string; bytes: number }[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .flatMap((entry) => {
      try {
        return [{ name: entry.name, bytes: statSync(join(entry.parentPath, entry.name)).size }]
      } catch {
        return []
      }
    })
}

/** Files in this process's load-group scratch folders (`groupFile`), which live in the system temp folder. */
function loadGroupFiles(before: ReadonlySet<string>): { name: string; bytes: number }[] {
  return readdirSync(tmpdir())
    .filter((name) => name.startsWith('dimsync-load-group-') && !before.has(name))
    .flatMap((name) => {
      try {
        return filesBelow(join(tmpdir(), name))
      } catch {
        return [] // removed while listed
      }
    })
}

/** A committed batch b1 of `PARTS` parts on S3 (a fresh bucket), read through `scratchRoot`. */
async function stageBatch() {
  const bucket = await s3.createBucket()
  const staging = new S3StagingStore({ client: s3.client, bucket, prefix: 'staging', scratchRoot })
  const writer = await staging.beginBatch('customers', 'b1')
  const duck = await DuckDBInstance.create(':memory:')
  const connection = await duck.connect()
  for (let part = 0; part < PARTS; part++) {
    const path = join(writer.scratchDir, `p${part}.parquet`)
    await connection.run(
      `COPY (SELECT CAST(${part * ROWS_PER_PART} + i AS BIGINT) AS customer_id, 'name ' || (${part * ROWS_PER_PART} + i) AS name
         FROM range(${ROWS_PER_PART}) t(i)) TO '${path}' (FORMAT parquet)`,
    )
    await writer.addPart(path, ROWS_PER_PART)
  }
  connection.closeSync()
  duck.closeSync()
  const manifest = await writer.commit({
    table: 'customers',
    batchId: 'b1',
    extractedAt: '2024-01-01T00:00:00.000Z',
    mode: 'full',
    rowCount: PARTS * ROWS_PER_PART,
    columns: COLUMNS,
    sourceDescription: 'test',
  })
  return { staging, manifest }
}

/** A warehouse on the emulator loading groups of `PARTS_PER_GROUP` parts, `CONCURRENCY` at once. */
function warehouseFor(partBytes: number): BigQueryWarehouse {
  return new BigQueryWarehouse({
    project: PROJECT,
    location: 'EU',
    ...emulator.clientOptions(),
    pollIntervalMs: 20,
    loadGroupBytes: partBytes * PARTS_PER_GROUP,
    loadConcurrency: CONCURRENCY,
  })
}

describe('BigQuery merge of an S3-staged batch fetches parts group by group', () => {
  it(`${PARTS} parts, groups of ${PARTS_PER_GROUP}, ${CONCURRENCY} at once: at most ${PARTS_PER_GROUP * CONCURRENCY} parts local at each upload`, async () => {
    const { staging, manifest } = await stageBatch()
    expect(await readdir(scratchRoot)).toEqual([])
    const partBytes = Math.max(...manifest.parts.map((part) => part.bytes))

    // A rule that never fires: its predicate sees every request, so it looks at the local disk as each upload
    // (one load job) reaches BigQuery.
    const groupDirsBefore = new Set(readdirSync(tmpdir()))
    const atUploads: { parts: number; bytes: number }[] = []
    emulator.faults.failRequest(
      (request) => {
        if (request.path.startsWith('/upload/')) {
          const local = filesBelow(scratchRoot)
          const groups = loadGroupFiles(groupDirsBefore)
          atUploads.push({
            parts: local.filter((file) => file.name.endsWith('.parquet')).length,
            bytes: [...local, ...groups].reduce((sum, file) => sum + file.bytes, 0),
          })
        }
        return false
      },
      500,
      { reason: 'never', message: 'never' },
    )

    const warehouse = warehouseFor(partBytes)
    const table = tableSpec({ name: 'customers', target: 'dim_customer' })
    const result = await mergeBatch(
      { warehouse, staging },
      { table, schema: DATASET, batchId: 'b1', now: new Date('2024-01-02T00:00:00Z') },
    )

    expect(result.status).toBe('merged')
    expect(result.keys?.newKeys).toBe(PARTS * ROWS_PER_PART)
    expect(atUploads).toHaveLength(PARTS / PARTS_PER_GROUP)
    const peakParts = Math.max(...atUploads.map((u) => u.parts))
    console.log(
      `load on demand: ${PARTS} parts of ~${partBytes} B; at the uploads, local part files ${atUploads.map((u) => u.parts).join(',')}; ` +
        `peak local bytes (parts + group files) ${Math.max(...atUploads.map((u) => u.bytes))}`,
    )
    expect(peakParts).toBeGreaterThan(0)
    expect(peakParts).toBeLessThanOrEqual(PARTS_PER_GROUP * CONCURRENCY)
    // Every part downloaded for the merge is removed again.
    expect(filesBelow(scratchRoot)).toEqual([])
    const rows = emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: 'dim_customer' })!
    expect(new Set(rows.map((r) => Number(r.customer_id))).size).toBe(PARTS * ROWS_PER_PART)
  }, 180_000)

  it('an upload answered 503 is retried: the group is fetched again, every row merged, nothing left local', async () => {
    const { staging, manifest } = await stageBatch()
    const uploadsBefore = emulator.requests.filter((r) => r.upload !== undefined).length
    emulator.faults.failRequest((request) => request.path.startsWith('/upload/'), 503, {
      reason: 'backendError',
      message: 'Service Unavailable',
    })
    const warehouse = warehouseFor(Math.max(...manifest.parts.map((part) => part.bytes)))
    const table = tableSpec({ name: 'customers', target: 'dim_customer_retry' })
    const result = await mergeBatch(
      { warehouse, staging },
      { table, schema: DATASET, batchId: 'b1', now: new Date('2024-01-02T00:00:00Z') },
    )
    expect(result.keys?.newKeys).toBe(PARTS * ROWS_PER_PART)
    // Every group once, plus the one answered 503 again.
    const uploads = emulator.requests.filter((r) => r.upload !== undefined).length - uploadsBefore
    expect(uploads).toBe(PARTS / PARTS_PER_GROUP + 1)
    expect(filesBelow(scratchRoot)).toEqual([])
    const rows = emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: 'dim_customer_retry' })!
    expect(new Set(rows.map((r) => Number(r.customer_id))).size).toBe(PARTS * ROWS_PER_PART)
  }, 180_000)
})
