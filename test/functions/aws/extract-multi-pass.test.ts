import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { LockHeldError } from '../../../lib/core/errors.ts'
import { buildAwsDeps, type AwsDeps } from '../../../lib/runtime/aws-deps.ts'
import { createExtractHandler, createMergeHandler } from '../../../functions/shared/handlers.ts'
import type { ExtractOutput } from '../../../functions/shared/events.ts'
import { startDynalite, type DynaliteHandle } from '../../support/aws/dynalite.ts'
import {
  captureStdout,
  fakeContext,
  makeSandbox,
  useEmulatorCredentials,
  type FunctionSandbox,
} from '../../support/aws/lambda.ts'
import { startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'
import { PG_URL, PgScratch, postgresReachable } from '../../integration/sources/support/db-services.ts'

const available = await postgresReachable()

/**
 * The extract function on a table larger than one invocation can read: S3 on s3rver, state on dynalite, the
 * source on the real PostgreSQL, the warehouse on DuckDB. The Lambda context says the time is almost up, so
 * every pass reads one key range (100 rows) and hands over to the next, as the state machine's loop would.
 */
describe.skipIf(!available)('extract function: an extract continued over several invocations', () => {
  let s3: S3rverHandle
  let dynamo: DynaliteHandle
  let pg: PgScratch
  const opened: AwsDeps[] = []

  beforeAll(async () => {
    useEmulatorCredentials()
    ;[s3, dynamo, pg] = await Promise.all([startS3rver(), startDynalite(), PgScratch.create()])
    await pg.sql(`CREATE TABLE ${pg.schema}.items (id BIGINT PRIMARY KEY, name TEXT NOT NULL)`)
    await pg.sql(`INSERT INTO ${pg.schema}.items SELECT g, 'n' || g FROM generate_series(1, 450) AS g`)
  })
  afterEach(async () => {
    for (const deps of opened.splice(0)) await deps.close()
  })
  afterAll(async () => {
    await Promise.all([s3?.stop(), dynamo?.stop(), pg?.drop()])
  })

  async function sandbox(): Promise<{ box: FunctionSandbox; deps: AwsDeps }> {
    const box = await makeSandbox(s3, dynamo)
    await writeFile(
      join(box.dir, 'dimsync.yaml'),
      [
        'version: 1',
        'warehouse: { type: duckdb, path: unused.duckdb }',
        'tables:',
        '  - name: items',
        `    source: { type: postgres, url_env: DB_URL, table: ${pg.schema}.items, slice_rows: 100 }`,
        '    target: dim_items',
        '    key: id',
        '    tracked: [name]',
        '    deletes: invalidate',
        '',
      ].join('\n'),
    )
    const deps = await buildAwsDeps({ ...box.env, DB_URL: PG_URL })
    opened.push(deps)
    return { box, deps }
  }

  /**
   * A Lambda context 30 s from its deadline, less than the extract's reserve: a pass reads one round of key
   * ranges, then stops (middy itself gives up at the deadline, so it must lie ahead).
   */
  const nearTheLimit = () => {
    const deadline = Date.now() + 30_000
    return { ...fakeContext(), getRemainingTimeInMillis: () => deadline - Date.now() }
  }

  async function countRows(box: FunctionSandbox, deps: AwsDeps): Promise<Record<string, unknown>[]> {
    await (await deps.warehouse()).close()
    opened.splice(opened.indexOf(deps), 1)
    const db = await DuckDBInstance.create(box.duckdbPath)
    const c = await db.connect()
    try {
      const result = await c.runAndReadAll(
        `SELECT COUNT(*)::INTEGER AS versions, COUNT(DISTINCT id)::INTEGER AS keys, MIN(id)::INTEGER AS lo,
                MAX(id)::INTEGER AS hi, COUNT(*) FILTER (WHERE name <> 'n' || id)::INTEGER AS wrong
         FROM dim_items WHERE valid_to IS NULL`,
      )
      return result.getRowObjectsJson() as Record<string, unknown>[]
    } finally {
      c.closeSync()
      db.closeSync()
    }
  }

  it('passes return complete: false with resume until the last one; the merge then loads every row once', async () => {
    const { box, deps } = await sandbox()
    const extract = createExtractHandler({ deps: async () => deps })
    const outputs: ExtractOutput[] = []
    let output = (await captureStdout(() => extract({ table: 'items' }, nearTheLimit()))).result
    outputs.push(output)
    while (!output.complete) {
      const { table, batchId, resume } = output
      output = (await captureStdout(() => extract({ table, batchId, resume }, nearTheLimit()))).result
      outputs.push(output)
    }
    expect(outputs.map((o) => [o.complete, o.resume?.pass, o.rows])).toEqual([
      [false, 1, 90],
      [false, 2, 180],
      [false, 3, 270],
      [false, 4, 360],
      [true, undefined, 450],
    ])
    expect(new Set(outputs.map((o) => o.batchId)).size).toBe(1)

    const merged = await captureStdout(() =>
      createMergeHandler({ deps: async () => deps })(output, fakeContext()),
    )
    expect(merged.result).toMatchObject({ status: 'merged', counts: { insertedVersions: 450 } })
    expect(await countRows(box, deps)).toEqual([{ versions: 450, keys: 450, lo: 1, hi: 450, wrong: 0 }])
    expect((await s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket }))).Contents ?? []).toEqual(
      [],
    )
  })

  it('between two passes the table stays locked: another extract of it waits (LockHeldError)', async () => {
    const { deps } = await sandbox()
    const extract = createExtractHandler({ deps: async () => deps })
    const first = (await captureStdout(() => extract({ table: 'items' }, nearTheLimit()))).result
    expect(first.complete).toBe(false)
    const other = await captureStdout(() => extract({ table: 'items' }, fakeContext())).catch(
      (e: unknown) => e,
    )
    expect(other).toBeInstanceOf(Error)
    expect((other as Error).name).toBe('LockHeldError')
    expect((other as LockHeldError).message).toMatch(/table items is locked by run run-.+\/extract/)
    const next = (
      await captureStdout(() =>
        extract({ table: 'items', batchId: first.batchId, resume: first.resume }, fakeContext()),
      )
    ).result
    expect(next).toMatchObject({ batchId: first.batchId, complete: true, rows: 450 })
  })

  it('a retried last pass whose answer was lost returns the committed batch instead of failing', async () => {
    const { deps } = await sandbox()
    const extract = createExtractHandler({ deps: async () => deps })
    const first = (await captureStdout(() => extract({ table: 'items' }, nearTheLimit()))).result
    const event = { table: 'items', batchId: first.batchId, resume: first.resume }
    const last = (await captureStdout(() => extract(event, fakeContext()))).result
    const retried = (await captureStdout(() => extract(event, fakeContext()))).result
    expect(retried).toEqual(last)
    expect(last).toMatchObject({ complete: true, rows: 450 })
  })

  it('a resume event without its batch id, or for a batch that has no saved progress, is refused clearly', async () => {
    const { deps } = await sandbox()
    const extract = createExtractHandler({ deps: async () => deps })
    await expect(
      captureStdout(() => extract({ table: 'items', resume: { pass: 1 } }, fakeContext())),
    ).rejects.toThrow('extract event: batchId: is required')
    await expect(
      captureStdout(() => extract({ table: 'items', batchId: 'b1', resume: { pass: 'x' } }, fakeContext())),
    ).rejects.toThrow('extract event: resume: expected { "pass": <a whole number from 1> }')
    await expect(
      captureStdout(() =>
        extract(
          { table: 'items', batchId: '20240101T000000.000Z-abcdef', resume: { pass: 1 } },
          fakeContext(),
        ),
      ),
    ).rejects.toThrow(/table items: batch 20240101T000000\.000Z-abcdef has no saved progress/)
  })
})
