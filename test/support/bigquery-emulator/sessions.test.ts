import { BigQuery } from '@google-cloud/bigquery'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { BigQueryEmulator } from './bigquery-emulator.ts'
import { ZetaSqlService } from './zetasql-service.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'emu-project'
let zeta: ZetaSqlService
let emulator: BigQueryEmulator
let client: BigQuery

beforeAll(async () => {
  zeta = await ZetaSqlService.start()
})
afterAll(async () => {
  await zeta.stop()
})
beforeEach(async () => {
  emulator = await BigQueryEmulator.start({ zetaSql: zeta })
  client = new BigQuery({ projectId: PROJECT, ...emulator.clientOptions() })
  emulator.createDataset(PROJECT, 'd', { location: 'EU' })
  await emulator.query(PROJECT, `CREATE TABLE d.t (id INT64); INSERT INTO d.t VALUES (1), (2);`, {
    location: 'EU',
  })
})
afterEach(async () => {
  await emulator.stop()
})

interface Done {
  status: { errorResult?: { reason?: string; message?: string } }
  statistics: { sessionInfo?: { sessionId?: string } }
}

let jobs = 0
/** Runs a query job (in a session when given one, or creating one) and waits for it. */
async function run(query: string, session?: string | 'create'): Promise<Done> {
  const jobId = `session_job_${++jobs}`
  await client.createJob({
    jobId,
    location: 'EU',
    configuration: {
      query: {
        query,
        useLegacySql: false,
        ...(session === 'create' ? { createSession: true } : {}),
        ...(session !== undefined && session !== 'create'
          ? { connectionProperties: [{ key: 'session_id', value: session }] }
          : {}),
      },
    },
  })
  for (;;) {
    const [metadata] = await client.job(jobId, { location: 'EU' }).getMetadata()
    if (metadata.status.state === 'DONE') return metadata as Done
    await new Promise((r) => setTimeout(r, 5))
  }
}

const ids = async () =>
  (await emulator.query(PROJECT, 'SELECT id FROM d.t ORDER BY id', { location: 'EU' })).map((r) => r.id)

describe('BigQuery emulator: sessions (createSession, connectionProperties session_id)', () => {
  it('keeps variables, temporary tables and an open transaction across the jobs of a session; COMMIT in a later job applies it', async () => {
    const first = await run(
      'DECLARE base INT64 DEFAULT 10; CREATE TEMP TABLE extra AS SELECT 3 AS id; BEGIN TRANSACTION; INSERT INTO d.t SELECT id FROM extra;',
      'create',
    )
    expect(first.status.errorResult).toBeUndefined()
    const session = first.statistics.sessionInfo?.sessionId
    expect(session).toMatch(/\S+/)
    const second = await run('INSERT INTO d.t SELECT id + base FROM extra; COMMIT TRANSACTION;', session)
    expect(second.status.errorResult).toBeUndefined()
    expect(second.statistics.sessionInfo?.sessionId).toBe(session)
    expect(await ids()).toEqual(['1', '2', '3', '13'])
    // A job outside the session knows neither its variables nor its temporary tables.
    // (Refused when the job is inserted, as BigQuery refuses an invalid single query.)
    expect(await run('SELECT base').catch((e: Error) => e.message)).toMatch(/Unrecognized name: base/)
  })

  it('ROLLBACK in a later job undoes what the session’s transaction wrote in earlier jobs', async () => {
    const session = (await run('BEGIN TRANSACTION; DELETE FROM d.t WHERE TRUE;', 'create')).statistics
      .sessionInfo!.sessionId!
    expect((await run('ROLLBACK TRANSACTION;', session)).status.errorResult).toBeUndefined()
    expect(await ids()).toEqual(['1', '2'])
  })

  it('a job that fails inside the session’s transaction rolls it back: a later COMMIT finds none', async () => {
    const session = (await run('BEGIN TRANSACTION; DELETE FROM d.t WHERE id = 1;', 'create')).statistics
      .sessionInfo!.sessionId!
    const failed = await run("SELECT ERROR('boom');", session)
    expect(failed.status.errorResult?.message).toMatch(/boom/)
    expect(await ids()).toEqual(['1', '2'])
    expect((await run('COMMIT TRANSACTION;', session)).status.errorResult?.message).toMatch(
      /no active transaction/,
    )
  })

  it('CALL BQ.ABORT_SESSION() ends the session and rolls back its open transaction; its id is then refused', async () => {
    const session = (await run('BEGIN TRANSACTION; DELETE FROM d.t WHERE TRUE;', 'create')).statistics
      .sessionInfo!.sessionId!
    expect((await run('CALL BQ.ABORT_SESSION();', session)).status.errorResult).toBeUndefined()
    expect(await ids()).toEqual(['1', '2'])
    const after = await client
      .createJob({
        location: 'EU',
        configuration: {
          query: {
            query: 'SELECT 1',
            useLegacySql: false,
            connectionProperties: [{ key: 'session_id', value: session }],
          },
        },
      })
      .catch((e: unknown) => e as { code?: number; errors?: { reason?: string }[] })
    expect([
      (after as { code?: number }).code,
      (after as { errors?: { reason?: string }[] }).errors?.[0]?.reason,
    ]).toEqual([400, 'invalidQuery'])
  })
})
