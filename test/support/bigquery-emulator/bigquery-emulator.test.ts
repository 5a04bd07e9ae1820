import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BigQuery } from '@google-cloud/bigquery'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { BigQueryEmulator } from './bigquery-emulator.ts'
import { ZetaSqlService } from './zetasql-service.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'emu-project'
let zeta: ZetaSqlService
let emulator: BigQueryEmulator
let client: BigQuery
let now: number
let scratch: string

beforeAll(async () => {
  zeta = await ZetaSqlService.start()
  scratch = await mkdtemp(join(tmpdir(), 'bq-emulator-test-'))
})
afterAll(async () => {
  await zeta.stop()
  await rm(scratch, { recursive: true, force: true })
})
beforeEach(async () => {
  now = Date.parse('2024-06-01T00:00:00Z')
  emulator = await BigQueryEmulator.start({ zetaSql: zeta, clock: () => now })
  client = new BigQuery({ projectId: PROJECT, ...emulator.clientOptions() })
  emulator.createDataset(PROJECT, 'd', { location: 'EU' })
})
afterEach(async () => {
  await emulator.stop()
})

interface ApiErrorShape {
  code?: number
  errors?: { reason?: string; message?: string; location?: string }[]
  message?: string
}
const apiError = async (promise: Promise<unknown>): Promise<ApiErrorShape> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (error === undefined) throw new Error('expected the call to fail')
  return error as ApiErrorShape
}

let parquetFiles = 0
/** A Parquet file written by DuckDB from a SELECT (the way dimsync stages batches). */
async function parquet(select: string, options = ''): Promise<Buffer> {
  const path = join(scratch, `f${++parquetFiles}.parquet`)
  const db = await DuckDBInstance.create(':memory:')
  const c = await db.connect()
  try {
    await c.run(`SET TimeZone='UTC'`)
    await c.run(`COPY (${select}) TO '${path}' (FORMAT parquet${options})`)
  } finally {
    c.closeSync()
    db.closeSync()
  }
  return readFile(path)
}

/** A multipart load job upload, as the BigQuery warehouse adapter sends it. */
async function upload(
  jobId: string,
  load: Record<string, unknown>,
  file: Buffer,
  location = 'EU',
): Promise<Response> {
  const boundary = 'emulator-test-boundary'
  const resource = JSON.stringify({
    jobReference: { projectId: PROJECT, jobId, location },
    configuration: { load },
  })
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Type: application/json\r\n\r\n${resource}\r\n--${boundary}\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  return fetch(`${emulator.url}/upload/bigquery/v2/projects/${PROJECT}/jobs?uploadType=multipart`, {
    method: 'POST',
    headers: { 'content-type': `multipart/related; boundary=${boundary}` },
    body,
  })
}

