import { BigQuery } from '@google-cloud/bigquery'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  BigQueryWarehouse,
  type BigQueryWarehouseOptions,
} from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { jobId } from '../../../../lib/adapters/warehouse/bigquery-job-ids.ts'
import { BatchRejectedError, MassDeleteRefusedError, WarehouseError } from '../../../../lib/core/errors.ts'
import { reportedErrorName } from '../../../../lib/core/retry-policy.ts'
import { stagingTableName } from '../../../../lib/sql/render-merge-script.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'
import { ZetaSqlService } from '../../../support/bigquery-emulator/zetasql-service.ts'
import { TestBatches, type Value } from '../../../support/staged-batches.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

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
beforeEach(async () => {
  emulator = await BigQueryEmulator.start({ zetaSql: zeta })
  emulator.createDataset(PROJECT, DATASET, { location: LOCATION })
})
afterEach(async () => {
  await emulator.stop()
})

function warehouse(options: Partial<BigQueryWarehouseOptions> = {}): BigQueryWarehouse {
  return new BigQueryWarehouse({
    project: PROJECT,
    location: LOCATION,
    ...emulator.clientOptions(),
    pollIntervalMs: 5,
    retryDelayMs: 1,
    ...options,
  })
}

const ANA_BRUNO = [
  { customer_id: 101, name: 'Ana', balance: '1.50' },
  { customer_id: 102, name: 'Bruno', balance: '-3.00' },
]

async function stage(
  batchId: string,
  rows: readonly Record<string, Value>[] = ANA_BRUNO,
  extractedAt = '2024-03-10T14:30:00.000Z',
): Promise<string> {
  return batches.stage(table.name, COLUMNS, rows, { extractedAt, batchId })
}

const merge = (
  w: BigQueryWarehouse,
  batchId: string,
  options: { dryRun?: boolean; allowMassDelete?: boolean } = {},
) =>
  mergeBatch(
    { warehouse: w, staging: batches },
    { table, schema: DATASET, batchId, now: new Date('2024-03-10T14:31:00Z'), ...options },
  )

const jobInserts = () =>
  emulator.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/jobs') && r.json?.configuration)
const uploads = () => emulator.requests.filter((r) => r.upload !== undefined)
const versions = () =>
  (emulator.rows(DIMENSION) ?? []).map((r) => [
    r.customer_id,
    r.name,
    r.balance,
    r.valid_to === null ? 'open' : r.valid_to,
  ])

