import { PassThroughClient } from 'google-auth-library'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { jobId } from '../../../../lib/adapters/warehouse/bigquery-job-ids.ts'
import { checkFailureMarkers } from '../../../../lib/core/check-failure.ts'
import { BatchRejectedError, WarehouseError } from '../../../../lib/core/errors.ts'
import { stagingTableName } from '../../../../lib/sql/render-merge-script.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { TestBatches } from '../../../support/staged-batches.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'
import { FakeBigQueryServer } from './fake-bigquery-server.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'
const LOCATION = 'europe-west1'
const table = tableSpec({ deletes: 'invalidate' })
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'balance', type: 'DECIMAL(12,2)' },
]

let fake: FakeBigQueryServer
let batches: TestBatches

beforeAll(async () => {
  batches = await TestBatches.create()
})

beforeEach(async () => {
  fake = new FakeBigQueryServer()
  await fake.start()
  fake.resultRows = [
    {
      events: 2,
      inserted_versions: 2,
      closed_versions: 0,
      deleted_keys: 0,
      unchanged_events: 0,
      late_keys: 0,
      new_keys: 2,
      changed_keys: 0,
      deleted_key_changes: 0,
    },
  ]
})
afterEach(async () => {
  await fake.stop()
})
afterAll(async () => {
  await batches.dispose()
})

function warehouse(): BigQueryWarehouse {
  return new BigQueryWarehouse({
    project: PROJECT,
    location: LOCATION,
    apiEndpoint: fake.url,
    authClient: new PassThroughClient(),
    pollIntervalMs: 5,
  })
}

async function stageBatch(batchId: string): Promise<void> {
  await batches.stage(
    table.name,
    COLUMNS,
    [
      { customer_id: 101, name: 'Ana', balance: '1.50' },
      { customer_id: 102, name: 'Bruno', balance: '-3.00' },
    ],
    { extractedAt: '2024-03-10T14:30:00.000Z', batchId },
  )
}

const jobInserts = () =>
  fake.requests.filter(
    (r) => r.method === 'POST' && /\/jobs$/.test(r.path) && !r.upload && r.json?.configuration,
  )
const uploads = () => fake.requests.filter((r) => r.upload !== undefined)

