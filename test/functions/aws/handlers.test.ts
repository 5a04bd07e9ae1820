import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import { ConfigError, LeaseLostError, LockHeldError, StagingError } from '../../../lib/core/errors.ts'
import { buildAwsDeps, type AwsDeps } from '../../../lib/runtime/aws-deps.ts'
import type { StateStore } from '../../../lib/ports/state-store.ts'
import type { StagedExtractOutput } from '../../../functions/shared/events.ts'
import { createExtractHandler, createMergeHandler } from '../../../functions/shared/handlers.ts'
import type { FunctionDeps } from '../../../functions/shared/function-deps.ts'
import { startDynalite, type DynaliteHandle } from '../../support/aws/dynalite.ts'
import {
  captureStdout,
  fakeContext,
  makeSandbox,
  useEmulatorCredentials,
  type FunctionSandbox,
  stagingExtract,
} from '../../support/aws/lambda.ts'
import { startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'

let s3: S3rverHandle
let dynamo: DynaliteHandle
const opened: AwsDeps[] = []

beforeAll(async () => {
  useEmulatorCredentials()
  ;[s3, dynamo] = await Promise.all([startS3rver(), startDynalite()])
})
afterEach(async () => {
  for (const deps of opened.splice(0)) await deps.close()
})
afterAll(async () => {
  await Promise.all([s3?.stop(), dynamo?.stop()])
})

async function sandboxWithDeps(): Promise<{ box: FunctionSandbox; deps: AwsDeps }> {
  const box = await makeSandbox(s3, dynamo)
  const deps = await buildAwsDeps(box.env)
  opened.push(deps)
  return { box, deps }
}

/** Reads the dimension straight from the DuckDB file (after the warehouse was closed). */
async function dimension(deps: AwsDeps, box: FunctionSandbox): Promise<Record<string, unknown>[]> {
  await (await deps.warehouse()).close()
  opened.splice(opened.indexOf(deps), 1)
  const db = await DuckDBInstance.create(box.duckdbPath)
  const c = await db.connect()
  try {
    const tables = await c.runAndReadAll(
      `SELECT table_name FROM information_schema.tables WHERE table_name = 'dim_customer'`,
    )
    if (tables.getRowObjects().length === 0) return []
    const result = await c.runAndReadAll(
      `SELECT customer_id, name, region, valid_to IS NULL AS current FROM dim_customer ORDER BY customer_id, valid_from`,
    )
    return result.getRowObjectsJson() as Record<string, unknown>[]
  } finally {
    c.closeSync()
    db.closeSync()
  }
}

/** A StateStore wrapper that runs `hook` before delegating selected calls (pauses, simulated crashes). */
function hookedState(
  state: StateStore,
  hooks: Partial<Record<'assertLeaseHeld' | 'commitWatermark', () => Promise<void>>>,
): StateStore {
  return new Proxy(state, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown
      if (typeof value !== 'function') return value
      const hook = hooks[property as keyof typeof hooks]
      return async (...args: unknown[]) => {
        if (hook) await hook()
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
}

function gate(): { wait: () => Promise<void>; open: () => void; reached: Promise<void> } {
  let open!: () => void
  let reach!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  const reached = new Promise<void>((resolve) => (reach = resolve))
  return {
    wait: async () => {
      reach()
      await opened
    },
    open,
    reached,
  }
}

/**
 * Stages a batch, then starts its merge with a state store that stops it inside the transaction, just before
 * COMMIT (its fencing check), until `paused.open()`. `merge` settles with the result or the error.
 */
async function mergePausedBeforeCommit(deps: AwsDeps) {
  const staged = (
    await captureStdout(() =>
      stagingExtract({ deps: async () => deps })({ table: 'customers' }, fakeContext()),
    )
  ).result
  const paused = gate()
  const slowDeps: FunctionDeps = { ...deps, state: hookedState(deps.state, { assertLeaseHeld: paused.wait }) }
  const merge = captureStdout(() => createMergeHandler({ deps: async () => slowDeps })(staged, fakeContext()))
  return { staged, paused, merge }
}

describe('extract and merge functions (s3rver + dynalite + DuckDB)', () => {
  it('the exported handlers stage a batch, merge it, record the run, log each step and emit metrics', async () => {
    const box = await makeSandbox(s3, dynamo)
    Object.assign(process.env, box.env)
    const { handler: extract } = await import('../../../functions/extract/index.ts')
    const { handler: merge } = await import('../../../functions/merge/index.ts')

    const extracted = await captureStdout(() =>
      extract({ table: 'customers', reason: 'first load' }, fakeContext('extract')),
    )
    const out = extracted.result as StagedExtractOutput
    expect(out).toEqual({
      table: 'customers',
      batchId: expect.stringMatching(/^\d{8}T/),
      rows: 3,
      bytes: expect.any(Number),
      complete: true,
    })
    expect(out.bytes).toBeGreaterThan(0)
    const keys = await s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket }))
    expect((keys.Contents ?? []).map((o) => o.Key).sort()).toEqual([
      `staging/customers/${out.batchId}/_manifest.json`,
      `staging/customers/${out.batchId}/part-00000.parquet`,
    ])
    const staged = extracted.lines.find((l) => (l as { message?: string }).message === 'batch staged')
    expect(staged).toMatchObject({
      level: 'INFO',
      service: 'dimsync',
      table: 'customers',
      batchId: out.batchId,
      runId: `run-${out.batchId}`,
      reason: 'first load',
      rows: 3,
      function_name: 'extract',
    })
    const emf = extracted.lines.find((l) => '_aws' in (l as object)) as Record<string, unknown>
    expect(emf).toMatchObject({ table: 'customers', RowsExtracted: 3, BytesStaged: out.bytes })

    const merged = await captureStdout(() => merge(out, fakeContext('merge')))
    expect(merged.result).toMatchObject({
      table: 'customers',
      batchId: out.batchId,
      status: 'merged',
      watermark: 'none',
      counts: { insertedVersions: 3, closedVersions: 0, deletedKeys: 0 },
    })
    const steps = merged.lines.map((l) => (l as { step?: string }).step).filter(Boolean)
    expect(steps).toEqual(expect.arrayContaining(['lock', 'merge', 'watermark', 'record']))
    for (const line of merged.lines.filter((l) => (l as { level?: string }).level)) {
      expect(line).toMatchObject({ table: 'customers', batchId: out.batchId, runId: `run-${out.batchId}` })
    }
    const mergeEmf = merged.lines.find((l) => '_aws' in (l as object) && 'VersionsInserted' in (l as object))
    expect(mergeEmf).toMatchObject({
      VersionsInserted: 3,
      VersionsClosed: 0,
      KeysDeleted: 0,
      UnchangedEvents: 0,
    })

    // The staged batch is gone; a retried invocation (lost answer) is a no-op that says so.
    expect((await s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket }))).Contents ?? []).toEqual(
      [],
    )
    const retried = await captureStdout(() => merge(out, fakeContext('merge')))
    expect(retried.result).toMatchObject({ status: 'already-applied' })

    const deps = await buildAwsDeps(box.env)
    try {
      const [run] = await deps.state.listRuns('customers', 5)
      expect(run).toMatchObject({
        runId: `run-${out.batchId}`,
        status: 'succeeded',
        batchId: out.batchId,
        rowsExtracted: 3,
        counts: { insertedVersions: 3 },
      })
    } finally {
      await deps.close()
    }
  })

  it('refuses invalid events with one error naming the field and what was expected', async () => {
    const extract = stagingExtract({ deps: () => Promise.reject(new Error('not reached')) })
    const merge = createMergeHandler({ deps: () => Promise.reject(new Error('not reached')) })
    const quiet = <T>(work: () => Promise<T>) => captureStdout(work).catch((e: unknown) => Promise.reject(e))
    await expect(quiet(() => extract({}, fakeContext()))).rejects.toThrow(
      'extract event: table: is required (a table name from dimsync.yaml, e.g. "customers")',
    )
    await expect(quiet(() => extract({ table: 'customers', mode: 'delta' }, fakeContext()))).rejects.toThrow(
      'extract event: mode: expected "full" or "incremental" (or no mode), got "delta"',
    )
    await expect(quiet(() => extract('customers', fakeContext()))).rejects.toBeInstanceOf(ConfigError)
    await expect(quiet(() => merge({ table: 'customers' }, fakeContext()))).rejects.toThrow(
      /^merge event: batchId: is required \(the batch id returned by the extract/,
    )
    await expect(quiet(() => merge({ table: '../etc', batchId: 'b' }, fakeContext()))).rejects.toThrow(
      'merge event: table: expected a table name from dimsync.yaml, e.g. "customers", got "../etc"',
    )
  })

  it('an unknown table, and incremental on a full table, are refused naming the table', async () => {
    const { deps } = await sandboxWithDeps()
    const extract = stagingExtract({ deps: async () => deps })
    await expect(captureStdout(() => extract({ table: 'suppliers' }, fakeContext()))).rejects.toThrow(
      /table "suppliers" is not configured \(tables: customers\)/,
    )
    await expect(
      captureStdout(() => extract({ table: 'customers', mode: 'incremental' }, fakeContext())),
    ).rejects.toThrow(/table customers is configured for full extracts/)
  })

  it('two merges of the same table at once: exactly one commits, the other meets the lock, no duplicate versions', async () => {
    const { box, deps } = await sandboxWithDeps()
    const { staged, paused, merge: first } = await mergePausedBeforeCommit(deps)
    await paused.reached // the first merge is inside its transaction, just before COMMIT
    const second = await captureStdout(() =>
      createMergeHandler({ deps: async () => deps })(staged, fakeContext()),
    ).catch((e: unknown) => e)
    expect(second).toBeInstanceOf(LockHeldError)
    expect((second as LockHeldError).retryable).toBe(true)
    expect((second as Error).message).toMatch(
      new RegExp(`table customers is locked by run run-${staged.batchId}/merge/`),
    )
    paused.open()
    expect((await first).result).toMatchObject({ status: 'merged', counts: { insertedVersions: 3 } })
    // The scheduler retries the loser: it finds the batch applied.
    const retry = await captureStdout(() =>
      createMergeHandler({ deps: async () => deps })(staged, fakeContext()),
    )
    expect(retry.result.status).toBe('already-applied')
    expect(await dimension(deps, box)).toEqual([
      { customer_id: '1', name: 'Ada', region: 'north', current: true },
      { customer_id: '2', name: 'Bob', region: 'south', current: true },
      { customer_id: '3', name: 'Cy', region: 'east', current: true },
    ])
  })

  it('a batch whose merge never ran is merged first, in order, by the merge of the next batch', async () => {
    const { box, deps } = await sandboxWithDeps()
    const extract = (container: AwsDeps) =>
      captureStdout(() =>
        stagingExtract({ deps: async () => container })({ table: 'customers' }, fakeContext()),
      )
    const left = (await extract(deps)).result // its merge failed or never ran
    await box.writeCustomers(['1,Ada,west', '2,Bob,south', '3,Cy,east'])
    // The lease its extract handed over to its run for the merge has expired when the next extract starts.
    const later = await buildAwsDeps(box.env, {
      clock: () => new Date(Date.now() + deps.settings.handOverTtlMs + 1000),
    })
    opened.push(later)
    const next = (await extract(later)).result
    const merged = await captureStdout(() =>
      createMergeHandler({ deps: async () => deps })(next, fakeContext()),
    )
    expect(merged.result).toMatchObject({
      status: 'merged',
      counts: { insertedVersions: 1, closedVersions: 1 },
    })
    const resumed = merged.lines.find((l) => (l as { step?: string }).step === 'resume')
    expect(resumed).toMatchObject({ resumedBatchId: left.batchId, status: 'merged' })
    expect((await s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket }))).Contents ?? []).toEqual(
      [],
    )
    expect(await dimension(deps, box)).toEqual([
      { customer_id: '1', name: 'Ada', region: 'north', current: false },
      { customer_id: '1', name: 'Ada', region: 'west', current: true },
      { customer_id: '2', name: 'Bob', region: 'south', current: true },
      { customer_id: '3', name: 'Cy', region: 'east', current: true },
    ])
  })

  it('a merge whose login was refused after a rotation keeps the table for its retry: a start in between is skipped', async () => {
    const { deps } = await sandboxWithDeps()
    const staged = (
      await captureStdout(() =>
        stagingExtract({ deps: async () => deps })({ table: 'customers' }, fakeContext()),
      )
    ).result
    const refusedLogin: FunctionDeps = {
      ...deps,
      warehouse: () => Promise.reject(new Error('invalid_grant: Invalid JWT Signature.')),
      refreshSecret: () => Promise.resolve({ secret: 'dimsync/bigquery', rotated: true }),
    }
    const refused = await captureStdout(() =>
      createMergeHandler({ deps: async () => refusedLogin })(staged, fakeContext()),
    ).catch((e: unknown) => e as Error)
    expect(refused).toMatchObject({
      name: 'RetryableError',
      message: expect.stringMatching(/had been rotated/),
    })

    const scheduled = await captureStdout(() =>
      createExtractHandler({ deps: async () => deps })(
        { table: 'customers', reason: 'schedule', whenBusy: 'skip' },
        fakeContext(),
      ),
    )
    expect(scheduled.result).toMatchObject({ skipped: true, heldBy: `run-${staged.batchId}` })
    const retried = await captureStdout(() =>
      createMergeHandler({ deps: async () => deps })(staged, fakeContext()),
    )
    expect(retried.result).toMatchObject({ status: 'merged', counts: { insertedVersions: 3 } })
  })

  it('an expired lease taken over by a new owner: the old owner fails its fencing check and rolls back', async () => {
    const { box, deps } = await sandboxWithDeps()
    const { staged, paused, merge } = await mergePausedBeforeCommit(deps)
    const old = merge.catch((e: unknown) => e)
    await paused.reached
    // The old owner stalls past its TTL; a new run takes the expired lease over with a higher token.
    const later = new Date(Date.now() + deps.settings.leaseTtlMs + 1000)
    const intruder = await deps.state.acquireLease('customers', 'run-new-owner', 60_000, later)
    paused.open()
    const error = await old
    expect(error).toBeInstanceOf(LeaseLostError)
    expect((error as Error).message).toMatch(/was lost: it is now held by run run-new-owner \(token \d+\)/)
    expect(intruder.token).toBeGreaterThan(1)
    // Nothing was applied, and the run says why.
    const [run] = await deps.state.listRuns('customers', 1)
    expect(run).toMatchObject({ status: 'failed', error: expect.stringMatching(/lease .* was lost/) })
    // The new owner (here: after releasing, the next merge) applies the batch once.
    await deps.state.releaseLease(intruder)
    const again = await captureStdout(() =>
      createMergeHandler({ deps: async () => deps })(staged, fakeContext()),
    )
    expect(again.result).toMatchObject({ status: 'merged', counts: { insertedVersions: 3 } })
    expect(await dimension(deps, box)).toHaveLength(3)
  })

  it('a snapshot extracted again at the time of a merged one: the same content is already applied, another is refused and removed, and the next merge goes on', async () => {
    const { box, deps } = await sandboxWithDeps()
    const at = new Date()
    const run = async (clock: () => Date) => {
      const fixed: FunctionDeps = { ...deps, clock }
      const staged = (
        await captureStdout(() =>
          stagingExtract({ deps: async () => fixed })({ table: 'customers' }, fakeContext()),
        )
      ).result
      return await captureStdout(() => createMergeHandler({ deps: async () => fixed })(staged, fakeContext()))
    }
    const stagedObjects = async () =>
      (await s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket }))).Contents ?? []
    expect((await run(() => at)).result).toMatchObject({ status: 'merged' })
    expect((await run(() => at)).result).toMatchObject({ status: 'already-applied' })
    expect(await stagedObjects()).toEqual([])

    await box.writeCustomers(['1,Ada,west', '2,Bob,south', '3,Cy,east'])
    await expect(run(() => at)).rejects.toThrow(
      /but a different snapshot at that extraction time is already merged/,
    )
    expect(await stagedObjects()).toEqual([])
    const later = new Date(at.getTime() + 60_000)
    expect((await run(() => later)).result).toMatchObject({
      status: 'merged',
      counts: { insertedVersions: 1, closedVersions: 1 },
    })
  })

  it('a crash between merge commit and watermark update: the rerun skips the applied batch and advances the watermark', async () => {
    const { box, deps } = await sandboxWithDeps()
    const batchId = '20240301T100000.000Z-abc123'
    const watermark = { cursor: '2024-03-01T09:59:59.123456Z', key: [3] }
    await stageIncrementalBatch(deps, batchId, watermark)
    let crashes = 1
    const crashing: FunctionDeps = {
      ...deps,
      state: hookedState(deps.state, {
        commitWatermark: async () => {
          if (crashes-- > 0) throw new Error('simulated crash after COMMIT')
        },
      }),
    }
    await expect(
      captureStdout(() =>
        createMergeHandler({ deps: async () => crashing })({ table: 'customers', batchId }, fakeContext()),
      ),
    ).rejects.toThrow('simulated crash after COMMIT')
    expect(await deps.state.getWatermark('customers')).toBeUndefined()

    const rerun = await captureStdout(() =>
      createMergeHandler({ deps: async () => crashing })({ table: 'customers', batchId }, fakeContext()),
    )
    expect(rerun.result).toMatchObject({ status: 'already-applied', watermark: 'advanced' })
    // The committed watermark names the batch whose merge it follows (checked against the warehouse's ledger).
    expect(await deps.state.getWatermark('customers')).toEqual({ ...watermark, batchId })
    const [run] = await deps.state.listRuns('customers', 1)
    expect(run).toMatchObject({
      runId: `run-${batchId}`,
      status: 'succeeded',
      startedAt: '2024-03-01T10:00:00.000Z',
    })
    expect(await deps.staging.listBatches('customers')).toEqual([])
    expect(await dimension(deps, box)).toHaveLength(2)
  })

  for (const how of ['delete', 'corrupt'] as const) {
    it(`a batch with a ${how === 'delete' ? 'missing part' : 'bad checksum'} is refused and nothing is merged`, async () => {
      const { box, deps } = await sandboxWithDeps()
      const staged = (
        await captureStdout(() =>
          stagingExtract({ deps: async () => deps })({ table: 'customers' }, fakeContext()),
        )
      ).result
      const Key = `staging/customers/${staged.batchId}/part-00000.parquet`
      if (how === 'delete') await s3.client.send(new DeleteObjectCommand({ Bucket: box.bucket, Key }))
      else {
        const body = await s3.client.send(new GetObjectCommand({ Bucket: box.bucket, Key }))
        const bytes = Buffer.from(await body.Body!.transformToByteArray())
        bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0x01
        await s3.client.send(new PutObjectCommand({ Bucket: box.bucket, Key, Body: bytes }))
      }
      const error = await captureStdout(() =>
        createMergeHandler({ deps: async () => deps })(staged, fakeContext()),
      ).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StagingError)
      expect((error as Error).message).toMatch(
        how === 'delete'
          ? /part part-00000\.parquet is missing/
          : /part part-00000\.parquet checksum mismatch/,
      )
      const [run] = await deps.state.listRuns('customers', 1)
      expect(run).toMatchObject({ status: 'failed', batchId: staged.batchId })
      expect(await dimension(deps, box)).toEqual([])
    })
  }
})

/** Stages an incremental batch (two rows) with a watermark candidate, as an incremental source would. */
async function stageIncrementalBatch(
  deps: AwsDeps,
  batchId: string,
  watermarkCandidate: { cursor: string; key: number[] },
): Promise<void> {
  const writer = await deps.staging.beginBatch('customers', batchId)
  const db = await DuckDBInstance.create(':memory:')
  const c = await db.connect()
  const path = `${writer.scratchDir}/rows.parquet`
  try {
    await c.run(
      `COPY (SELECT * FROM (VALUES (1::BIGINT, 'Ada', 'north'), (3::BIGINT, 'Cy', 'east')) t(customer_id, name, region)) TO '${path}' (FORMAT parquet)`,
    )
  } finally {
    c.closeSync()
    db.closeSync()
  }
  await writer.addPart(path, 2)
  await writer.commit({
    table: 'customers',
    batchId,
    extractedAt: '2024-03-01T10:00:00.000Z',
    mode: 'incremental',
    rowCount: 2,
    columns: [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'name', type: 'VARCHAR' },
      { name: 'region', type: 'VARCHAR' },
    ],
    watermarkCandidate,
    sourceDescription: 'test rows',
  })
}
