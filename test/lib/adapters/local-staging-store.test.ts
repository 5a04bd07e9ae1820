import { mkdtemp, readdir, readFile, rm, unlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { LocalStagingStore } from '../../../lib/adapters/staging/local-staging-store.ts'
import { StagingError } from '../../../lib/core/errors.ts'
import { describeStagingStoreContract } from '../../contract/staging-store.contract.ts'

describeStagingStoreContract('local folder', async () => {
  const root = await mkdtemp(join(tmpdir(), 'dimsync-staging-'))
  return {
    store: new LocalStagingStore({ root }),
    damagePart: async (table, batchId, partName, how) => {
      const path = join(root, table, batchId, partName)
      if (how === 'delete') await unlink(path)
      else {
        // Same length, different bytes: only the checksum can tell.
        const bytes = await readFile(path)
        bytes[0] = bytes[0]! ^ 0xff
        await writeFile(path, bytes)
      }
    },
    cleanup: () => rm(root, { recursive: true, force: true }),
  }
})

describe('LocalStagingStore (local specifics)', () => {
  let root: string
  let store: LocalStagingStore

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'dimsync-staging-'))
    store = new LocalStagingStore({ root })
  })
  afterEach(async () => {
    await rm(root, { recursive: true, force: true })
  })

  const manifest = (batchId: string, rowCount: number) => ({
    table: 'customers',
    batchId,
    extractedAt: '2024-01-01T00:00:00.000Z',
    mode: 'full' as const,
    rowCount,
    columns: [],
    sourceDescription: 'test',
  })

  it('lays out parts and the manifest under <root>/<table>/<batchId>, with no scratch or temp file left', async () => {
    const writer = await store.beginBatch('customers', 'b1')
    expect(writer.scratchDir).toBe(join(root, 'customers', 'b1', '.scratch'))
    await writeFile(join(writer.scratchDir, 'a'), 'abc')
    await writer.addPart(join(writer.scratchDir, 'a'), 3)
    await writer.commit(manifest('b1', 3))
    expect((await readdir(join(root, 'customers', 'b1'))).sort()).toEqual([
      '_manifest.json',
      'part-00000.parquet',
    ])
    const stored = JSON.parse(await readFile(join(root, 'customers', 'b1', '_manifest.json'), 'utf8'))
    expect(stored).toMatchObject({ formatVersion: 1, table: 'customers', batchId: 'b1', rowCount: 3 })
    const opened = await store.openBatch('customers', 'b1')
    expect(opened.partPaths).toEqual([join(root, 'customers', 'b1', 'part-00000.parquet')])
  })

  it('refuses a manifest whose rowCount differs from the parts, and a commit for another batch', async () => {
    const writer = await store.beginBatch('customers', 'b1')
    await writeFile(join(writer.scratchDir, 'a'), 'abc')
    await writer.addPart(join(writer.scratchDir, 'a'), 3)
    await expect(writer.commit(manifest('b1', 4))).rejects.toThrow(
      /rowCount 4 differs from the parts' 3 rows/,
    )
    await expect(writer.commit(manifest('b2', 3))).rejects.toThrow(StagingError)
    await writer.commit(manifest('b1', 3))
    await expect(writer.commit(manifest('b1', 3))).rejects.toThrow(/after the batch was committed/)
  })

  it('refuses to begin a batch id that is already committed, and restarts an uncommitted one', async () => {
    const first = await store.beginBatch('customers', 'b1')
    await writeFile(join(first.scratchDir, 'a'), 'abc')
    await first.addPart(join(first.scratchDir, 'a'), 1)
    // A crashed attempt: begin again with the same id starts from an empty folder.
    const retry = await store.beginBatch('customers', 'b1')
    expect(await readdir(join(root, 'customers', 'b1'))).toEqual(['.scratch'])
    await retry.commit(manifest('b1', 0))
    await expect(store.beginBatch('customers', 'b1')).rejects.toThrow(/already committed/)
  })

  it('abort after a successful commit leaves the batch in place', async () => {
    const writer = await store.beginBatch('customers', 'b1')
    await writer.commit(manifest('b1', 0))
    await writer.abort()
    expect(await store.listBatches('customers')).toHaveLength(1)
  })

  it('removeAbandoned goes by the newest file in the folder, not only the folder itself', async () => {
    const writer = await store.beginBatch('customers', 'slow')
    const scratchFile = join(writer.scratchDir, 'growing.parquet')
    await writeFile(scratchFile, 'x')
    const old = new Date(Date.now() - 7_200_000)
    await utimes(join(root, 'customers', 'slow'), old, old)
    expect(await store.removeAbandoned('customers', new Date(Date.now() - 3_600_000))).toEqual([])
    await utimes(scratchFile, old, old)
    await utimes(writer.scratchDir, old, old)
    await utimes(join(root, 'customers', 'slow'), old, old)
    expect(await store.removeAbandoned('customers', new Date(Date.now() - 3_600_000))).toEqual(['slow'])
  })

  it('a damaged manifest is a StagingError naming the batch', async () => {
    const writer = await store.beginBatch('customers', 'b1')
    await writer.commit(manifest('b1', 0))
    await writeFile(join(root, 'customers', 'b1', '_manifest.json'), '{"formatVersion": 1, "tab')
    await expect(store.listBatches('customers')).rejects.toThrow(/batch b1: unreadable manifest/)
  })
})
