import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { FunctionDeps } from '../../../functions/shared/function-deps.ts'
import { SourceError, type LockHeldError } from '../../../lib/core/errors.ts'
import { createMergeHandler } from '../../../functions/shared/handlers.ts'
import type { StagedExtractOutput } from '../../../functions/shared/events.ts'
import { captureStdout, fakeContext, nearTheDeadline, stagingExtract } from '../../support/aws/lambda.ts'
import { PostgresFunctionEnv } from '../../support/aws/postgres-functions.ts'
import { postgresReachable } from '../../integration/sources/support/db-services.ts'

const available = await postgresReachable()

/**
 * The extract function on a table larger than one invocation can read: S3 on s3rver, state on dynalite, the
 * source on the real PostgreSQL, the warehouse on DuckDB. The Lambda context says the time is almost up, so
 * every pass reads one key range (90 rows) and hands over to the next, as the state machine's loop would.
 */
describe.skipIf(!available)('extract function: an extract continued over several invocations', () => {
  let env: PostgresFunctionEnv
  let ITEMS: string[]

  beforeAll(async () => {
    env = await PostgresFunctionEnv.start([{ name: 'items', rows: 450, prefix: 'n' }])
    ITEMS = [
      '  - name: items',
      `    source: { type: postgres, url_env: DB_URL, table: ${env.table('items')}, slice_rows: 100 }`,
      '    target: dim_items',
      '    key: id',
      '    tracked: [name]',
      '    deletes: invalidate',
    ]
  })
  afterEach(async () => {
    await env?.closeSandboxes()
  })
  afterAll(async () => {
    await env?.stop()
  })

  /** Calls the extract with each answer's batchId and resume until it is complete; returns every answer. */
  async function extractToTheEnd(
    extract: ReturnType<typeof stagingExtract>,
    first: StagedExtractOutput,
  ): Promise<StagedExtractOutput[]> {
    const outputs = [first]
    let output = first
    while (!output.complete) {
      const { table, batchId, resume } = output
      output = (await captureStdout(() => extract({ table, batchId, resume }, nearTheDeadline()))).result
      outputs.push(output)
    }
    return outputs
  }

  it('passes return complete: false with resume until the last one; the merge then loads every row once', async () => {
    const { box, deps } = await env.sandbox(ITEMS)
    const extract = stagingExtract({ deps: async () => deps })
    const first = (await captureStdout(() => extract({ table: 'items' }, nearTheDeadline()))).result
    const outputs = await extractToTheEnd(extract, first)
    const output = outputs.at(-1)!
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
    expect(await env.currentVersions(box, deps, 'dim_items', 'n')).toEqual([
      { versions: 450, keys: 450, lo: 1, hi: 450, wrong: 0 },
    ])
    expect(
      (await env.s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket }))).Contents ?? [],
    ).toEqual([])
  })

  it('between two passes the table stays locked: another extract of it waits (LockHeldError)', async () => {
    const { deps } = await env.sandbox(ITEMS)
    const extract = stagingExtract({ deps: async () => deps })
    const first = (await captureStdout(() => extract({ table: 'items' }, nearTheDeadline()))).result
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

  it('a resumed pass that fails with a retryable error keeps the table: another run meets the lock, the retry continues', async () => {
    const { box, deps } = await env.sandbox(ITEMS)
    let failNext = true
    // The source connection drops during the second pass (a retryable SourceError).
    const flaky: FunctionDeps = {
      ...deps,
      openSource: (table) => {
        const source = deps.openSource(table)
        if (!failNext) return source
        failNext = false
        return {
          describe: (t) => source.describe(t),
          extract: () =>
            Promise.reject(new SourceError('items', 'table items: connection dropped', { retryable: true })),
          close: () => source.close(),
        }
      },
    }
    const extract = stagingExtract({ deps: async () => deps })
    const first = (await captureStdout(() => extract({ table: 'items' }, nearTheDeadline()))).result
    const event = { table: 'items', batchId: first.batchId, resume: first.resume }
    const failed = await captureStdout(() =>
      stagingExtract({ deps: async () => flaky })(event, fakeContext()),
    ).catch((e: unknown) => e as Error)
    expect((failed as Error).name).toBe('RetryableError')

    // While the state machine waits to retry, the lease is still handed over: no other run takes the table.
    const other = await captureStdout(() => extract({ table: 'items' }, fakeContext())).catch(
      (e: unknown) => e as Error,
    )
    expect((other as Error).name).toBe('LockHeldError')

    const retried = (await captureStdout(() => extract(event, fakeContext()))).result
    expect(retried).toMatchObject({ batchId: first.batchId, complete: true, rows: 450 })
    await captureStdout(() => createMergeHandler({ deps: async () => deps })(retried, fakeContext()))
    expect(await env.currentVersions(box, deps, 'dim_items', 'n')).toEqual([
      { versions: 450, keys: 450, lo: 1, hi: 450, wrong: 0 },
    ])
  })

  it('a retried last pass whose answer was lost returns the committed batch instead of failing', async () => {
    const { deps } = await env.sandbox(ITEMS)
    const extract = stagingExtract({ deps: async () => deps })
    const first = (await captureStdout(() => extract({ table: 'items' }, nearTheDeadline()))).result
    const event = { table: 'items', batchId: first.batchId, resume: first.resume }
    const last = (await captureStdout(() => extract(event, fakeContext()))).result
    const retried = (await captureStdout(() => extract(event, fakeContext()))).result
    expect(retried).toEqual(last)
    expect(last).toMatchObject({ complete: true, rows: 450 })
  })

  it('a resume event without its batch id, or for a batch that has no saved progress, is refused clearly', async () => {
    const { deps } = await env.sandbox(ITEMS)
    const extract = stagingExtract({ deps: async () => deps })
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

  it('a pass called again after its answer was lost continues from the saved checkpoint: no row is staged twice', async () => {
    const { box, deps } = await env.sandbox(ITEMS)
    const extract = stagingExtract({ deps: async () => deps })
    const first = (await captureStdout(() => extract({ table: 'items' }, nearTheDeadline()))).result
    const event = { table: 'items', batchId: first.batchId, resume: first.resume }
    const second = (await captureStdout(() => extract(event, nearTheDeadline()))).result
    expect(second).toMatchObject({ complete: false, resume: { pass: 2 }, rows: 180 })
    // The state machine never saw `second` and calls the same pass again: it goes on after pass 2.
    const again = (await captureStdout(() => extract(event, nearTheDeadline()))).result
    expect(again).toMatchObject({ batchId: first.batchId, complete: false, resume: { pass: 3 }, rows: 270 })
    const last = (await extractToTheEnd(extract, again)).at(-1)!
    expect(last).toMatchObject({ complete: true, rows: 450 })
    await captureStdout(() => createMergeHandler({ deps: async () => deps })(last, fakeContext()))
    expect(await env.currentVersions(box, deps, 'dim_items', 'n')).toEqual([
      { versions: 450, keys: 450, lo: 1, hi: 450, wrong: 0 },
    ])
  })

  it('an extract abandoned between passes (execution stopped) changes nothing; the next run reads everything and removes it', async () => {
    const { box, deps } = await env.sandbox(ITEMS)
    const first = (
      await captureStdout(() =>
        stagingExtract({ deps: async () => deps })({ table: 'items' }, nearTheDeadline()),
      )
    ).result
    expect(first.complete).toBe(false)
    // Two hours later: the lease it kept has expired, its suspended batch is older than the abandoned age.
    const later = await env.depsFor(box, { clock: () => new Date(Date.now() + 2 * 3_600_000) })
    expect(await later.staging.listBatches('items')).toEqual([])
    const next = await captureStdout(() =>
      stagingExtract({ deps: async () => later })({ table: 'items' }, fakeContext()),
    )
    expect(next.result).toMatchObject({ complete: true, rows: 450 })
    expect(next.result.batchId).not.toBe(first.batchId)
    expect(next.lines.find((l) => (l as { step?: string }).step === 'cleanup')).toMatchObject({
      removed: [first.batchId],
    })
    await captureStdout(() => createMergeHandler({ deps: async () => later })(next.result, fakeContext()))
    expect(await env.currentVersions(box, later, 'dim_items', 'n')).toEqual([
      { versions: 450, keys: 450, lo: 1, hi: 450, wrong: 0 },
    ])
  })
})