describe('BigQueryWarehouse against a local FAKE BigQuery endpoint', () => {
  it('makes no network call when built (auth client injected, nothing at import or construction)', async () => {
    warehouse()
    await new Promise((r) => setTimeout(r, 20))
    expect(fake.requests).toEqual([])
  })

  it('fake: a merge creates the staging table with an expiration, loads each Parquet part, and runs one script job', async () => {
    const batchId = '20240310T143000.000Z-aaaaaa'
    await stageBatch(batchId)
    const result = await mergeBatch(
      { warehouse: warehouse(), staging: batches },
      { table, schema: DATASET, batchId, now: new Date('2024-03-10T14:31:00Z') },
    )
    expect(result.status).toBe('merged')
    expect(result.counts).toMatchObject({ events: 2, insertedVersions: 2 })
    expect(result.keys).toEqual({ newKeys: 2, changedKeys: 0, deletedKeys: 0 })

    // Staging table: created with the mapped schema, a source-type description per column and an expiration.
    const stage = stagingTableName(table.target, batchId)
    const created = fake.tables.get(`${DATASET}.${stage}`) as {
      schema: { fields: { name: string; type: string; description: string }[] }
      expirationTime: string
    }
    expect(created.schema.fields.map((f) => [f.name, f.type])).toEqual([
      ['customer_id', 'INT64'],
      ['name', 'STRING'],
      ['balance', 'NUMERIC'],
    ])
    expect(created.schema.fields[2]!.description).toBe('dimsync source type: DECIMAL(12,2)')
    expect(Number(created.expirationTime)).toBeGreaterThan(Date.now() + 6 * 86_400_000)

    // Load job: multipart upload of the Parquet file with a deterministic id, labels and the location.
    const [upload] = uploads()
    expect(upload!.query.get('uploadType')).toBe('multipart')
    expect(upload!.upload!.head).toBe('PAR1')
    expect(upload!.upload!.resource).toMatchObject({
      jobReference: {
        projectId: PROJECT,
        jobId: jobId('load', table.target, batchId, { part: 0 }),
        location: LOCATION,
      },
      configuration: {
        labels: { dimsync_table: 'customers', dimsync_batch: '20240310t143000_000z-aaaaaa' },
        load: {
          sourceFormat: 'PARQUET',
          writeDisposition: 'WRITE_APPEND',
          destinationTable: { projectId: PROJECT, datasetId: DATASET, tableId: stage },
        },
      },
    })

    // The merge: one query job, deterministic id, labels, location; the script holds the transaction and ledger row.
    const scripts = jobInserts().filter((r) => (r.json!.configuration as { query?: unknown }).query)
    expect(scripts).toHaveLength(1)
    const job = scripts[0]!.json as {
      jobReference: { jobId: string; location: string }
      configuration: { query: { query: string; useLegacySql: boolean }; labels: Record<string, string> }
    }
    expect(job.jobReference).toMatchObject({
      jobId: jobId('merge', table.target, batchId),
      location: LOCATION,
    })
    expect(job.configuration.labels).toEqual({
      dimsync_table: 'customers',
      dimsync_batch: '20240310t143000_000z-aaaaaa',
    })
    expect(job.configuration.query.useLegacySql).toBe(false)
    const text = job.configuration.query.query
    const begin = text.indexOf('BEGIN TRANSACTION;')
    expect(text.indexOf('CREATE TABLE IF NOT EXISTS')).toBeLessThan(begin)
    expect(text.indexOf('INSERT INTO `acme-dw`.`history`.`_dimsync_batches`')).toBeGreaterThan(begin)
    expect(text.indexOf('COMMIT TRANSACTION;')).toBeGreaterThan(text.indexOf('_dimsync_batches` (target'))
    expect(text).toContain('ROLLBACK TRANSACTION;')

    // Every job call (create, poll, results) names the location.
    const jobCalls = fake.requests.filter((r) => /\/(jobs|queries)\/[^/]+$/.test(r.path))
    expect(jobCalls.length).toBeGreaterThan(0)
    for (const call of jobCalls) expect(call.query.get('location')).toBe(LOCATION)
  })

  it('fake: a retried merge finds the existing load and merge jobs (409 / already done) and does not run them again', async () => {
    const batchId = '20240310T150000.000Z-bbbbbb'
    await stageBatch(batchId)
    const deps = { warehouse: warehouse(), staging: batches }
    const request = { table, schema: DATASET, batchId, now: new Date('2024-03-10T15:01:00Z') }
    await mergeBatch(deps, request)
    const uploadsBefore = uploads().length
    const scriptsBefore = jobInserts().length
    // The Lambda died after the jobs ran but before recording success: the same merge runs again.
    const again = await mergeBatch(deps, request)
    expect(again.status).toBe('merged')
    expect(uploads().length).toBe(uploadsBefore)
    expect(jobInserts().length).toBe(scriptsBefore)
    expect(fake.requests.some((r) => r.path.endsWith(`/jobs/${jobId('merge', table.target, batchId)}`))).toBe(
      true,
    )
  })

  it('fake: a failed statement becomes a WarehouseError naming the step, carrying its SQL and BigQuery’s message', async () => {
    const batchId = '20240310T170000.000Z-dddddd'
    await stageBatch(batchId)
    const w = warehouse()
    // Fail the merge script only: loads run first, so arm the failure once the upload has happened.
    const request = { table, schema: DATASET, batchId, now: new Date() }
    const origInsert = fake.jobs.set.bind(fake.jobs)
    let armed = false
    fake.jobs.set = (key, value) => {
      if (!armed && key.startsWith('dimsync_merge_')) {
        armed = true
        value.error = {
          reason: 'invalidQuery',
          message: 'dimsync step insert new versions: Query error: Column name is ambiguous at [12:3]',
        }
      }
      return origInsert(key, value)
    }
    const error = await mergeBatch({ warehouse: w, staging: batches }, request).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WarehouseError)
    const failure = error as WarehouseError
    expect(failure.label).toBe('insert new versions')
    expect(failure.sql).toMatch(/^INSERT INTO `acme-dw`\.`history`\.`dim_customer`/)
    expect(failure.message).toContain('Column name is ambiguous')
    expect(failure.message).toContain(jobId('merge', table.target, batchId))
    expect(failure.retryable).toBe(false)
  })

  it('fake: a dimsync check failing inside the script is a BatchRejectedError naming the table and batch', async () => {
    const batchId = '20240310T180000.000Z-eeeeee'
    await stageBatch(batchId)
    const origInsert = fake.jobs.set.bind(fake.jobs)
    fake.jobs.set = (key, value) => {
      if (key.startsWith('dimsync_merge_')) {
        const { open, close } = checkFailureMarkers({ kind: 'null-key', table: 'customers', batchId })
        value.error = {
          reason: 'invalidQuery',
          message: `dimsync step check NULL keys: ${open}table customers: batch ${batchId} has 3 rows with a NULL key (customer_id); nothing was written${close} at [12:3]`,
        }
      }
      return origInsert(key, value)
    }
    const error = await mergeBatch(
      { warehouse: warehouse(), staging: batches },
      { table, schema: DATASET, batchId, now: new Date() },
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BatchRejectedError)
    expect((error as Error).message).toBe(
      `table customers: batch ${batchId} has 3 rows with a NULL key (customer_id); nothing was written`,
    )
  })

  it('fake: plan (dry run) reports the bytes BigQuery estimates and creates no merge job', async () => {
    const batchId = '20240310T190000.000Z-ffffff'
    await stageBatch(batchId)
    const result = await mergeBatch(
      { warehouse: warehouse(), staging: batches },
      { table, schema: DATASET, batchId, now: new Date(), dryRun: true },
    )
    expect(result.status).toBe('dry-run')
    expect(result.bytesProcessed).toBe(123_456_789)
    const dry = jobInserts().filter((r) => (r.json!.configuration as { dryRun?: boolean }).dryRun)
    expect(dry).toHaveLength(1)
    expect([...fake.jobs.keys()].some((k) => k.startsWith('dimsync_merge_'))).toBe(false)
  })

  it('fake: describeTable reads back the source types dimsync recorded in column descriptions', async () => {
    fake.tables.set(`${DATASET}.dim_customer`, {
      schema: {
        fields: [
          { name: 'customer_id', type: 'INTEGER', description: 'dimsync source type: INTEGER' },
          { name: 'balance', type: 'NUMERIC', precision: '12', scale: '2' },
          { name: 'seen', type: 'TIMESTAMP' },
        ],
      },
    })
    expect(await warehouse().describeTable({ schema: DATASET, name: 'dim_customer' })).toEqual([
      { name: 'customer_id', type: 'INTEGER' },
      { name: 'balance', type: 'DECIMAL(12,2)' },
      { name: 'seen', type: 'TIMESTAMP WITH TIME ZONE' },
    ])
    expect(await warehouse().describeTable({ schema: DATASET, name: 'missing' })).toBeUndefined()
  })
})
