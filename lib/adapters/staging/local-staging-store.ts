import { copyFile, mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises'
import { isAbsolute, join, resolve } from 'node:path'

import type { BatchManifest, StagedPart } from '../../core/batch.ts'
import {
  checkpointText,
  nextCheckpoint,
  noCheckpointError,
  parseCheckpoint,
  partFileName,
  type Checkpoint,
} from '../../core/batch-checkpoint.ts'
import { StagingError } from '../../core/errors.ts'
import type { BatchCheckpoint, BatchWriter, OpenedBatch, StagingStore } from '../../ports/staging-store.ts'
import {
  assertSafeId,
  isErrnoCode,
  readJsonIfExists,
  readTextIfExists,
  sha256File,
  syncDir,
  writeFileAtomic,
} from './local-files.ts'
import { checkManifest, compareManifests, completeManifest, PART_NAME } from '../../core/batch-manifest.ts'

export interface LocalStagingStoreOptions {
  /** Folder holding `<table>/<batchId>/...`; created on first use. Relative paths resolve against the cwd. */
  readonly root: string
}

const MANIFEST = '_manifest.json'
/** The checkpoint of a suspended batch (`BatchWriter.suspend`); removed by the commit of a later pass. */
const PROGRESS = '_progress.json'
const SCRATCH = '.scratch'

/**
 * Staging in a local folder (embedded mode): `<root>/<table>/<batchId>/part-NNNNN.parquet` plus
 * `_manifest.json`, which is written last and atomically, so a batch is either committed whole or invisible.
 * A suspended batch holds `_progress.json` (its checkpoint) instead of a manifest until a later pass commits it.
 */
export class LocalStagingStore implements StagingStore {
  readonly #root: string

  constructor(options: LocalStagingStoreOptions) {
    this.#root = resolve(options.root)
  }

  /** Absolute root folder of the store. */
  get root(): string {
    return this.#root
  }

  /**
   * Starts a batch: creates its folder and a scratch folder for the source. A folder left by an earlier,
   * uncommitted attempt with the same id is cleared first; a committed batch with that id is refused
   * (`StagingError`), since batches are immutable once committed.
   */
  async beginBatch(table: string, batchId: string): Promise<BatchWriter> {
    const dir = this.#batchDir(table, batchId)
    if (await exists(join(dir, MANIFEST))) {
      throw new StagingError(`table ${table}: batch ${batchId} is already committed in ${dir}`)
    }
    await rm(dir, { recursive: true, force: true })
    await mkdir(join(dir, SCRATCH), { recursive: true })
    return new LocalBatchWriter(table, batchId, dir)
  }

  /**
   * Reopens a suspended batch: refuses a committed batch and one without `_progress.json` (`StagingError`),
   * checks the checkpoint, deletes the part files it does not list (left by a pass that failed or crashed),
   * checks that every listed part is there with its recorded size (checksums are verified by `openBatch`) and
   * gives the writer a fresh scratch folder. The writer numbers its parts after the saved ones.
   */
  async resumeBatch(
    table: string,
    batchId: string,
  ): Promise<{ writer: BatchWriter; checkpoint: BatchCheckpoint }> {
    const dir = this.#batchDir(table, batchId)
    const where = `table ${table}: batch ${batchId}`
    if (await exists(join(dir, MANIFEST))) {
      throw new StagingError(`${where} is already committed in ${dir}; a committed batch cannot be resumed`)
    }
    const path = join(dir, PROGRESS)
    let text: string | undefined
    try {
      text = await readTextIfExists(path)
    } catch (error) {
      throw new StagingError(`${where}: unreadable checkpoint ${path}`, { cause: error })
    }
    if (text === undefined) throw noCheckpointError(table, batchId)
    const checkpoint = parseCheckpoint(table, batchId, path, text)
    const saved = new Set(checkpoint.parts.map((part) => part.name))
    for (const name of await readdir(dir)) {
      if (PART_NAME.test(name) && !saved.has(name)) await rm(join(dir, name), { force: true })
    }
    for (const part of checkpoint.parts) {
      const partPath = join(dir, part.name)
      let bytes: number
      try {
        bytes = (await stat(partPath)).size
      } catch (error) {
        if (!isErrnoCode(error, 'ENOENT')) throw error
        throw new StagingError(`${where}: part ${part.name} of the checkpoint is missing (${partPath})`)
      }
      if (bytes !== part.bytes) {
        throw new StagingError(
          `${where}: part ${part.name} has ${bytes} bytes, the checkpoint says ${part.bytes}`,
        )
      }
    }
    await rm(join(dir, SCRATCH), { recursive: true, force: true })
    await mkdir(join(dir, SCRATCH))
    return { writer: new LocalBatchWriter(table, batchId, dir, checkpoint), checkpoint }
  }

  /** Committed batches of `table` (those with a manifest), oldest `extractedAt` first, ties by batch id. */
  async listBatches(table: string): Promise<readonly BatchManifest[]> {
    const tableDir = this.#tableDir(table)
    const manifests: BatchManifest[] = []
    for (const batchId of await listSubfolders(tableDir)) {
      const manifest = await this.#readManifest(table, batchId)
      if (manifest !== undefined) manifests.push(manifest)
    }
    return manifests.sort(compareManifests)
  }

  /**
   * Opens a committed batch for reading. Every part is checked against the manifest (present, same size,
   * same SHA-256) before the paths are handed out; any difference is a `StagingError` naming the batch and
   * the part. The returned paths are the staged files themselves: readers must not modify them.
   */
  async openBatch(table: string, batchId: string): Promise<OpenedBatch> {
    const dir = this.#batchDir(table, batchId)
    const manifest = await this.#readManifest(table, batchId)
    if (manifest === undefined) {
      throw new StagingError(`table ${table}: batch ${batchId} is not committed (no ${MANIFEST} in ${dir})`)
    }
    const partPaths: string[] = []
    for (const part of manifest.parts) {
      const path = join(dir, part.name)
      let bytes: number
      try {
        bytes = (await stat(path)).size
      } catch (error) {
        if (!isErrnoCode(error, 'ENOENT')) throw error
        throw new StagingError(`table ${table}: batch ${batchId}: part ${part.name} is missing (${path})`)
      }
      if (bytes !== part.bytes) {
        throw new StagingError(
          `table ${table}: batch ${batchId}: part ${part.name} has ${bytes} bytes, manifest says ${part.bytes}`,
        )
      }
      const sha256 = await sha256File(path)
      if (sha256 !== part.sha256) {
        throw new StagingError(
          `table ${table}: batch ${batchId}: part ${part.name} checksum mismatch ` +
            `(sha256 ${sha256}, manifest says ${part.sha256})`,
        )
      }
      partPaths.push(path)
    }
    return { manifest, partPaths, release: async () => {} }
  }

  /**
   * Deletes a batch, committed or not. The manifest goes first so that a crash half-way leaves an uncommitted
   * folder (cleaned by `removeAbandoned`), never a manifest pointing at missing parts. Missing batch: no-op.
   */
  async deleteBatch(table: string, batchId: string): Promise<void> {
    const dir = this.#batchDir(table, batchId)
    await rm(join(dir, MANIFEST), { force: true })
    await rm(dir, { recursive: true, force: true })
  }

  /**
   * Deletes batch folders of `table` that have no manifest and in which nothing changed since `olderThan`
   * (the newest modification time of the folder, its files and its scratch folder counts, so an extract that
   * is still writing a long part is not taken for abandoned, nor a suspended batch whose `_progress.json` is
   * recent; a suspended batch that no pass continued since `olderThan` is abandoned). Returns the removed ids.
   */
  async removeAbandoned(table: string, olderThan: Date): Promise<readonly string[]> {
    const tableDir = this.#tableDir(table)
    const removed: string[] = []
    for (const batchId of await listSubfolders(tableDir)) {
      const dir = join(tableDir, batchId)
      if (await exists(join(dir, MANIFEST))) continue
      const newest = await newestMtime(dir)
      if (newest !== undefined && newest < olderThan.getTime()) {
        await rm(dir, { recursive: true, force: true })
        removed.push(batchId)
      }
    }
    return removed.sort()
  }

  async #readManifest(table: string, batchId: string): Promise<BatchManifest | undefined> {
    const path = join(this.#batchDir(table, batchId), MANIFEST)
    let parsed: unknown
    try {
      parsed = await readJsonIfExists(path)
    } catch (error) {
      throw new StagingError(`table ${table}: batch ${batchId}: unreadable manifest ${path}`, {
        cause: error,
      })
    }
    if (parsed === undefined) return undefined
    return checkManifest(table, batchId, path, parsed)
  }

  #tableDir(table: string): string {
    assertSafeId('table', table, (message) => new StagingError(message))
    return join(this.#root, table)
  }

  #batchDir(table: string, batchId: string): string {
    const tableDir = this.#tableDir(table)
    assertSafeId('batch', batchId, (message) => new StagingError(`table ${table}: ${message}`))
    return join(tableDir, batchId)
  }
}

