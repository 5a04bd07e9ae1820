import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import type { BatchManifest } from '../../lib/core/batch.ts'
import { StagingError } from '../../lib/core/errors.ts'
import type { BatchCheckpoint, BatchWriter, StagingStore } from '../../lib/ports/staging-store.ts'

/**
 * What a staging store test needs besides the store: a way to damage a committed part behind the store's back
 * (the port has none, on purpose). Local: write the file; S3: put or delete the object.
 */
export interface StagingStoreFixture {
  readonly store: StagingStore
  /** Replaces the bytes of a committed part (`corrupt`) or deletes it (`delete`). */
  readonly damagePart: (
    table: string,
    batchId: string,
    partName: string,
    how: 'corrupt' | 'delete',
  ) => Promise<void>
  /** Names of the files (objects) directly in a batch's folder, sorted; the local scratch folder not included. */
  readonly batchFiles: (table: string, batchId: string) => Promise<string[]>
  readonly cleanup: () => Promise<void>
}

const TABLE = 'customers'
/** How far a file's modification time may lag behind Date.now() (the kernel stamps files with a coarse clock). */
const FILE_CLOCK_LAG_MS = 50

/**
 * Registers the behaviour every `StagingStore` must have. Call once per implementation with a factory that
 * returns a fresh, empty store.
 */
