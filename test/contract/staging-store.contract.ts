import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import type { BatchManifest } from '../../lib/core/batch.ts'
import { StagingError } from '../../lib/core/errors.ts'
import type { BatchWriter, StagingStore } from '../../lib/ports/staging-store.ts'

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
  readonly cleanup: () => Promise<void>
}

const TABLE = 'customers'

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