class LocalBatchWriter implements BatchWriter {
  readonly table: string
  readonly batchId: string
  readonly scratchDir: string
  readonly #dir: string
  /** Saved parts of earlier passes first (from the checkpoint), then the parts this writer adds. */
  readonly #parts: (StagedPart | undefined)[]
  readonly #pending = new Set<Promise<unknown>>()
  /** The checkpoint this writer resumed from, or the one it saved when it suspended. */
  #checkpoint: Checkpoint | undefined
  #state: 'open' | 'suspended' | 'committed' | 'aborted' = 'open'

  constructor(table: string, batchId: string, dir: string, checkpoint?: Checkpoint) {
    this.table = table
    this.batchId = batchId
    this.#dir = dir
    this.scratchDir = join(dir, SCRATCH)
    this.#checkpoint = checkpoint
    this.#parts = [...(checkpoint?.parts ?? [])]
  }

  /**
   * Moves `localPath` into the batch as the next `part-NNNNN.parquet` (numbered in call order) and records
   * its size and SHA-256. The file is consumed. Files on another file system are copied, then deleted.
   */
  async addPart(localPath: string, rows: number): Promise<StagedPart> {
    this.#assertOpen('addPart')
    if (!Number.isSafeInteger(rows) || rows < 0) {
      throw new StagingError(
        `table ${this.table}: batch ${this.batchId}: invalid row count ${rows} for a part`,
      )
    }
    // Reserve the slot before any await so that concurrent calls get distinct, ordered names.
    const index = this.#parts.length
    this.#parts.push(undefined)
    const name = partFileName(index)
    const target = join(this.#dir, name)
    const work = (async () => {
      await moveFile(isAbsolute(localPath) ? localPath : resolve(localPath), target)
      // Flush the part before it can be referenced by a manifest: a crash must not leave a committed batch
      // with a part whose bytes never reached the disk.
      const handle = await open(target, 'r')
      try {
        await handle.sync()
      } finally {
        await handle.close()
      }
      const [sha256, info] = await Promise.all([sha256File(target), stat(target)])
      const part: StagedPart = { name, rows, bytes: info.size, sha256 }
      this.#parts[index] = part
      return part
    })()
    this.#pending.add(work)
    try {
      return await work
    } finally {
      this.#pending.delete(work)
    }
  }

  /**
   * Writes `_manifest.json` (format version 1, the parts in the order they were added, after the saved parts of
   * earlier passes), which commits the batch, then removes the checkpoint and the scratch folder. Refuses a
   * manifest for another table or batch, one whose `rowCount` differs from the sum of the parts' rows, and a
   * commit while an `addPart` is still running.
   */
  async commit(manifest: Omit<BatchManifest, 'parts' | 'formatVersion'>): Promise<BatchManifest> {
    this.#assertOpen('commit')
    const full = completeManifest(this.table, this.batchId, manifest, this.#parts)
    await syncDir(this.#dir)
    await writeFileAtomic(join(this.#dir, MANIFEST), `${JSON.stringify(full, null, 2)}\n`)
    this.#state = 'committed'
    // The batch is committed from here on; a leftover checkpoint or scratch folder is harmless (readers go by
    // the manifest), so their removal cannot fail it.
    await rm(join(this.#dir, PROGRESS), { force: true }).catch(() => {})
    await rm(this.scratchDir, { recursive: true, force: true }).catch(() => {})
    return full
  }

  /**
   * Writes `_progress.json` atomically (pass, time, every part so far, `state` as JSON), then removes the
   * scratch folder; the parts stay. The writer is closed: `StagingStore.resumeBatch` continues the batch.
   * Refused while an `addPart` is running.
   */
  async suspend(state: unknown): Promise<BatchCheckpoint> {
    this.#assertOpen('suspend')
    const checkpoint = nextCheckpoint(
      this.table,
      this.batchId,
      this.#checkpoint,
      this.#parts,
      state,
      new Date(),
    )
    // Closed before the first await, so an addPart or commit started meanwhile is refused.
    this.#state = 'suspended'
    try {
      await syncDir(this.#dir)
      await writeFileAtomic(join(this.#dir, PROGRESS), checkpointText(this.table, this.batchId, checkpoint))
    } catch (error) {
      if (this.#state === 'suspended') this.#state = 'open'
      throw error
    }
    this.#checkpoint = checkpoint
    await rm(this.scratchDir, { recursive: true, force: true }).catch(() => {})
    return checkpoint
  }

  /**
   * Removes the batch folder and everything in it, after waiting for running `addPart` calls. With
   * `keepCheckpoint`, a writer that resumed or suspended removes only its scratch folder and the parts added
   * after its checkpoint. Safe after a failure and when called twice; a no-op after a successful commit (use
   * `StagingStore.deleteBatch` to remove a committed batch), and after a suspend when a later pass has
   * committed the batch meanwhile.
   */
  async abort(options?: { readonly keepCheckpoint?: boolean }): Promise<void> {
    if (this.#state === 'committed') return
    const wasSuspended = this.#state === 'suspended'
    this.#state = 'aborted'
    await Promise.allSettled([...this.#pending])
    const checkpoint = this.#checkpoint
    if (options?.keepCheckpoint === true && checkpoint !== undefined) {
      await rm(this.scratchDir, { recursive: true, force: true })
      for (let index = checkpoint.parts.length; index < this.#parts.length; index++) {
        await rm(join(this.#dir, partFileName(index)), { force: true })
      }
      return
    }
    if (wasSuspended && (await exists(join(this.#dir, MANIFEST)))) return
    await rm(this.#dir, { recursive: true, force: true })
  }

  #assertOpen(operation: string): void {
    if (this.#state !== 'open') {
      const hint = this.#state === 'suspended' ? ' (continue it with resumeBatch)' : ''
      throw new StagingError(
        `table ${this.table}: batch ${this.batchId}: ${operation} after the batch was ${this.#state}${hint}`,
      )
    }
  }
}

async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to)
  } catch (error) {
    if (!isErrnoCode(error, 'EXDEV')) throw error
    await copyFile(from, to)
    await unlink(from)
  }
}

async function listSubfolders(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true })
    // Dot-names are temporary files and scratch folders, never batches.
    return entries
      .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
      .map((entry) => entry.name)
  } catch (error) {
    if (isErrnoCode(error, 'ENOENT')) return []
    throw error
  }
}

async function newestMtime(dir: string): Promise<number | undefined> {
  let newest: number | undefined
  const visit = async (path: string, depth: number): Promise<void> => {
    let info
    try {
      info = await stat(path)
    } catch (error) {
      if (isErrnoCode(error, 'ENOENT')) return
      throw error
    }
    newest = Math.max(newest ?? 0, info.mtimeMs)
    if (!info.isDirectory() || depth > 1) return
    let names: string[] = []
    try {
      names = await readdir(path)
    } catch (error) {
      if (!isErrnoCode(error, 'ENOENT')) throw error
    }
    for (const name of names) await visit(join(path, name), depth + 1)
  }
  await visit(dir, 0)
  return newest
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch (error) {
    if (isErrnoCode(error, 'ENOENT')) return false
    throw error
  }
}