export function describeStagingStoreContract(
  name: string,
  makeStore: () => Promise<StagingStoreFixture>,
): void {
  describe(`StagingStore contract: ${name}`, () => {
    let fixture: StagingStoreFixture
    let store: StagingStore

    beforeEach(async () => {
      fixture = await makeStore()
      store = fixture.store
    })
    afterEach(async () => {
      await fixture.cleanup()
    })

    async function addBytes(writer: BatchWriter, bytes: Buffer, rows: number) {
      const path = join(writer.scratchDir, `tmp-${randomBytes(4).toString('hex')}.parquet`)
      await writeFile(path, bytes)
      return await writer.addPart(path, rows)
    }

    async function stage(batchId: string, extractedAt: string, parts: Buffer[] = [Buffer.from('p0')]) {
      const writer = await store.beginBatch(TABLE, batchId)
      for (const part of parts) await addBytes(writer, part, 1)
      return await writer.commit(manifestFor(batchId, extractedAt, parts.length))
    }

    /** Begins `batchId`, adds one part per text (rows = text length) and suspends it with `state`. */
    async function suspended(batchId: string, texts: string[], state: unknown = { next: texts.length }) {
      const writer = await store.beginBatch(TABLE, batchId)
      for (const text of texts) await addBytes(writer, Buffer.from(text), text.length)
      const checkpoint = await writer.suspend(state)
      return { writer, checkpoint }
    }

    /** The checkpoint a resume reads; the resumed writer is closed again, keeping the checkpoint. */
    async function peek(batchId: string): Promise<BatchCheckpoint> {
      const { writer, checkpoint } = await store.resumeBatch(TABLE, batchId)
      await writer.abort({ keepCheckpoint: true })
      return checkpoint
    }

    async function partFiles(batchId: string): Promise<string[]> {
      return (await fixture.batchFiles(TABLE, batchId)).filter((name) => name.startsWith('part-'))
    }

    async function readParts(batchId: string): Promise<string[]> {
      const opened = await store.openBatch(TABLE, batchId)
      try {
        return await Promise.all(opened.partPaths.map((path) => readFile(path, 'utf8')))
      } finally {
        await opened.release()
      }
    }

    async function failure(promise: Promise<unknown>): Promise<Error> {
      const error = await promise.then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(StagingError)
      return error as Error
    }

    it('addPart consumes the local file and names parts in order with size and sha256', async () => {
      const writer = await store.beginBatch(TABLE, 'b1')
      const path = join(writer.scratchDir, 'x.parquet')
      await writeFile(path, 'hello')
      const part = await writer.addPart(path, 5)
      expect(part).toEqual({
        name: 'part-00000.parquet',
        rows: 5,
        bytes: 5,
        sha256: '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
      })
      expect(existsSync(path)).toBe(false)
      const second = await addBytes(writer, Buffer.from('world!'), 2)
      expect(second.name).toBe('part-00001.parquet')
      await writer.abort()
    })

    it('a batch is invisible before commit and readable after it, parts in order', async () => {
      const writer = await store.beginBatch(TABLE, 'b1')
      await addBytes(writer, Buffer.from('first'), 1)
      await addBytes(writer, Buffer.from('second'), 1)
      expect(await store.listBatches(TABLE)).toEqual([])
      await expect(store.openBatch(TABLE, 'b1')).rejects.toThrow(StagingError)

      const manifest = await writer.commit(manifestFor('b1', '2024-01-01T00:00:00.000Z', 2))
      expect(manifest.formatVersion).toBe(1)
      expect(manifest.parts.map((p) => p.name)).toEqual(['part-00000.parquet', 'part-00001.parquet'])

      expect(await store.listBatches(TABLE)).toEqual([manifest])
      const opened = await store.openBatch(TABLE, 'b1')
      try {
        expect(opened.manifest).toEqual(manifest)
        expect(opened.partPaths).toHaveLength(2)
        expect(await readFile(opened.partPaths[0]!, 'utf8')).toBe('first')
        expect(await readFile(opened.partPaths[1]!, 'utf8')).toBe('second')
      } finally {
        await opened.release()
      }
    })

    it('keeps the manifest fields given at commit', async () => {
      const writer = await store.beginBatch(TABLE, 'b1')
      await addBytes(writer, Buffer.from('x'), 3)
      const given = {
        ...manifestFor('b1', '2024-05-06T07:08:09.123456Z', 1, 3),
        mode: 'incremental' as const,
        watermarkCandidate: {
          cursor: '2024-05-06T07:00:00.000001Z',
          key: [Number.MAX_SAFE_INTEGER, '9007199254740993'],
        },
        columns: [
          { name: 'id', type: 'BIGINT' },
          { name: 'updated_at', type: 'TIMESTAMP' },
        ],
      }
      await writer.commit(given)
      const [listed] = await store.listBatches(TABLE)
      expect(listed).toMatchObject(given)
    })

    it('a batch with no parts can be committed and opened', async () => {
      const writer = await store.beginBatch(TABLE, 'empty')
      await writer.commit(manifestFor('empty', '2024-01-01T00:00:00.000Z', 0))
      const opened = await store.openBatch(TABLE, 'empty')
      expect(opened.partPaths).toEqual([])
      await opened.release()
    })

    it('abort removes everything, is safe twice, and the batch id can be reused', async () => {
      const writer = await store.beginBatch(TABLE, 'b1')
      await addBytes(writer, Buffer.from('x'), 1)
      await writer.abort()
      await writer.abort()
      expect(await store.listBatches(TABLE)).toEqual([])
      await expect(store.openBatch(TABLE, 'b1')).rejects.toThrow(StagingError)
      expect(await store.removeAbandoned(TABLE, new Date(Date.now() + 3_600_000))).toEqual([])

      const again = await stage('b1', '2024-01-01T00:00:00.000Z')
      expect((await store.openBatch(TABLE, 'b1')).manifest).toEqual(again)
    })

    it('refuses to open a batch whose part checksum differs, naming the batch and the part', async () => {
      await stage('b1', '2024-01-01T00:00:00.000Z', [Buffer.from('aaaa'), Buffer.from('bbbb')])
      await fixture.damagePart(TABLE, 'b1', 'part-00001.parquet', 'corrupt')
      const error = await store.openBatch(TABLE, 'b1').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StagingError)
      expect((error as Error).message).toMatch(/b1/)
      expect((error as Error).message).toMatch(/part-00001\.parquet/)
    })

    it('refuses to open a batch with a missing part, naming the batch and the part', async () => {
      await stage('b1', '2024-01-01T00:00:00.000Z', [Buffer.from('aaaa'), Buffer.from('bbbb')])
      await fixture.damagePart(TABLE, 'b1', 'part-00000.parquet', 'delete')
      const error = await store.openBatch(TABLE, 'b1').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StagingError)
      expect((error as Error).message).toMatch(/b1/)
      expect((error as Error).message).toMatch(/part-00000\.parquet/)
    })

    it('opening an unknown batch is a StagingError naming it', async () => {
      await expect(store.openBatch(TABLE, 'nope')).rejects.toThrow(/nope/)
      await expect(store.openBatch(TABLE, 'nope')).rejects.toBeInstanceOf(StagingError)
    })

    describe('openBatchOnDemand (parts fetched when asked for)', () => {
      it('fetches the parts asked for, in the order asked, with the manifest sizes and names', async () => {
        const manifest = await stage('b1', '2024-01-01T00:00:00.000Z', [
          Buffer.from('first'),
          Buffer.from('second'),
          Buffer.from('third!!'),
        ])
        const batch = await store.openBatchOnDemand(TABLE, 'b1')
        expect(batch.manifest).toEqual(manifest)
        expect(batch.parts.bytes).toEqual([5, 6, 7])
        expect(batch.parts.names).toEqual(manifest.parts.map((part) => part.name))
        const local = await batch.parts.fetch([2, 0])
        try {
          expect(await Promise.all(local.paths.map((path) => readFile(path, 'utf8')))).toEqual([
            'third!!',
            'first',
          ])
        } finally {
          await local.release()
        }
      })

      it('a damaged or missing part fails its fetch only, naming the batch and the part', async () => {
        await stage('b1', '2024-01-01T00:00:00.000Z', [Buffer.from('aaaa'), Buffer.from('bbbb')])
        await fixture.damagePart(TABLE, 'b1', 'part-00001.parquet', 'corrupt')
        const batch = await store.openBatchOnDemand(TABLE, 'b1')
        const good = await batch.parts.fetch([0])
        expect(await readFile(good.paths[0]!, 'utf8')).toBe('aaaa')
        await good.release()
        const corrupt = await batch.parts.fetch([1]).catch((e: unknown) => e)
        expect(corrupt).toBeInstanceOf(StagingError)
        expect((corrupt as Error).message).toMatch(/b1: part part-00001\.parquet checksum mismatch/)
        await fixture.damagePart(TABLE, 'b1', 'part-00000.parquet', 'delete')
        const missing = await batch.parts.fetch([0]).catch((e: unknown) => e)
        expect(missing).toBeInstanceOf(StagingError)
        expect((missing as Error).message).toMatch(/b1: part part-00000\.parquet is missing/)
      })

      it('an uncommitted or unknown batch is a StagingError naming it', async () => {
        const writer = await store.beginBatch(TABLE, 'open')
        await addBytes(writer, Buffer.from('x'), 1)
        await expect(store.openBatchOnDemand(TABLE, 'open')).rejects.toThrow(/batch open is not committed/)
        await expect(store.openBatchOnDemand(TABLE, 'nope')).rejects.toBeInstanceOf(StagingError)
        await writer.abort()
      })
    })

    it('lists committed batches oldest extraction first, ties by batch id, per table', async () => {
      await stage('c', '2024-01-02T00:00:00.000Z')
      await stage('b', '2024-01-01T00:00:00.000500Z')
      await stage('a', '2024-01-02T00:00:00.000Z')
      await stage('z', '2024-01-01T00:00:00.000100Z')
      const other = await store.beginBatch('suppliers', 'x')
      await other.commit({ ...manifestFor('x', '2020-01-01T00:00:00.000Z', 0), table: 'suppliers' })
      const uncommitted = await store.beginBatch(TABLE, 'open')
      await addBytes(uncommitted, Buffer.from('x'), 1)

      expect((await store.listBatches(TABLE)).map((m) => m.batchId)).toEqual(['z', 'b', 'a', 'c'])
      expect((await store.listBatches('suppliers')).map((m) => m.batchId)).toEqual(['x'])
      expect(await store.listBatches('nobody')).toEqual([])
      await uncommitted.abort()
    })

    it('deleteBatch removes a committed batch and is a no-op for an unknown one', async () => {
      await stage('b1', '2024-01-01T00:00:00.000Z')
      await stage('b2', '2024-01-02T00:00:00.000Z')
      await store.deleteBatch(TABLE, 'b1')
      await store.deleteBatch(TABLE, 'b1')
      await store.deleteBatch(TABLE, 'never')
      expect((await store.listBatches(TABLE)).map((m) => m.batchId)).toEqual(['b2'])
      await expect(store.openBatch(TABLE, 'b1')).rejects.toThrow(StagingError)
    })

    it('removeAbandoned deletes only uncommitted batches older than the given time', async () => {
      await stage('done', '2024-01-01T00:00:00.000Z')
      const writer = await store.beginBatch(TABLE, 'crashed')
      await addBytes(writer, Buffer.from('x'), 1)

      expect(await store.removeAbandoned(TABLE, new Date(Date.now() - 3_600_000))).toEqual([])
      expect(await store.removeAbandoned(TABLE, new Date(Date.now() + 3_600_000))).toEqual(['crashed'])
      expect((await store.listBatches(TABLE)).map((m) => m.batchId)).toEqual(['done'])
      await expect(store.openBatch(TABLE, 'done')).resolves.toBeDefined()
      await writer.abort()
    })

    it('listUncommitted names every batch without a manifest (started, with parts, suspended), by batch id', async () => {
      await stage('done', '2024-01-01T00:00:00.000Z')
      const before = Date.now()
      const started = await store.beginBatch(TABLE, 'started')
      const crashed = await store.beginBatch(TABLE, 'crashed')
      await addBytes(crashed, Buffer.from('x'), 1)
      await suspended('paused', ['a'])
      const listed = await store.listUncommitted(TABLE)
      expect(listed.map((b) => [b.batchId, b.suspended])).toEqual([
        ['crashed', false],
        ['paused', true],
        ['started', false],
      ])
      for (const batch of listed) {
        // Blob stores keep whole seconds at worst (S3 Last-Modified), and a file's time comes from the kernel's
        // coarse clock, a few milliseconds behind Date.now() (measured up to 5.5 ms): both are allowed for.
        const earliest = Math.floor((before - FILE_CLOCK_LAG_MS) / 1000) * 1000
        expect(Date.parse(batch.lastWrittenAt)).toBeGreaterThanOrEqual(earliest)
      }
      expect(await store.listUncommitted('suppliers')).toEqual([])
      await store.deleteBatch(TABLE, 'crashed')
      expect((await store.listUncommitted(TABLE)).map((b) => b.batchId)).toEqual(['paused', 'started'])
      await started.abort()
      await crashed.abort()
    })

    describe('a run that lists its table once (listStaged, openListedBatch, removeAbandoned of a listing)', () => {
      it('listStaged answers what listBatches and listUncommitted answer', async () => {
        await stage('b', '2024-01-02T00:00:00.000Z')
        await stage('a', '2024-01-01T00:00:00.000Z')
        const crashed = await store.beginBatch(TABLE, 'crashed')
        await addBytes(crashed, Buffer.from('x'), 1)
        await suspended('paused', ['a'])
        const listing = await store.listStaged!(TABLE)
        expect(listing.committed).toEqual(await store.listBatches(TABLE))
        expect(listing.committed.map((m) => m.batchId)).toEqual(['a', 'b'])
        expect(listing.uncommitted).toEqual(await store.listUncommitted(TABLE))
        expect(listing.uncommitted.map((b) => b.batchId)).toEqual(['crashed', 'paused'])
        expect(await store.listStaged!('nobody')).toEqual({ committed: [], uncommitted: [] })
        await crashed.abort()
      })

      it('openListedBatch and openListedBatchOnDemand open with the manifest given and check the parts against it', async () => {
        const manifest = await stage('b1', '2024-01-01T00:00:00.000Z', [
          Buffer.from('aaaa'),
          Buffer.from('bb'),
        ])
        const opened = await store.openListedBatch!(TABLE, manifest)
        try {
          expect(opened.manifest).toEqual(manifest)
          expect(await Promise.all(opened.partPaths.map((path) => readFile(path, 'utf8')))).toEqual([
            'aaaa',
            'bb',
          ])
        } finally {
          await opened.release()
        }
        const onDemand = await store.openListedBatchOnDemand!(TABLE, manifest)
        expect(onDemand.parts.bytes).toEqual([4, 2])
        await fixture.damagePart(TABLE, 'b1', 'part-00001.parquet', 'corrupt')
        await expect(store.openListedBatch!(TABLE, manifest)).rejects.toThrow(/b1: part part-00001\.parquet/)
        await expect(onDemand.parts.fetch([1])).rejects.toThrow(
          /b1: part part-00001\.parquet checksum mismatch/,
        )
        await expect(store.openListedBatch!('suppliers', manifest)).rejects.toBeInstanceOf(StagingError)
      })

      it('removeAbandoned of a listing removes the listed batches older than the given time, without listing again', async () => {
        await stage('done', '2024-01-01T00:00:00.000Z')
        const writer = await store.beginBatch(TABLE, 'crashed')
        await addBytes(writer, Buffer.from('x'), 1)
        const { uncommitted } = await store.listStaged!(TABLE)
        const later = await store.beginBatch(TABLE, 'later')
        const future = new Date(Date.now() + 3_600_000)
        expect(await store.removeAbandoned(TABLE, future, uncommitted)).toEqual(['crashed'])
        expect((await store.listUncommitted(TABLE)).map((b) => b.batchId)).toEqual(['later'])
        expect((await store.listBatches(TABLE)).map((m) => m.batchId)).toEqual(['done'])
        await writer.abort()
        await later.abort()
      })
    })

    describe('multi-pass batches (suspend and resume)', () => {
      it('suspend, resume, add parts, commit: the manifest lists every part in order and openBatch verifies them', async () => {
        const { writer, checkpoint } = await suspended('b1', ['one', 'two'], { cursor: 42, key: ['k'] })
        expect(checkpoint).toMatchObject({ pass: 1, state: { cursor: 42, key: ['k'] } })
        expect(checkpoint.parts.map((p) => [p.name, p.rows, p.bytes])).toEqual([
          ['part-00000.parquet', 3, 3],
          ['part-00001.parquet', 3, 3],
        ])
        expect(Number.isNaN(Date.parse(checkpoint.savedAt))).toBe(false)
        expect(existsSync(writer.scratchDir)).toBe(false)
        expect(await fixture.batchFiles(TABLE, 'b1')).toContain('_progress.json')

        const resumed = await store.resumeBatch(TABLE, 'b1')
        expect(resumed.checkpoint).toEqual(checkpoint)
        expect(resumed.writer.table).toBe(TABLE)
        expect(resumed.writer.batchId).toBe('b1')
        expect(existsSync(resumed.writer.scratchDir)).toBe(true)
        const third = await addBytes(resumed.writer, Buffer.from('three!'), 6)
        expect(third.name).toBe('part-00002.parquet')
        const fourth = await addBytes(resumed.writer, Buffer.from('four'), 4)
        expect(fourth.name).toBe('part-00003.parquet')
        // rowCount is checked against saved and new parts together.
        await expect(
          resumed.writer.commit(manifestFor('b1', '2024-01-01T00:00:00.000Z', 4, 10)),
        ).rejects.toThrow(/rowCount 10 differs from the parts' 16 rows/)
        const manifest = await resumed.writer.commit(manifestFor('b1', '2024-01-01T00:00:00.000Z', 4, 16))

        expect(manifest.parts).toEqual([...checkpoint.parts, third, fourth])
        expect(await store.listBatches(TABLE)).toEqual([manifest])
        expect(await readParts('b1')).toEqual(['one', 'two', 'three!', 'four'])
        // The checkpoint is gone with the commit.
        expect(await fixture.batchFiles(TABLE, 'b1')).not.toContain('_progress.json')
        expect(existsSync(resumed.writer.scratchDir)).toBe(false)
      })

      it('a suspended batch is invisible to listBatches and openBatch', async () => {
        await stage('done', '2024-01-01T00:00:00.000Z')
        await suspended('paused', ['x'])
        expect((await store.listBatches(TABLE)).map((m) => m.batchId)).toEqual(['done'])
        const error = await failure(store.openBatch(TABLE, 'paused'))
        expect(error.message).toMatch(/paused/)
      })

      it('resumeBatch refuses a committed, an unknown and a never-suspended batch, naming table and batch', async () => {
        await stage('done', '2024-01-01T00:00:00.000Z')
        expect((await failure(store.resumeBatch(TABLE, 'done'))).message).toMatch(
          /^table customers: batch done is already committed/,
        )
        expect((await failure(store.resumeBatch(TABLE, 'nope'))).message).toBe(
          'table customers: batch nope has no saved progress (it was never suspended, or was removed as ' +
            'abandoned or after a failure); start a new extract',
        )
        const running = await store.beginBatch(TABLE, 'running')
        await addBytes(running, Buffer.from('x'), 1)
        expect((await failure(store.resumeBatch(TABLE, 'running'))).message).toMatch(
          /^table customers: batch running has no saved progress/,
        )
        // The refusal touched nothing: the running extract still commits.
        await running.commit(manifestFor('running', '2024-01-02T00:00:00.000Z', 1))
        expect(await readParts('running')).toEqual(['x'])
        await expect(store.resumeBatch(TABLE, '../x')).rejects.toBeInstanceOf(StagingError)
      })

      it('a failed pass aborted with keepCheckpoint leaves the checkpoint: resume again, the failed part is gone', async () => {
        const { checkpoint } = await suspended('b1', ['saved'])
        const failed = await store.resumeBatch(TABLE, 'b1')
        expect((await addBytes(failed.writer, Buffer.from('failed pass'), 1)).name).toBe('part-00001.parquet')
        await failed.writer.abort({ keepCheckpoint: true })
        await failed.writer.abort({ keepCheckpoint: true })
        expect(await partFiles('b1')).toEqual(['part-00000.parquet'])
        expect(existsSync(failed.writer.scratchDir)).toBe(false)

        const retry = await store.resumeBatch(TABLE, 'b1')
        expect(retry.checkpoint).toEqual(checkpoint)
        expect((await addBytes(retry.writer, Buffer.from('retry'), 1)).name).toBe('part-00001.parquet')
        await retry.writer.commit(manifestFor('b1', '2024-01-01T00:00:00.000Z', 2, 6))
        expect(await readParts('b1')).toEqual(['saved', 'retry'])
      })

      it('resumeBatch deletes the parts a crashed pass left behind', async () => {
        const { checkpoint } = await suspended('b1', ['saved'])
        const crashed = await store.resumeBatch(TABLE, 'b1')
        await addBytes(crashed.writer, Buffer.from('lost 1'), 1)
        await addBytes(crashed.writer, Buffer.from('lost 2'), 1)
        expect(await partFiles('b1')).toEqual([
          'part-00000.parquet',
          'part-00001.parquet',
          'part-00002.parquet',
        ])

        // No abort: the pass died. The next one resumes from the checkpoint.
        const next = await store.resumeBatch(TABLE, 'b1')
        expect(next.checkpoint).toEqual(checkpoint)
        expect(await partFiles('b1')).toEqual(['part-00000.parquet'])
        expect(await fixture.batchFiles(TABLE, 'b1')).toContain('_progress.json')
        expect((await addBytes(next.writer, Buffer.from('next'), 1)).name).toBe('part-00001.parquet')
        const manifest = await next.writer.commit(manifestFor('b1', '2024-01-01T00:00:00.000Z', 2, 6))
        expect(manifest.parts.map((p) => p.name)).toEqual(['part-00000.parquet', 'part-00001.parquet'])
        expect(await readParts('b1')).toEqual(['saved', 'next'])
        await rm(crashed.writer.scratchDir, { recursive: true, force: true })
      })

      it('each suspend saves the next pass number and every part so far; the state round-trips as JSON', async () => {
        const first = await suspended('b1', ['a'], { offset: 1, at: new Date('2024-03-04T05:06:07.000Z') })
        // What suspend returns is what a resume reads back: the state as JSON.
        expect(first.checkpoint.state).toEqual({ offset: 1, at: '2024-03-04T05:06:07.000Z' })
        expect(first.checkpoint.pass).toBe(1)

        const second = await store.resumeBatch(TABLE, 'b1')
        expect(second.checkpoint).toEqual(first.checkpoint)
        await addBytes(second.writer, Buffer.from('bb'), 2)
        const state2 = { offset: 3, nested: { list: [1, 'two', null, true] }, empty: {} }
        const saved2 = await second.writer.suspend(state2)
        expect(saved2.pass).toBe(2)
        expect(saved2.parts.map((p) => p.name)).toEqual(['part-00000.parquet', 'part-00001.parquet'])
        expect(saved2.parts[0]).toEqual(first.checkpoint.parts[0])
        expect(Date.parse(saved2.savedAt)).toBeGreaterThanOrEqual(Date.parse(first.checkpoint.savedAt))

        const third = await store.resumeBatch(TABLE, 'b1')
        expect(third.checkpoint).toEqual(saved2)
        expect(third.checkpoint.state).toEqual(state2)
        const saved3 = await third.writer.suspend('just a string')
        expect(saved3).toMatchObject({ pass: 3, state: 'just a string', parts: saved2.parts })
        expect(await peek('b1')).toEqual(saved3)
      })

      it('suspend refuses a state that is not JSON and leaves the writer open', async () => {
        const writer = await store.beginBatch(TABLE, 'b1')
        await addBytes(writer, Buffer.from('x'), 1)
        for (const bad of [10n, undefined, () => 1]) {
          expect((await failure(writer.suspend(bad))).message).toMatch(
            /table customers: batch b1: .*not JSON/,
          )
        }
        await expect(store.resumeBatch(TABLE, 'b1')).rejects.toThrow(/has no saved progress/)
        expect((await writer.suspend(null)).state).toBeNull()
      })

      it('suspend is refused while a part is being added; after suspend, addPart, commit and suspend are refused', async () => {
        const writer = await store.beginBatch(TABLE, 'b1')
        const path = join(writer.scratchDir, 'slow.parquet')
        await writeFile(path, 'slow')
        const adding = writer.addPart(path, 1)
        const refused = await failure(writer.suspend({}))
        expect(refused.message).toMatch(
          /^table customers: batch b1: suspend called while part part-00000\.parquet/,
        )
        await adding
        await writer.suspend({})

        const late = join(tmpdir(), `dimsync-late-${randomBytes(4).toString('hex')}.parquet`)
        await writeFile(late, 'late')
        try {
          expect((await failure(writer.addPart(late, 1))).message).toMatch(
            /table customers: batch b1: addPart after the batch was suspended/,
          )
          expect(existsSync(late)).toBe(true)
        } finally {
          await rm(late, { force: true })
        }
        expect(
          (await failure(writer.commit(manifestFor('b1', '2024-01-01T00:00:00.000Z', 1)))).message,
        ).toMatch(/batch b1: commit after the batch was suspended/)
        expect((await failure(writer.suspend({}))).message).toMatch(
          /batch b1: suspend after the batch was suspended/,
        )
        expect(await store.listBatches(TABLE)).toEqual([])
        expect((await peek('b1')).pass).toBe(1)
      })

      it('abort after suspend: with keepCheckpoint everything stays, without it the batch is removed', async () => {
        const { writer, checkpoint } = await suspended('b1', ['a', 'b'])
        await writer.abort({ keepCheckpoint: true })
        expect(await partFiles('b1')).toEqual(['part-00000.parquet', 'part-00001.parquet'])
        expect(await peek('b1')).toEqual(checkpoint)

        const other = await suspended('b2', ['a'])
        await other.writer.abort()
        expect(await fixture.batchFiles(TABLE, 'b2')).toEqual([])
        await expect(store.resumeBatch(TABLE, 'b2')).rejects.toThrow(/batch b2 has no saved progress/)
      })

      it('a plain abort after resume removes the whole batch', async () => {
        await suspended('b1', ['a'])
        const resumed = await store.resumeBatch(TABLE, 'b1')
        await addBytes(resumed.writer, Buffer.from('b'), 1)
        await resumed.writer.abort()
        expect(await fixture.batchFiles(TABLE, 'b1')).toEqual([])
        expect(existsSync(resumed.writer.scratchDir)).toBe(false)
        await expect(store.resumeBatch(TABLE, 'b1')).rejects.toThrow(/batch b1 has no saved progress/)
        expect(await store.removeAbandoned(TABLE, new Date(Date.now() + 3_600_000))).toEqual([])
        // The id is free again.
        await stage('b1', '2024-01-01T00:00:00.000Z')
        expect(await readParts('b1')).toEqual(['p0'])
      })

      it('abort with keepCheckpoint on a batch that never suspended removes it entirely', async () => {
        const writer = await store.beginBatch(TABLE, 'b1')
        await addBytes(writer, Buffer.from('x'), 1)
        await writer.abort({ keepCheckpoint: true })
        expect(await fixture.batchFiles(TABLE, 'b1')).toEqual([])
        await expect(store.resumeBatch(TABLE, 'b1')).rejects.toThrow(/no saved progress/)
      })

      it('a plain abort of a suspended writer leaves the batch alone once a later pass committed it', async () => {
        const { writer } = await suspended('b1', ['a'])
        const resumed = await store.resumeBatch(TABLE, 'b1')
        await resumed.writer.commit(manifestFor('b1', '2024-01-01T00:00:00.000Z', 1))
        await writer.abort()
        expect(await readParts('b1')).toEqual(['a'])
      })

      it('beginBatch with the id of a suspended batch starts it anew', async () => {
        await suspended('b1', ['old'])
        const writer = await store.beginBatch(TABLE, 'b1')
        expect(await partFiles('b1')).toEqual([])
        await expect(store.resumeBatch(TABLE, 'b1')).rejects.toThrow(/no saved progress/)
        await addBytes(writer, Buffer.from('new'), 1)
        await writer.commit(manifestFor('b1', '2024-01-01T00:00:00.000Z', 1))
        expect(await readParts('b1')).toEqual(['new'])
      })

      it('removeAbandoned keeps a recently suspended batch and removes one not continued since the given time', async () => {
        await suspended('paused', ['a'])
        const resumed = await store.resumeBatch(TABLE, 'paused')
        await addBytes(resumed.writer, Buffer.from('b'), 1)
        const checkpoint = await resumed.writer.suspend({ pass: 2 })

        expect(await store.removeAbandoned(TABLE, new Date(Date.now() - 3_600_000))).toEqual([])
        expect(await peek('paused')).toEqual(checkpoint)

        expect(await store.removeAbandoned(TABLE, new Date(Date.now() + 3_600_000))).toEqual(['paused'])
        expect(await fixture.batchFiles(TABLE, 'paused')).toEqual([])
        await expect(store.resumeBatch(TABLE, 'paused')).rejects.toThrow(/batch paused has no saved progress/)
      })
    })

    it('refuses ids that could escape the store', async () => {
      for (const bad of ['..', '../x', 'a/b', '', '.hidden', 'a\\b']) {
        await expect(store.beginBatch(TABLE, bad)).rejects.toBeInstanceOf(StagingError)
        await expect(store.listBatches(bad)).rejects.toBeInstanceOf(StagingError)
      }
    })
  })
}

function manifestFor(
  batchId: string,
  extractedAt: string,
  parts: number,
  rowCount = parts,
): Omit<BatchManifest, 'parts' | 'formatVersion'> {
  return {
    table: TABLE,
    batchId,
    extractedAt,
    mode: 'full',
    rowCount,
    columns: [{ name: 'id', type: 'BIGINT' }],
    sourceDescription: 'contract test',
  }
}