async function waitForJob(jobId: string, location = 'EU') {
  for (;;) {
    const [metadata] = await client.job(jobId, { location }).getMetadata()
    if (metadata.status.state === 'DONE') return metadata
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe('BigQuery emulator: datasets and tables through @google-cloud/bigquery', () => {
  it('creates, reads, patches and deletes tables; answers BigQuery’s resource and error shapes', async () => {
    const dataset = client.dataset('d', { location: 'EU' })
    await dataset.table('t').create({
      schema: {
        fields: [
          { name: 'id', type: 'INT64', mode: 'REQUIRED', description: 'key' },
          { name: 'amount', type: 'NUMERIC' },
        ],
      },
      expirationTime: String(now + 86_400_000),
      labels: { team: 'dw' },
    })
    const [metadata] = await dataset.table('t').getMetadata()
    expect(metadata).toMatchObject({
      id: `${PROJECT}:d.t`,
      type: 'TABLE',
      location: 'EU',
      numRows: '0',
      expirationTime: String(now + 86_400_000),
      labels: { team: 'dw' },
      schema: {
        fields: [
          { name: 'id', type: 'INTEGER', mode: 'REQUIRED', description: 'key' },
          { name: 'amount', type: 'NUMERIC', mode: 'NULLABLE' },
        ],
      },
    })
    const again = await apiError(
      dataset.table('t').create({ schema: { fields: [{ name: 'x', type: 'STRING' }] } }),
    )
    expect([again.code, again.errors?.[0]?.reason, again.message]).toEqual([
      409,
      'duplicate',
      `Already Exists: Table ${PROJECT}:d.t`,
    ])
    // The REST API clears an expiration with null (the client's types only know strings).
    const clearExpiration = { expirationTime: null } as unknown as { expirationTime: string }
    await dataset.table('t').setMetadata({ description: 'patched', ...clearExpiration })
    const [patched] = await dataset.table('t').getMetadata()
    expect(patched.description).toBe('patched')
    expect(patched.expirationTime).toBeUndefined()
    await dataset.table('t').delete()
    const missing = await apiError(dataset.table('t').getMetadata())
    expect([missing.code, missing.errors?.[0]?.reason, missing.message]).toEqual([
      404,
      'notFound',
      `Not found: Table ${PROJECT}:d.t`,
    ])
    const [exists] = await client.dataset('nope').exists()
    expect(exists).toBe(false)
  })

  it('a table past its expiration time is gone, as in BigQuery', async () => {
    await client
      .dataset('d')
      .table('short')
      .create({ schema: { fields: [{ name: 'a', type: 'STRING' }] }, expirationTime: String(now + 1000) })
    expect((await client.dataset('d').table('short').exists())[0]).toBe(true)
    now += 1000
    expect((await client.dataset('d').table('short').exists())[0]).toBe(false)
  })

  it('partition expiration: a partition older than the table’s expiration (set, or the dataset’s default) is deleted', async () => {
    const DAY = 86_400_000
    await client.createDataset('expiring', { location: 'EU', defaultPartitionExpirationMs: String(60 * DAY) })
    const [dataset] = await client.dataset('expiring').getMetadata()
    expect(dataset.defaultPartitionExpirationMs).toBe(String(60 * DAY))
    // now: 2024-06-01. Partitions by month: 2024-01 expired (start + 60 days is before now), 2024-05 not yet.
    await emulator.query(
      PROJECT,
      `CREATE TABLE expiring.p (id INT64, seen TIMESTAMP) PARTITION BY TIMESTAMP_TRUNC(seen, MONTH);
CREATE TABLE expiring.own (id INT64, seen TIMESTAMP) PARTITION BY TIMESTAMP_TRUNC(seen, MONTH)
  OPTIONS (partition_expiration_days = 200);
CREATE TABLE expiring.flat (id INT64, seen TIMESTAMP);
INSERT INTO expiring.p VALUES (1, TIMESTAMP '2024-01-15 00:00:00+00'), (2, TIMESTAMP '2024-05-20 00:00:00+00'), (3, NULL);
INSERT INTO expiring.own VALUES (1, TIMESTAMP '2024-01-15 00:00:00+00');
INSERT INTO expiring.flat VALUES (1, TIMESTAMP '2024-01-15 00:00:00+00');`,
      { location: 'EU' },
    )
    const ids = async (table: string) =>
      (await emulator.query(PROJECT, `SELECT id FROM expiring.${table} ORDER BY id`, { location: 'EU' })).map(
        (r) => r.id,
      )
    // The dataset's default became the table's own setting when it was created, as tables.get shows.
    const [partitioned] = await client.dataset('expiring').table('p').getMetadata()
    expect(partitioned.timePartitioning).toEqual({
      type: 'MONTH',
      field: 'seen',
      expirationMs: String(60 * DAY),
    })
    expect(await ids('p')).toEqual(['2', '3'])
    // The table's own setting wins; an unpartitioned table has no partitions to expire.
    expect(await ids('own')).toEqual(['1'])
    expect(await ids('flat')).toEqual(['1'])
    now += 60 * DAY
    expect(await ids('p')).toEqual(['3'])
    // The way out: remove the table's setting; its partitions then stay.
    await emulator.query(
      PROJECT,
      `ALTER TABLE expiring.own SET OPTIONS (partition_expiration_days = NULL);
INSERT INTO expiring.own VALUES (2, TIMESTAMP '2020-01-01 00:00:00+00');`,
      { location: 'EU' },
    )
    expect(await ids('own')).toEqual(['2'])
    const [own] = await client.dataset('expiring').table('own').getMetadata()
    expect(own.timePartitioning).toEqual({ type: 'MONTH', field: 'seen' })
  })

  it('require_partition_filter: a statement reading the table without a filter that can prune its partitions is refused with BigQuery’s error', async () => {
    await emulator.query(
      PROJECT,
      `CREATE TABLE d.p (id INT64, seen TIMESTAMP) PARTITION BY TIMESTAMP_TRUNC(seen, MONTH)
  OPTIONS (require_partition_filter = TRUE);
INSERT INTO d.p VALUES (1, NULL), (2, TIMESTAMP '2024-05-20 00:00:00+00');`,
      { location: 'EU' },
    )
    const [metadata] = await client.dataset('d').table('p').getMetadata()
    expect(metadata.requirePartitionFilter).toBe(true)
    const refusal =
      "Cannot query over table 'd.p' without a filter over column(s) 'seen' that can be used for partition elimination"
    const run = (query: string) =>
      client.createJob({ location: 'EU', configuration: { query: { query, useLegacySql: false } } })
    const refused = async (query: string) => {
      const error = await apiError(run(query))
      return [error.code, error.errors?.[0]?.reason, error.errors?.[0]?.message]
    }
    expect(await refused('SELECT id FROM d.p')).toEqual([400, 'invalidQuery', refusal])
    expect(await refused('SELECT id FROM d.p WHERE id = 1')).toEqual([400, 'invalidQuery', refusal])
    expect(await refused('SELECT id FROM d.p WHERE seen IS NULL OR id = 1')).toEqual([
      400,
      'invalidQuery',
      refusal,
    ])
    expect(
      await refused(
        'SELECT id FROM d.p WHERE seen >= (SELECT MIN(seen) FROM d.p AS q WHERE q.seen IS NOT NULL)',
      ),
    ).toEqual([400, 'invalidQuery', refusal])
    expect(await refused('UPDATE d.p SET id = 3 WHERE id = 1')).toEqual([400, 'invalidQuery', refusal])
    // A script fails at the statement (the job fails when it runs).
    const [script] = await run('SELECT 1; SELECT id FROM d.p;')
    const done = await waitForJob(script.id!)
    expect(done.status.errorResult.message).toBe(refusal)
    // Filters that can prune: on the partitioning column alone, against constants or script variables.
    for (const query of [
      'SELECT id FROM d.p WHERE seen IS NULL',
      "SELECT id FROM d.p WHERE seen >= TIMESTAMP '2024-01-01 00:00:00+00' AND id = 2",
      "SELECT id FROM d.p WHERE seen IS NULL OR seen > TIMESTAMP '2024-01-01 00:00:00+00'",
      "DECLARE since TIMESTAMP DEFAULT TIMESTAMP '2024-01-01 00:00:00+00'; SELECT id FROM d.p WHERE seen >= since;",
      'UPDATE d.p SET id = 3 WHERE seen IS NULL AND id = 1',
      'INSERT INTO d.p (id, seen) VALUES (4, NULL)',
    ]) {
      const [job] = await run(query)
      expect([query, (await waitForJob(job.id!)).status.errorResult]).toEqual([query, undefined])
    }
  })

  it('creates datasets with a location; refuses a duplicate and deleting one still in use', async () => {
    await client.createDataset('fresh', { location: 'europe-west1' })
    const [metadata] = await client.dataset('fresh').getMetadata()
    expect(metadata.location).toBe('europe-west1')
    expect((await apiError(client.createDataset('fresh'))).code).toBe(409)
    await emulator.query(PROJECT, 'CREATE TABLE fresh.t (a INT64)', { location: 'europe-west1' })
    expect((await apiError(client.dataset('fresh').delete())).message).toBe(
      `Dataset ${PROJECT}:fresh is still in use`,
    )
    await client.dataset('fresh').delete({ force: true })
    expect((await client.dataset('fresh').exists())[0]).toBe(false)
  })
})

describe('BigQuery emulator: query jobs', () => {
  beforeEach(async () => {
    await emulator.query(
      PROJECT,
      `CREATE TABLE d.t (id INT64, name STRING, seen TIMESTAMP);
INSERT INTO d.t (id, name, seen) VALUES (1, 'Ana', TIMESTAMP '2024-03-10 14:30:00.123456+00'), (2, 'Bruno', NULL);`,
    )
  })

  it('query(): jobs.query with the location; values typed by the client from BigQuery’s REST form', async () => {
    const [rows] = await client.query({
      query: 'SELECT id, name, seen FROM d.t ORDER BY id',
      location: 'EU',
      useLegacySql: false,
    })
    expect(rows.map((r) => ({ ...r, seen: r.seen?.value ?? null }))).toEqual([
      { id: 1, name: 'Ana', seen: '2024-03-10T14:30:00.123456000Z' },
      { id: 2, name: 'Bruno', seen: null },
    ])
    const elsewhere = await apiError(client.query({ query: 'SELECT 1 FROM d.t', location: 'US' }))
    expect([elsewhere.code, elsewhere.errors?.[0]?.reason, elsewhere.message]).toEqual([
      404,
      'notFound',
      `Not found: Dataset ${PROJECT}:d was not found in location US`,
    ])
  })

  it('a job id is used once: inserting it again answers 409, for a finished job and for a failed one', async () => {
    await client.createJob({
      jobId: 'job_ok',
      location: 'EU',
      configuration: { query: { query: 'SELECT 1', useLegacySql: false } },
    })
    await waitForJob('job_ok')
    const duplicate = await apiError(
      client.createJob({
        jobId: 'job_ok',
        location: 'EU',
        configuration: { query: { query: 'SELECT 2', useLegacySql: false } },
      }),
    )
    expect([duplicate.code, duplicate.errors?.[0]?.reason, duplicate.message]).toEqual([
      409,
      'duplicate',
      `Already Exists: Job ${PROJECT}:EU.job_ok`,
    ])
    // An invalid statement is refused at insertion (400), yet the job exists, DONE with its error.
    const invalid = await apiError(
      client.createJob({
        jobId: 'job_bad',
        location: 'EU',
        configuration: { query: { query: 'SELECT zzz FROM d.t', useLegacySql: false } },
      }),
    )
    expect([invalid.code, invalid.errors?.[0]?.reason, invalid.errors?.[0]?.message]).toEqual([
      400,
      'invalidQuery',
      'Unrecognized name: zzz at [1:8]',
    ])
    const [failed] = await client.job('job_bad', { location: 'EU' }).getMetadata()
    expect(failed.status).toEqual({
      state: 'DONE',
      errorResult: { reason: 'invalidQuery', location: 'query', message: 'Unrecognized name: zzz at [1:8]' },
      errors: [{ reason: 'invalidQuery', location: 'query', message: 'Unrecognized name: zzz at [1:8]' }],
    })
    expect(
      (
        await apiError(
          client.createJob({
            jobId: 'job_bad',
            location: 'EU',
            configuration: { query: { query: 'SELECT 1', useLegacySql: false } },
          }),
        )
      ).code,
    ).toBe(409)
  })

  it('a script runs as one job: PENDING/RUNNING while it runs, then DONE with its last query’s rows, or with its error', async () => {
    await emulator.stop()
    emulator = await BigQueryEmulator.start({ zetaSql: zeta, clock: () => now, minimumJobRunMs: 100 })
    client = new BigQuery({ projectId: PROJECT, ...emulator.clientOptions() })
    emulator.createDataset(PROJECT, 'd', { location: 'EU' })
    const script = `DECLARE n INT64 DEFAULT 2; SELECT n AS two, 'x' AS x;`
    await client.createJob({
      jobId: 'script_1',
      location: 'EU',
      configuration: { query: { query: script, useLegacySql: false } },
    })
    const [running] = await client.job('script_1', { location: 'EU' }).getMetadata()
    expect(['PENDING', 'RUNNING']).toContain(running.status.state)
    const done = await waitForJob('script_1')
    expect(done.statistics.query.statementType).toBe('SCRIPT')
    const [rows] = await client.job('script_1', { location: 'EU' }).getQueryResults()
    expect(rows).toEqual([{ two: 2, x: 'x' }])

    await client.createJob({
      jobId: 'script_2',
      location: 'EU',
      configuration: {
        query: { query: `DECLARE m STRING DEFAULT 'boom'; SELECT ERROR(m);`, useLegacySql: false },
      },
    })
    expect((await waitForJob('script_2')).status.errorResult).toEqual({
      reason: 'invalidQuery',
      location: 'query',
      message: 'boom',
    })
    const failed = await apiError(client.job('script_2', { location: 'EU' }).getQueryResults())
    expect([failed.code, failed.errors?.[0]?.reason]).toEqual([400, 'invalidQuery'])
  })

  it('refuses a minimum job run short enough for jobs.get’s hold to hide PENDING/RUNNING from a client', async () => {
    for (const minimumJobRunMs of [1, 20, 99])
      await expect(BigQueryEmulator.start({ zetaSql: zeta, minimumJobRunMs })).rejects.toThrow(
        `minimumJobRunMs ${minimumJobRunMs} is too short`,
      )
    const accepted = await BigQueryEmulator.start({ zetaSql: zeta, minimumJobRunMs: 100 })
    expect(() => accepted.setMinimumJobRunMs(20)).toThrow('minimumJobRunMs 20 is too short')
    expect(() => accepted.setMinimumJobRunMs(-1)).toThrow('minimumJobRunMs -1 is not a duration')
    await accepted.stop()
  })

  it('a job keeps the minimum run in force when it was inserted; jobs inserted after a change get the new one', async () => {
    await emulator.stop()
    emulator = await BigQueryEmulator.start({ zetaSql: zeta, minimumJobRunMs: 600 })
    client = new BigQuery({ projectId: PROJECT, ...emulator.clientOptions() })
    const query = { query: { query: 'SELECT 1', useLegacySql: false } }
    await client.createJob({ jobId: 'slow', location: 'EU', configuration: query })
    emulator.setMinimumJobRunMs(0)
    await client.createJob({ jobId: 'quick', location: 'EU', configuration: query })
    const [slow, quick] = await Promise.all([waitForJob('slow'), waitForJob('quick')])
    const ran = (job: typeof slow) => Number(job.statistics.endTime) - Number(job.statistics.startTime)
    expect(ran(slow)).toBeGreaterThanOrEqual(600)
    expect(ran(quick)).toBeLessThan(600)
  })

  it('a job of another location is not found; legacy SQL is refused', async () => {
    await client.createJob({
      jobId: 'job_eu',
      location: 'EU',
      configuration: { query: { query: 'SELECT 1', useLegacySql: false } },
    })
    expect((await apiError(client.job('job_eu', { location: 'US' }).getMetadata())).code).toBe(404)
    const legacy = await apiError(
      client.createJob({ location: 'EU', configuration: { query: { query: 'SELECT 1' } } }),
    )
    expect(legacy.errors?.[0]?.message).toMatch(/GoogleSQL only/)
  })

  it('a dry run stores and runs nothing, and estimates the logical bytes of the columns read', async () => {
    const [job] = await client.createJob({
      location: 'EU',
      configuration: {
        dryRun: true,
        query: {
          query: `CREATE TEMP TABLE x AS SELECT name FROM d.t; DELETE d.t WHERE TRUE;`,
          useLegacySql: false,
        },
      },
    })
    // name: 'Ana' and 'Bruno' → (2 + 3) + (2 + 5); DELETE WHERE TRUE reads no column.
    expect(job.metadata.statistics.totalBytesProcessed).toBe('12')
    expect(emulator.rows({ projectId: PROJECT, datasetId: 'd', tableId: 't' })).toHaveLength(2)
    expect(emulator.jobs.list(PROJECT)).toEqual([])
  })

  it('a dry run of a script stops, as BigQuery’s, after its first DDL statement or at its first IF', async () => {
    const dryRun = async (query: string) => {
      const [job] = await client.createJob({
        location: 'EU',
        configuration: { dryRun: true, query: { query, useLegacySql: false } },
      })
      return job.metadata.statistics.totalBytesProcessed as string
    }
    // name: 'Ana' and 'Bruno' → (2 + 3) + (2 + 5) = 12 bytes per read of the column.
    expect(await dryRun(`SELECT name FROM d.t; SELECT name FROM d.t;`)).toBe('24')
    // Statements after the first DDL are neither estimated nor resolved (the unknown column is not seen).
    expect(
      await dryRun(`SELECT name FROM d.t; CREATE TEMP TABLE x AS SELECT 1 AS one; SELECT nope FROM d.t;`),
    ).toBe('12')
    expect(
      await dryRun(`SELECT name FROM d.t; IF TRUE THEN SELECT name FROM d.t; END IF; SELECT name FROM d.t;`),
    ).toBe('12')
    // A statement before the stop is still resolved: an error there fails the dry run.
    const invalid = await apiError(dryRun(`SELECT nope FROM d.t; CREATE TEMP TABLE x AS SELECT 1 AS one;`))
    expect(invalid.errors?.[0]?.reason).toBe('invalidQuery')
  })

  it('fault injection: a job or an HTTP call can be made to fail as BigQuery does under load', async () => {
    emulator.faults.failJob((job) => job.jobId === 'job_flaky', {
      reason: 'backendError',
      message: 'Backend error',
    })
    await client.createJob({
      jobId: 'job_flaky',
      location: 'EU',
      configuration: { query: { query: 'SELECT 1', useLegacySql: false } },
    })
    expect((await waitForJob('job_flaky')).status.errorResult).toEqual({
      reason: 'backendError',
      message: 'Backend error',
    })
    emulator.faults.failRequest((r) => r.method === 'GET' && r.path.endsWith('/datasets/d'), 503, {
      reason: 'backendError',
      message: 'try again',
    })
    const [metadata] = await client.dataset('d').getMetadata()
    expect(metadata.id).toBe(`${PROJECT}:d`)
    expect(emulator.requests.filter((r) => r.path.endsWith('/datasets/d')).length).toBe(2)
  })
})

describe('BigQuery emulator: load jobs from multipart Parquet uploads', () => {
  const typed = `SELECT 1::BIGINT AS id, 'Ana'::VARCHAR AS name, 1.50::DECIMAL(12,2) AS amount, 0.1::DOUBLE AS score,
  TRUE AS active, DATE '2020-02-29' AS signup, TIME '08:30:00' AS opens, TIMESTAMPTZ '2024-03-10 14:30:00.123456+00' AS seen,
  TIMESTAMP '2024-01-01 10:00:00.5' AS local_seen, '\\x01\\xff'::BLOB AS photo
UNION ALL SELECT 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL`

  it('loads into an existing table by column name with BigQuery’s type mapping', async () => {
    await emulator.query(
      PROJECT,
      `CREATE TABLE d.t (photo BYTES, id INT64 NOT NULL, name STRING, amount NUMERIC, score FLOAT64, active BOOL, signup DATE,
  opens TIME, seen TIMESTAMP, local_seen DATETIME, extra STRING)`,
    )
    const response = await upload(
      'load_1',
      {
        destinationTable: { projectId: PROJECT, datasetId: 'd', tableId: 't' },
        sourceFormat: 'PARQUET',
        createDisposition: 'CREATE_NEVER',
      },
      await parquet(typed),
    )
    expect(response.status).toBe(200)
    const done = await waitForJob('load_1')
    expect(done.status).toEqual({ state: 'DONE' })
    expect(done.statistics.load).toMatchObject({ inputFiles: '1', outputRows: '2' })
    expect(emulator.rows({ projectId: PROJECT, datasetId: 'd', tableId: 't' })).toEqual([
      {
        photo: Buffer.from([1, 255]).toString('base64'),
        id: '1',
        name: 'Ana',
        amount: '1.5',
        score: '0.1',
        active: 'true',
        signup: '2020-02-29',
        opens: '08:30:00',
        seen: '2024-03-10 14:30:00.123456+00',
        local_seen: '2024-01-01 10:00:00.5',
        extra: null,
      },
      {
        photo: null,
        id: '2',
        name: null,
        amount: null,
        score: null,
        active: null,
        signup: null,
        opens: null,
        seen: null,
        local_seen: null,
        extra: null,
      },
    ])
  })

  it('fails a load whose file does not fit the table, with BigQuery’s messages; a second upload of the same job id is 409', async () => {
    await emulator.query(PROJECT, `CREATE TABLE d.t (id STRING)`)
    const destination = {
      destinationTable: { projectId: PROJECT, datasetId: 'd', tableId: 't' },
      sourceFormat: 'PARQUET',
    }
    await upload('load_bad', destination, await parquet('SELECT 1::BIGINT AS id'))
    expect((await waitForJob('load_bad')).status.errorResult).toEqual({
      reason: 'invalid',
      message: `Provided Schema does not match Table ${PROJECT}:d.t. Field id has changed type from STRING to INT64`,
    })
    await upload('load_extra', destination, await parquet(`SELECT '1' AS id, 2 AS more`))
    expect((await waitForJob('load_extra')).status.errorResult?.message).toBe(
      `Provided Schema does not match Table ${PROJECT}:d.t. Cannot add fields (field: more)`,
    )
    const again = await upload('load_bad', destination, await parquet(`SELECT '1' AS id`))
    expect(again.status).toBe(409)
    const missing = await upload(
      'load_missing',
      {
        ...destination,
        destinationTable: { projectId: PROJECT, datasetId: 'd', tableId: 'nope' },
        createDisposition: 'CREATE_NEVER',
      },
      await parquet(`SELECT '1' AS id`),
    )
    expect(missing.status).toBe(200)
    expect((await waitForJob('load_missing')).status.errorResult).toEqual({
      reason: 'notFound',
      message: `Not found: Table ${PROJECT}:d.nope`,
    })
  })

  it('fails a load whose file uses Parquet 2.0 encodings: what BigQuery makes of them cannot be checked here', async () => {
    await emulator.query(PROJECT, `CREATE TABLE d.v2 (id INT64, name STRING)`)
    const destination = {
      destinationTable: { projectId: PROJECT, datasetId: 'd', tableId: 'v2' },
      sourceFormat: 'PARQUET',
    }
    // More distinct values than DuckDB keeps a dictionary for: each column is written in its V2 encoding.
    const rows = `SELECT range AS id, 'name ' || range AS name FROM range(30000)`
    await upload('load_v2', destination, await parquet(rows, ', PARQUET_VERSION V2'))
    expect((await waitForJob('load_v2')).status.errorResult).toEqual({
      reason: 'invalid',
      message:
        'Error while reading data, error message: column id uses DELTA_BINARY_PACKED, which this emulator does not load',
    })
    await upload('load_v1', destination, await parquet(rows, ', PARQUET_VERSION V1'))
    expect((await waitForJob('load_v1')).status.errorResult).toBeUndefined()
    expect(emulator.rows({ projectId: PROJECT, datasetId: 'd', tableId: 'v2' })).toHaveLength(30000)
  })

  it('WRITE_TRUNCATE replaces the rows; a load creating its table takes the file’s columns', async () => {
    const destination = {
      destinationTable: { projectId: PROJECT, datasetId: 'd', tableId: 'new' },
      sourceFormat: 'PARQUET',
    }
    await upload('l1', destination, await parquet(`SELECT 1::BIGINT AS a, 'x' AS b`))
    await upload(
      'l2',
      { ...destination, writeDisposition: 'WRITE_TRUNCATE' },
      await parquet(`SELECT 2::BIGINT AS a, 'y' AS b`),
    )
    await waitForJob('l2')
    const [metadata] = await client.dataset('d').table('new').getMetadata()
    expect(metadata.schema.fields).toEqual([
      { name: 'a', type: 'INTEGER', mode: 'NULLABLE' },
      { name: 'b', type: 'STRING', mode: 'NULLABLE' },
    ])
    const [rows] = await client.dataset('d').table('new').getRows()
    expect(rows).toEqual([{ a: 2, b: 'y' }])
  })
})
