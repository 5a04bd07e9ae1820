import { mkdtemp, readdir, readFile, rm, unlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { LocalStagingStore } from '../../../../lib/adapters/staging/local-staging-store.ts'
import { StagingError } from '../../../../lib/core/errors.ts'
import { describeStagingStoreContract } from '../../../contract/staging-store.contract.ts'

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
    batchFiles: async (table, batchId) => {
      const entries = await readdir(join(root, table, batchId), { withFileTypes: true }).catch(() => [])
      return entries
        .filter((entry) => entry.isFile())
        .map((entry) => entry.name)
        .sort()
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
    expect((await readdir(join(root, 'customers', 'b1'))).sort()).toEqual(['.scratch', '_started.json'])
    await retry.commit(manifest('b1', 0))
    await expect(store.beginBatch('customers', 'b1')).rejects.toThrow(/already committed/)
  })

  it('of two writers of one batch id, the second to commit is refused and the first commit stays whole', async () => {
    const late = await store.beginBatch('customers', 'b1')
    await writeFile(join(late.scratchDir, 'a'), 'abc')
    await late.addPart(join(late.scratchDir, 'a'), 3)
    // A retry started meanwhile (the first writer looked dead) begins the same id anew and commits first.
    const retry = await store.beginBatch('customers', 'b1')
    await retry.commit(manifest('b1', 0))
    await expect(late.commit(manifest('b1', 3))).rejects.toThrow(
      /^table customers: batch b1 was committed by another writer meanwhile/,
    )
    const opened = await store.openBatch('customers', 'b1')
    expect(opened.manifest).toMatchObject({ rowCount: 0, parts: [] })
  })

  it('abort after a successful commit leaves the batch in place', async () => {
    const writer = await store.beginBatch('customers', 'b1')
    await writer.commit(manifest('b1', 0))
    await writer.abort()
    expect(await store.listBatches('customers')).toHaveLength(1)
  })

  it('removeAbandoned counts the files the source is still writing in the scratch folder', async () => {
    const writer = await store.beginBatch('customers', 'slow')
    const scratchFile = join(writer.scratchDir, 'growing.parquet')
    await writeFile(scratchFile, 'x')
    const old = new Date(Date.now() - 7_200_000)
    await utimes(join(root, 'customers', 'slow', '_started.json'), old, old)
    expect(await store.removeAbandoned('customers', new Date(Date.now() - 3_600_000))).toEqual([])
    await utimes(scratchFile, old, old)
    expect(await store.removeAbandoned('customers', new Date(Date.now() - 3_600_000))).toEqual(['slow'])
  })

  it('suspend leaves the parts and an atomic _progress.json, no scratch folder or temporary file', async () => {
    const writer = await store.beginBatch('customers', 'b1')
    await writeFile(join(writer.scratchDir, 'a'), 'abc')
    const part = await writer.addPart(join(writer.scratchDir, 'a'), 3)
    await writeFile(join(writer.scratchDir, 'unfinished'), 'zzz')
    const checkpoint = await writer.suspend({ cursor: '2024-01-01T00:00:00Z' })
    const dir = join(root, 'customers', 'b1')
    expect((await readdir(dir)).sort()).toEqual(['_progress.json', '_started.json', 'part-00000.parquet'])
    expect(JSON.parse(await readFile(join(dir, '_progress.json'), 'utf8'))).toEqual({
      formatVersion: 1,
      table: 'customers',
      batchId: 'b1',
      pass: 1,
      savedAt: checkpoint.savedAt,
      parts: [part],
      state: { cursor: '2024-01-01T00:00:00Z' },
    })

    const resumed = await store.resumeBatch('customers', 'b1')
    expect(resumed.writer.scratchDir).toBe(join(dir, '.scratch'))
    expect(await readdir(resumed.writer.scratchDir)).toEqual([])
    await resumed.writer.commit(manifest('b1', 3))
    expect((await readdir(dir)).sort()).toEqual(['_manifest.json', 'part-00000.parquet'])
  })

  it('resumeBatch empties the scratch folder a crashed pass left', async () => {
    const writer = await store.beginBatch('customers', 'b1')
    await writer.suspend({})
    const crashed = await store.resumeBatch('customers', 'b1')
    await writeFile(join(crashed.writer.scratchDir, 'half-written.parquet'), 'x')
    const next = await store.resumeBatch('customers', 'b1')
    expect(await readdir(next.writer.scratchDir)).toEqual([])
  })

  it('removeAbandoned counts _progress.json: a suspended batch with old parts but a recent checkpoint is kept', async () => {
    const writer = await store.beginBatch('customers', 'paused')
    await writeFile(join(writer.scratchDir, 'a'), 'abc')
    await writer.addPart(join(writer.scratchDir, 'a'), 3)
    await writer.suspend({})
    const dir = join(root, 'customers', 'paused')
    const old = new Date(Date.now() - 7_200_000)
    await utimes(join(dir, 'part-00000.parquet'), old, old)
    await utimes(join(dir, '_started.json'), old, old)
    const threshold = new Date(Date.now() - 3_600_000)
    expect(await store.removeAbandoned('customers', threshold)).toEqual([])
    await utimes(join(dir, '_progress.json'), old, old)
    expect(await store.removeAbandoned('customers', threshold)).toEqual(['paused'])
    await expect(readdir(dir)).rejects.toThrow(/ENOENT/)
  })

  describe('resumeBatch refuses a damaged checkpoint or saved parts, naming the batch and the file', () => {
    const dir = () => join(root, 'customers', 'b1')
    const progress = () => join(dir(), '_progress.json')

    beforeEach(async () => {
      const writer = await store.beginBatch('customers', 'b1')
      for (const text of ['abc', 'defg']) {
        await writeFile(join(writer.scratchDir, text), text)
        await writer.addPart(join(writer.scratchDir, text), 1)
      }
      await writer.suspend({ at: 1 })
    })

    const edit = async (change: (file: Record<string, unknown>) => void) => {
      const file = JSON.parse(await readFile(progress(), 'utf8')) as Record<string, unknown>
      change(file)
      await writeFile(progress(), JSON.stringify(file))
    }

    it('unreadable JSON', async () => {
      await writeFile(progress(), '{"formatVersion": 1, "ta')
      const error = await store.resumeBatch('customers', 'b1').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StagingError)
      expect((error as Error).message).toBe(`table customers: batch b1: unreadable checkpoint ${progress()}`)
    })

    it.each([
      [
        'another batch',
        (f: Record<string, unknown>) => (f.batchId = 'b2'),
        /it names table customers, batch b2/,
      ],
      ['another table', (f: Record<string, unknown>) => (f.table = 'x'), /it names table x, batch b1/],
      [
        'a newer format',
        (f: Record<string, unknown>) => (f.formatVersion = 2),
        /unsupported formatVersion 2/,
      ],
      ['no pass', (f: Record<string, unknown>) => delete f.pass, /pass undefined is not a positive integer/],
      [
        'a bad time',
        (f: Record<string, unknown>) => (f.savedAt = 'soon'),
        /savedAt "soon" is not an ISO instant/,
      ],
      ['no state', (f: Record<string, unknown>) => delete f.state, /state is missing/],
      [
        'a gap in the part numbers',
        (f: Record<string, unknown>) => (f.parts = (f.parts as unknown[]).slice(1)),
        /part 0 is named "part-00001.parquet", expected part-00000.parquet/,
      ],
      [
        'a part name that leaves the folder',
        (f: Record<string, unknown>) => ((f.parts as { name: string }[])[0]!.name = '../x.parquet'),
        /part 0 is named "..\/x.parquet"/,
      ],
      [
        'a negative row count',
        (f: Record<string, unknown>) => ((f.parts as { rows: number }[])[1]!.rows = -1),
        /part part-00001.parquet: rows -1 is not a count/,
      ],
      [
        'a bad checksum',
        (f: Record<string, unknown>) => ((f.parts as { sha256: string }[])[1]!.sha256 = 'abc'),
        /part part-00001.parquet: sha256 "abc" is not a hex SHA-256/,
      ],
    ])('%s', async (_what, change, message) => {
      await edit(change)
      const error = await store.resumeBatch('customers', 'b1').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StagingError)
      expect((error as Error).message).toContain(
        `table customers: batch b1: invalid checkpoint ${progress()}: `,
      )
      expect((error as Error).message).toMatch(message)
    })

    it('a saved part that is missing or has another size', async () => {
      await unlink(join(dir(), 'part-00001.parquet'))
      await expect(store.resumeBatch('customers', 'b1')).rejects.toThrow(
        /^table customers: batch b1: part part-00001\.parquet of the checkpoint is missing/,
      )
      await writeFile(join(dir(), 'part-00001.parquet'), 'de')
      await expect(store.resumeBatch('customers', 'b1')).rejects.toThrow(
        'table customers: batch b1: part part-00001.parquet has 2 bytes, the checkpoint says 4',
      )
    })
  })

  it('a damaged manifest is a StagingError naming the batch', async () => {
    const writer = await store.beginBatch('customers', 'b1')
    await writer.commit(manifest('b1', 0))
    await writeFile(join(root, 'customers', 'b1', '_manifest.json'), '{"formatVersion": 1, "tab')
    await expect(store.listBatches('customers')).rejects.toThrow(/batch b1: unreadable manifest/)
  })
})