describe('BigQueryWarehouse on the BigQuery emulator (the real client, SQL run by ZetaSQL)', () => {
  it('makes no network call when built (auth client injected, nothing at import or construction)', async () => {
    warehouse()
    await new Promise((r) => setTimeout(r, 20))
    expect(emulator.requests).toEqual([])
  })

  it('merges two snapshots: staging table with mapped types and an expiration, one load job per part, one script job; history as on DuckDB', async () => {
    const w = warehouse()
    const first = await stage('20240101T090000.000Z-aaaaaa', ANA_BRUNO, '2024-01-01T09:00:00.000Z')
    const result = await merge(w, first)
    expect(result.status).toBe('merged')
    expect(result.counts).toEqual({
      events: 2,
      insertedVersions: 2,
      closedVersions: 0,
      deletedKeys: 0,
      unchangedEvents: 0,
      lateKeys: 0,
    })
    expect(result.keys).toEqual({ newKeys: 2, changedKeys: 0, deletedKeys: 0 })

    // The staging table: created through tables.insert with the mapped schema, source types and a 7-day expiration.
    const stage1 = stagingTableName(table.target, first)
    const created = emulator.requests.find(
      (r) => r.method === 'POST' && r.path.endsWith(`/datasets/${DATASET}/tables`),
    )!.json!
    expect(created.tableReference.tableId).toBe(stage1)
    expect(created.schema.fields.map((f: { name: string; type: string }) => [f.name, f.type])).toEqual([
      ['customer_id', 'INT64'],
      ['name', 'STRING'],
      ['balance', 'NUMERIC'],
    ])
    expect(created.schema.fields[2].description).toBe('dimsync source type: DECIMAL(12,2)')
    expect(Number(created.expirationTime)).toBeGreaterThan(Date.now() + 6 * 86_400_000)
    // The ledger is clustered on the target, so a lookup of one table's batch reads few blocks.
    expect(
      emulator.store.getTable({ projectId: PROJECT, datasetId: DATASET, tableId: '_dimsync_batches' })
        ?.metadata.clustering?.fields,
    ).toEqual(['target', 'batch_id'])
    // Dropped after the merge committed.
    expect(
      emulator.store.getTable({ projectId: PROJECT, datasetId: DATASET, tableId: stage1 }),
    ).toBeUndefined()

    // The load job: a multipart upload of the Parquet part, with a deterministic id, labels and the location.
    const [upload] = uploads()
    expect(upload!.query.get('uploadType')).toBe('multipart')
    expect(upload!.upload!.head).toBe('PAR1')
    expect(upload!.upload!.resource).toMatchObject({
      jobReference: {
        projectId: PROJECT,
        jobId: jobId('load', table.target, first, { part: 0 }),
        location: LOCATION,
      },
      configuration: {
        labels: { dimsync_table: 'customers', dimsync_batch: '20240101t090000_000z-aaaaaa' },
        load: {
          sourceFormat: 'PARQUET',
          writeDisposition: 'WRITE_APPEND',
          destinationTable: { projectId: PROJECT, datasetId: DATASET, tableId: stage1 },
        },
      },
    })

    // The merge: one query job with a deterministic id, labels and the location; DDL before the transaction.
    const scripts = jobInserts().filter(
      (r) =>
        r.json!.configuration.query &&
        !r.json!.configuration.dryRun &&
        String(r.json!.jobReference?.jobId).startsWith('dimsync_merge_'),
    )
    expect(scripts).toHaveLength(1)
    const job = scripts[0]!.json!
    expect(job.jobReference).toMatchObject({ jobId: jobId('merge', table.target, first), location: LOCATION })
    expect(job.configuration.labels).toEqual({
      dimsync_table: 'customers',
      dimsync_batch: '20240101t090000_000z-aaaaaa',
    })
    const text: string = job.configuration.query.query
    expect(text.indexOf('CREATE TABLE IF NOT EXISTS')).toBeLessThan(text.indexOf('BEGIN TRANSACTION;'))
    expect(emulator.jobs.get(PROJECT, job.jobReference.jobId)?.outcome?.statistics).toMatchObject({
      query: { statementType: 'SCRIPT' },
    })

    // Every job call (create, poll, results) names the location.
    const jobCalls = emulator.requests.filter((r) => /\/(jobs|queries)\/[^/]+$/.test(r.path))
    expect(jobCalls.length).toBeGreaterThan(0)
    for (const call of jobCalls) expect(call.query.get('location')).toBe(LOCATION)

    const second = await stage('20240310T143000.000Z-bbbbbb', [
      { customer_id: 101, name: 'Ana', balance: '2.00' },
      { customer_id: 103, name: 'Carla', balance: '0.00' },
    ])
    expect((await merge(w, second)).counts).toMatchObject({
      insertedVersions: 2,
      closedVersions: 2,
      deletedKeys: 1,
    })
    expect(versions()).toEqual([
      ['101', 'Ana', '1.5', '2024-03-10 14:30:00+00'],
      ['102', 'Bruno', '-3', '2024-03-10 14:30:00+00'],
      ['101', 'Ana', '2', 'open'],
      ['103', 'Carla', '0', 'open'],
    ])
    expect((await merge(w, second)).status).toBe('already-applied')
  })

  it('a retried merge adopts the load and merge jobs its first attempt created (409 / existing) instead of running them again', async () => {
    await emulator.stop()
    emulator = await BigQueryEmulator.start({ zetaSql: zeta, minimumJobRunMs: 300 })
    emulator.createDataset(PROJECT, DATASET, { location: LOCATION })
    const batchId = await stage('20240310T150000.000Z-cccccc')
    const mergeId = jobId('merge', table.target, batchId)
    const firstAttempt = merge(warehouse(), batchId)
    // The second attempt starts while the first attempt's merge job is still running (a Lambda retried early).
    while (emulator.jobs.get(PROJECT, mergeId) === undefined) await new Promise((r) => setTimeout(r, 10))
    expect(emulator.jobs.get(PROJECT, mergeId)?.state).not.toBe('DONE')
    const uploadsBefore = uploads().length
    const w = warehouse()
    const opened = await batches.openBatch(table.name, batchId)
    await w.loadBatch({
      table,
      batchId,
      stage: { schema: DATASET, name: stagingTableName(table.target, batchId) },
      partPaths: opened.partPaths,
      columns: COLUMNS,
      rowCount: 2,
    })
    expect(uploads().length).toBe(uploadsBefore)
    const [a, b] = await Promise.all([firstAttempt, merge(w, batchId)])
    expect(a.status).toBe('merged')
    expect(['merged', 'already-applied']).toContain(b.status)
    expect(jobInserts().filter((r) => r.json!.jobReference?.jobId === mergeId)).toHaveLength(1)
    expect(versions()).toHaveLength(2)
  })

  it('a failed statement rolls the merge back and becomes a WarehouseError naming the step, carrying its SQL and BigQuery’s message', async () => {
    const batchId = await stage('20240310T170000.000Z-dddddd')
    emulator.faults.failStatement(
      (s) => s.text.startsWith('INSERT INTO `acme-dw`.`history`.`dim_customer`'),
      {
        reason: 'invalidQuery',
        message: 'Column name is ambiguous at [12:3]',
      },
    )
    const error = await merge(warehouse(), batchId).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WarehouseError)
    const failure = error as WarehouseError
    expect(failure.label).toBe('insert first versions') // the dimension's first batch: one INSERT
    expect(failure.sql).toMatch(/^INSERT INTO `acme-dw`\.`history`\.`dim_customer`/)
    expect(failure.message).toContain('Column name is ambiguous')
    expect(failure.message).toContain(jobId('merge', table.target, batchId))
    expect(failure.retryable).toBe(false)
    expect(emulator.jobs.get(PROJECT, jobId('merge', table.target, batchId, { attempt: 2 }))).toBeUndefined()
    expect(versions()).toEqual([])
    expect(emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: '_dimsync_batches' })).toEqual([])
  })

  it('a job that failed transiently (backendError) is retried under a new attempt id', async () => {
    const batchId = await stage('20240310T171500.000Z-eeeeee')
    emulator.faults.failJob((job) => job.jobId === jobId('merge', table.target, batchId), {
      reason: 'backendError',
      message: 'Backend error',
    })
    expect((await merge(warehouse(), batchId)).status).toBe('merged')
    expect(emulator.jobs.get(PROJECT, jobId('merge', table.target, batchId, { attempt: 2 }))?.state).toBe(
      'DONE',
    )
    expect(versions()).toHaveLength(2)
  })

  it('transient failures inside the merge script keep BigQuery’s reason through the handler and are retried with backoff and jitter under new ids', async () => {
    const batchId = await stage('20240310T172000.000Z-nnnnnn')
    const insert = (s: { text: string }) =>
      s.text.startsWith('INSERT INTO `acme-dw`.`history`.`dim_customer`')
    // BigQuery's texts for these reasons: the script's handler sees only @@error.message.
    const transient = [
      {
        reason: 'backendError',
        message: 'Error encountered during execution. Retrying may solve the problem.',
      },
      {
        reason: 'rateLimitExceeded',
        message: 'Exceeded rate limits: too many table update operations for this table.',
      },
      {
        reason: 'invalidQuery',
        message:
          'Transaction is aborted due to concurrent update against table acme-dw.history.dim_customer.',
      },
    ]
    for (const error of transient) emulator.faults.failStatement(insert, error)
    const delays: number[] = []
    const w = warehouse({
      retryDelayMs: 100,
      sleep: async (ms) => {
        delays.push(ms)
      },
    })
    expect((await merge(w, batchId)).status).toBe('merged')
    expect(emulator.jobs.get(PROJECT, jobId('merge', table.target, batchId, { attempt: 4 }))?.state).toBe(
      'DONE',
    )
    expect(versions()).toHaveLength(2)
    // Exponential backoff with jitter: attempt n waits between half and all of 100 ms · 2^(n-1).
    expect(delays).toHaveLength(3)
    delays.forEach((delay, n) => {
      expect(delay).toBeGreaterThanOrEqual(50 * 2 ** n)
      expect(delay).toBeLessThanOrEqual(100 * 2 ** n)
    })
  })

  it('a transient failure outlasting the attempts is reported retryable (RetryableError to the state machine); a permanent one is not', async () => {
    const batchId = await stage('20240310T172500.000Z-oooooo')
    emulator.faults.failStatement(
      (s) => s.text.startsWith('INSERT INTO `acme-dw`.`history`.`dim_customer`'),
      {
        reason: 'backendError',
        message: 'Error encountered during execution. Retrying may solve the problem.',
      },
      2,
    )
    const w = warehouse({ maxAttempts: 2, retryDelayMs: 1 })
    const error = (await merge(w, batchId).catch((e: unknown) => e)) as WarehouseError
    expect(error).toBeInstanceOf(WarehouseError)
    expect(error.message).toContain('(backendError)')
    expect(error.label).toBe('insert first versions') // the dimension's first batch: one INSERT
    expect(reportedErrorName(error)).toBe('RetryableError')
    emulator.faults.failStatement(
      (s) => s.text.startsWith('INSERT INTO `acme-dw`.`history`.`dim_customer`'),
      {
        reason: 'invalidQuery',
        message: 'Query error: Cannot read field of type STRING as INT64 at [40:7]',
      },
    )
    const permanent = (await merge(w, batchId).catch((e: unknown) => e)) as WarehouseError
    expect(reportedErrorName(permanent)).toBe('WarehouseError')
    expect((await merge(w, batchId)).status).toBe('merged')
  })

  it('a script retried after a concurrent update succeeds: the DDL before its transaction (a new source column) is idempotent', async () => {
    const w = warehouse()
    await merge(w, await stage('20240310T173000.000Z-pppppp'))
    const withEmail = await batches.stage(
      table.name,
      [...COLUMNS, { name: 'email', type: 'VARCHAR' }],
      [
        { ...ANA_BRUNO[0]!, email: 'ana@example.com' },
        { ...ANA_BRUNO[1]!, email: null },
      ],
      { extractedAt: '2024-03-11T14:30:00.000Z', batchId: '20240311T143000.000Z-qqqqqq' },
    )
    emulator.faults.failStatement(
      (s) => s.text.startsWith('INSERT INTO `acme-dw`.`history`.`dim_customer`'),
      {
        reason: 'invalidQuery',
        message:
          'Transaction is aborted due to concurrent update against table acme-dw.history.dim_customer.',
      },
    )
    expect((await merge(w, withEmail)).status).toBe('merged')
    expect(emulator.jobs.get(PROJECT, jobId('merge', table.target, withEmail, { attempt: 2 }))?.state).toBe(
      'DONE',
    )
    const open = (emulator.rows(DIMENSION) ?? []).filter((r) => r.valid_to === null)
    expect(open.map((r) => [r.customer_id, r.email]).sort()).toEqual([
      ['101', 'ana@example.com'],
      ['102', null],
    ])
  })

  it('a staging table that expired while its batch waited is reloaded from the staged parts before the merge, never merged empty', async () => {
    const batchId = await stage('20240310T151000.000Z-rrrrrr')
    const stageRef = { schema: DATASET, name: stagingTableName(table.target, batchId) }
    const opened = await batches.openBatch(table.name, batchId)
    // An earlier attempt loaded the batch, then its merge failed and the batch waited past the expiration.
    const load = {
      table,
      batchId,
      stage: stageRef,
      partPaths: opened.partPaths,
      columns: COLUMNS,
      rowCount: 2,
    }
    await warehouse().loadBatch(load)
    await opened.release()
    await new BigQuery({ projectId: PROJECT, ...emulator.clientOptions() })
      .dataset(DATASET)
      .table(stageRef.name)
      .setMetadata({ expirationTime: String(Date.now() + 20) })
    await new Promise((r) => setTimeout(r, 30))
    expect(
      emulator.store.getTable({ projectId: PROJECT, datasetId: DATASET, tableId: stageRef.name }),
    ).toBeUndefined()
    expect((await merge(warehouse(), batchId)).counts).toMatchObject({ events: 2, insertedVersions: 2 })
    expect(versions()).toHaveLength(2)
    expect(uploads()).toHaveLength(2)
  })

  it('a partial staging table is reloaded; one that stays short of the manifest fails the merge retryably, naming the counts', async () => {
    const batchId = await stage('20240310T152000.000Z-ssssss')
    const stageRef = { schema: DATASET, name: stagingTableName(table.target, batchId) }
    const tableId = { projectId: PROJECT, datasetId: DATASET, tableId: stageRef.name }
    const w = warehouse()
    const opened = await batches.openBatch(table.name, batchId)
    const load = {
      table,
      batchId,
      stage: stageRef,
      partPaths: opened.partPaths,
      columns: COLUMNS,
      rowCount: 2,
    }
    await w.loadBatch(load)
    // Rows lost after the load (a table emptied by hand): the next load finds 0 of 2 and reloads.
    await emulator.query(PROJECT, `TRUNCATE TABLE ${DATASET}.${stageRef.name}`, { location: LOCATION })
    await w.loadBatch(load)
    expect(emulator.rows(tableId)).toHaveLength(2)
    // A manifest that promises more rows than the parts hold: reloading cannot help, the merge must not run.
    const short = (await w.loadBatch({ ...load, rowCount: 3 }).catch((e: unknown) => e)) as WarehouseError
    await opened.release()
    expect(short).toBeInstanceOf(WarehouseError)
    expect(short.message).toContain(`staging table ${PROJECT}.${DATASET}.${stageRef.name} holds 2 rows`)
    expect(short.message).toContain(`batch ${batchId} of table customers has 3`)
    expect(short.retryable).toBe(true)
  })

  it('an upload answered 503, or never answered, is retried with the part reopened, and times out instead of hanging', async () => {
    const batchId = await stage('20240310T153000.000Z-tttttt')
    const isUpload = (r: { path: string }) => r.path.startsWith('/upload/')
    emulator.faults.failRequest(isUpload, 503, { reason: 'backendError', message: 'Service Unavailable' })
    emulator.faults.stallRequest(isUpload)
    const result = await merge(warehouse({ uploadTimeoutMs: 500 }), batchId)
    expect(result.status).toBe('merged')
    expect(versions()).toHaveLength(2)
    // Three uploads of the whole part (PAR1 … of the same size): the 503, the one that hung, the one that loaded.
    const sent = uploads()
    expect(sent).toHaveLength(3)
    expect(new Set(sent.map((u) => `${u.upload!.head} ${u.upload!.bytes}`)).size).toBe(1)
  }, 20_000)

  it('a job still running past the wait is a retryable error; the next attempt adopts it instead of submitting again', async () => {
    await emulator.stop()
    emulator = await BigQueryEmulator.start({ zetaSql: zeta, minimumJobRunMs: 1500 })
    emulator.createDataset(PROJECT, DATASET, { location: LOCATION })
    const batchId = await stage('20240310T154000.000Z-uuuuuu')
    const slow = (await merge(warehouse({ jobTimeoutMs: 200 }), batchId).catch(
      (e: unknown) => e,
    )) as WarehouseError
    expect(slow).toBeInstanceOf(WarehouseError)
    expect(slow.message).toMatch(/still running after 200 ms/)
    expect(slow.retryable).toBe(true)
    // The jobs of the next attempt run at once; the job it adopts keeps running its 1.5 s.
    emulator.setMinimumJobRunMs(0)
    expect((await merge(warehouse(), batchId)).status).toBe('merged')
    expect(uploads()).toHaveLength(1)
    expect(
      jobInserts().filter((r) => r.json!.jobReference?.jobId?.startsWith('dimsync_merge_')),
    ).toHaveLength(1)
  }, 30_000)

  it('dimsync’s checks failing inside the script are BatchRejectedError / MassDeleteRefusedError; nothing is written', async () => {
    const duplicates = await stage('20240310T180000.000Z-ffffff', [
      ...ANA_BRUNO,
      { customer_id: 101, name: 'Ana again', balance: '0.00' },
    ])
    const rejected = await merge(warehouse(), duplicates).catch((e: unknown) => e)
    expect(rejected).toBeInstanceOf(BatchRejectedError)
    expect((rejected as Error).message).toBe(
      `table customers: batch ${duplicates} has 1 duplicate keys (a full extract must hold one row per key), for example: customer_id=101; nothing was written`,
    )
    expect(versions()).toEqual([])

    const w = warehouse()
    await merge(
      w,
      await stage('20240310T190000.000Z-gggggg', [
        ...ANA_BRUNO,
        { customer_id: 103, name: 'Carla', balance: '1.00' },
      ]),
    )
    const truncated = await stage('20240311T000000.000Z-hhhhhh', [ANA_BRUNO[0]!], '2024-03-11T00:00:00.000Z')
    const refused = await merge(w, truncated).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(MassDeleteRefusedError)
    expect((refused as Error).message).toMatch(/would delete 2 of 3 current keys/)
    expect(versions().filter((v) => v[3] === 'open')).toHaveLength(3)
  })

  it('a refused batch gets through with --allow-mass-delete: the failed merge job is not replayed, the next attempt gets a new id', async () => {
    const w = warehouse()
    await merge(
      w,
      await stage('20240312T090000.000Z-kkkkkk', [
        ...ANA_BRUNO,
        { customer_id: 103, name: 'Carla', balance: '1.00' },
      ]),
    )
    const truncated = await stage('20240313T000000.000Z-llllll', [ANA_BRUNO[0]!], '2024-03-13T00:00:00.000Z')
    expect(await merge(w, truncated).catch((e: unknown) => e)).toBeInstanceOf(MassDeleteRefusedError)
    const refusedJob = jobId('merge', table.target, truncated)
    expect(emulator.jobs.get(PROJECT, refusedJob)?.error).toBeDefined()

    const allowed = await merge(w, truncated, { allowMassDelete: true })
    expect(allowed.status).toBe('merged')
    expect(allowed.counts).toMatchObject({ deletedKeys: 2 })
    expect(emulator.jobs.get(PROJECT, jobId('merge', table.target, truncated, { attempt: 2 }))?.state).toBe(
      'DONE',
    )
    expect(versions().filter((v) => v[3] === 'open')).toEqual([['101', 'Ana', '1.5', 'open']])
    // The load job of the part succeeded the first time: adopted, not uploaded again.
    expect(uploads().filter((u) => u.upload!.resource.jobReference.jobId.includes('llllll'))).toHaveLength(1)
  })

  it('a merge that failed for a reason since fixed runs again under a new id (a permanent failure is not replayed)', async () => {
    const batchId = await stage('20240314T000000.000Z-mmmmmm')
    emulator.faults.failStatement(
      (s) => s.text.startsWith('INSERT INTO `acme-dw`.`history`.`dim_customer`'),
      {
        reason: 'accessDenied',
        message:
          'Access Denied: Table acme-dw:history.dim_customer: Permission bigquery.tables.updateData denied',
      },
    )
    const denied = await merge(warehouse(), batchId).catch((e: unknown) => e)
    expect((denied as Error).message).toContain('Permission bigquery.tables.updateData denied')
    expect((await merge(warehouse(), batchId)).status).toBe('merged')
    expect(versions()).toHaveLength(2)
  })

  it('plan (dry run) loads the staging table, prices each read on its own (a script’s dry run stops at its first DDL) and runs no merge', async () => {
    const batchId = await stage('20240310T200000.000Z-iiiiii')
    const result = await merge(warehouse(), batchId, { dryRun: true })
    expect(result.status).toBe('dry-run')
    expect(result.counts).toBeUndefined()
    const reads = result.reads!
    // Before the first load only the staging table and the ledger exist: the reads of the dimension cannot be
    // priced yet, and say so.
    const byLabel = new Map(reads.map((r) => [r.label, r]))
    expect(byLabel.get('check NULL keys')).toEqual({ label: 'check NULL keys', bytes: 16 })
    expect(byLabel.get('insert first versions')).toMatchObject({
      notEstimable: expect.stringMatching(/^reads a table the script creates \(Not found: Table/),
    })
    expect(result.bytesProcessed).toBe(reads.reduce((sum, r) => sum + ('bytes' in r ? r.bytes : 0), 0))
    // One dry run per read BigQuery was asked to price (those naming a temporary table are not sent).
    const sent = reads.filter((r) => 'bytes' in r || r.notEstimable.startsWith('reads a table the script'))
    expect(jobInserts().filter((r) => r.json!.configuration.dryRun)).toHaveLength(sent.length)
    expect(emulator.jobs.list(PROJECT).some((j) => j.jobId.startsWith('dimsync_merge_'))).toBe(false)
    expect(emulator.store.getTable(DIMENSION)).toBeUndefined()
    // No staging table left behind either.
    const left = emulator.store.listTables(PROJECT, DATASET)
    expect(left.map((t) => t.ref.tableId).filter((name) => name.startsWith('_dimsync_stage_'))).toEqual([])
  })

  it('plan of a later batch prices the diff against the dimension; reads of the script’s temporary tables are named as not estimable', async () => {
    const w = warehouse()
    await merge(w, await stage('20240310T200000.000Z-iiiiii'))
    const later = await stage(
      '20240311T200000.000Z-iiiiij',
      [{ customer_id: 101, name: 'Ana Maria', balance: '1.50' }],
      '2024-03-11T20:00:00.000Z',
    )
    const result = await merge(w, later, { dryRun: true, allowMassDelete: true })
    const byLabel = new Map(result.reads!.map((r) => [r.label, r]))
    // The diff reads the staging table (1 row) and the dimension's current versions (2 rows).
    const diff = byLabel.get('diff snapshot against current versions')
    expect(diff).toMatchObject({ bytes: expect.any(Number) })
    expect((diff as { bytes: number }).bytes).toBeGreaterThan(0)
    expect(byLabel.get('close changed current versions')).toEqual({
      label: 'close changed current versions',
      notEstimable: 'reads temporary table __dimsync_changes, which the script builds',
    })
    expect(result.bytesProcessed).toBeGreaterThanOrEqual((diff as { bytes: number }).bytes)
    expect(
      versions()
        .filter((v) => v[3] === 'open')
        .map((v) => v[1]),
    ).toEqual(['Ana', 'Bruno'])
  })

  it('describeTable reads back the source types dimsync recorded (beside the dimension, not in descriptions); a missing table is undefined', async () => {
    const w = warehouse()
    await merge(w, await stage('20240310T210000.000Z-jjjjjj'))
    const columns = await w.describeTable({ schema: DATASET, name: table.target })
    // The key column is REQUIRED (NOT NULL), as dimsync created it.
    expect(columns?.filter((c) => COLUMNS.some((s) => s.name === c.name))).toEqual([
      { ...COLUMNS[0], notNull: true },
      ...COLUMNS.slice(1),
    ])
    expect(await w.describeTable({ schema: DATASET, name: 'missing' })).toBeUndefined()
    // A table dimsync did not write: types from BigQuery's own schema (parameters kept).
    await new BigQuery({ projectId: PROJECT, ...emulator.clientOptions() })
      .dataset(DATASET)
      .table('foreign')
      .create({
        schema: {
          fields: [
            { name: 'customer_id', type: 'INTEGER', description: 'dimsync source type: INTEGER' },
            { name: 'balance', type: 'NUMERIC', precision: '12', scale: '2' },
            { name: 'seen', type: 'TIMESTAMP' },
            { name: 'local_seen', type: 'DATETIME' },
          ],
        },
      })
    expect(await w.describeTable({ schema: DATASET, name: 'foreign' })).toEqual([
      { name: 'customer_id', type: 'INTEGER' },
      { name: 'balance', type: 'DECIMAL(12,2)' },
      { name: 'seen', type: 'TIMESTAMP WITH TIME ZONE' },
      { name: 'local_seen', type: 'TIMESTAMP' },
    ])
  })

  it('transaction() runs its statements as one script: committed, or rolled back', async () => {
    const w = warehouse()
    await emulator.query(PROJECT, 'CREATE TABLE history.t (a INT64)', { location: LOCATION })
    await w.transaction(
      async (tx) =>
        tx.execute({ label: 'insert', sql: 'INSERT INTO `acme-dw`.`history`.`t` (a) VALUES (1)' }),
      { commit: true },
    )
    await w.transaction(
      async (tx) =>
        tx.execute({ label: 'insert', sql: 'INSERT INTO `acme-dw`.`history`.`t` (a) VALUES (2)' }),
      { commit: false },
    )
    expect(emulator.rows({ projectId: PROJECT, datasetId: DATASET, tableId: 't' })).toEqual([{ a: '1' }])
    const failed = await w
      .transaction(
        async (tx) =>
          tx.execute({ label: 'bad insert', sql: 'INSERT INTO `acme-dw`.`history`.`t` (b) VALUES (2)' }),
        { commit: true },
      )
      .catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(WarehouseError)
    expect((failed as Error).message).toMatch(/Column b is not present in table/)
  })

  it('query() answers values in the same forms as the DuckDB warehouse (history reads the same on both)', async () => {
    const rows = await warehouse()
      .query(`SELECT 1 AS i, 9007199254740993 AS big, NUMERIC '1.50' AS n, 0.1 AS d, TRUE AS b,
  DATE '2020-02-29' AS dt, TIME '08:30:00' AS t, TIME '08:30:00.5' AS t2,
  TIMESTAMP '2024-03-10 14:30:00.123456+00' AS ts, TIMESTAMP '2024-03-10 14:30:00+00' AS ts0,
  DATETIME '2024-01-01 10:00:00.5' AS local, b'\\x01\\xff' AS blob, b'AZ' AS blob2, CAST(NULL AS STRING) AS nul`)
    // What DuckDbWarehouse.query answers for the same values, except NUMERIC: BigQuery keeps no scale ('1.50' there).
    expect(rows).toEqual([
      {
        i: 1,
        big: '9007199254740993',
        n: '1.5',
        d: 0.1,
        b: true,
        dt: '2020-02-29',
        t: '08:30:00',
        t2: '08:30:00.5',
        ts: '2024-03-10 14:30:00.123456+00',
        ts0: '2024-03-10 14:30:00+00',
        local: '2024-01-01 10:00:00.5',
        blob: '\\x01\\xFF',
        blob2: 'AZ',
        nul: null,
      },
    ])
  })

  it('a merge into a dataset that does not exist creates it in the warehouse location; credentials that may not get the statement to run', async () => {
    const batchId = await stage('20240310T153000.000Z-dddddd')
    const client = new BigQuery({ projectId: PROJECT, ...emulator.clientOptions() })
    const fresh = (schema: string) =>
      mergeBatch(
        { warehouse: warehouse(), staging: batches },
        { table, schema, batchId, now: new Date('2024-03-10T14:31:00Z') },
      )
    expect((await fresh('analytics')).status).toBe('merged')
    const [metadata] = await client.dataset('analytics').getMetadata()
    expect(metadata.location).toBe(LOCATION)
    expect(emulator.rows({ projectId: PROJECT, datasetId: 'analytics', tableId: table.target })).toHaveLength(
      2,
    )

    const isDatasetInsert = (r: { method: string; path: string }) =>
      r.method === 'POST' && r.path.endsWith('/datasets')
    emulator.faults.failRequest(isDatasetInsert, 403, {
      reason: 'accessDenied',
      message: 'Access Denied: Project acme-dw: User does not have bigquery.datasets.create permission',
    })
    const refused = await fresh('marts').catch((e: unknown) => e as Error)
    expect(refused).toBeInstanceOf(Error)
    expect((refused as Error).message).toBe(
      'dataset acme-dw.marts (warehouse.schema) does not exist, and these credentials may not create it ' +
        '(Access Denied: Project acme-dw: User does not have bigquery.datasets.create permission); nothing was ' +
        "written. Create it with: CREATE SCHEMA `acme-dw`.`marts` OPTIONS (location = 'europe-west1')",
    )
    expect(await client.dataset('marts').exists()).toEqual([false])
  })

  it('query() failures are WarehouseErrors with the SQL', async () => {
    const error = await warehouse()
      .query('SELECT * FROM `acme-dw`.`history`.`missing`')
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WarehouseError)
    expect((error as WarehouseError).sql).toBe('SELECT * FROM `acme-dw`.`history`.`missing`')
    expect(String((error as Error & { cause?: unknown }).cause)).toMatch(
      /Not found: Table acme-dw:history\.missing/,
    )
  })
})
