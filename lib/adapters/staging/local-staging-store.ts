import { copyFile, mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises'
import { isAbsolute, join, resolve } from 'node:path'

import type { BatchManifest, StagedPart } from '../../core/batch.ts'
import { StagingError } from '../../core/errors.ts'
import type { BatchWriter, OpenedBatch, StagingStore } from '../../ports/staging-store.ts'
import {
  assertSafeId,
  isErrnoCode,
  readJsonIfExists,
  sha256File,
  syncDir,
  writeFileAtomic,
} from './local-files.ts'
import { checkManifest, compareManifests, completeManifest } from '../../core/batch-manifest.ts'

export interface LocalStagingStoreOptions {
  /** Folder holding `<table>/<batchId>/...`; created on first use. Relative paths resolve against the cwd. */
  readonly root: string
}

const MANIFEST = '_manifest.json'
const SCRATCH = '.scratch'

/**
 * Staging in a local folder (embedded mode): `<root>/<table>/<batchId>/part-NNNNN.parquet` plus
 * `_manifest.json`, which is written last and atomically, so a batch is either committed whole or invisible.
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
   * is still writing a long part is not taken for abandoned). Returns the removed batch ids.
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
  readonly #parts: (StagedPart | undefined)[] = []
  #state: 'open' | 'committed' | 'aborted' = 'open'

  constructor(table: string, batchId: string, dir: string) {
    this.table = table
    this.batchId = batchId
    this.#dir = dir
    this.scratchDir = join(dir, SCRATCH)
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
    const name = `part-${String(index).padStart(5, '0')}.parquet`
    const target = join(this.#dir, name)
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
  }

  /**
   * Writes `_manifest.json` (format version 1, the parts in the order they were added), which commits the
   * batch, then removes the scratch folder. Refuses a manifest for another table or batch, one whose
   * `rowCount` differs from the sum of the parts' rows, and a commit while an `addPart` is still running.
   */
  async commit(manifest: Omit<BatchManifest, 'parts' | 'formatVersion'>): Promise<BatchManifest> {
    this.#assertOpen('commit')
    const full = completeManifest(this.table, this.batchId, manifest, this.#parts)
    await syncDir(this.#dir)
    await writeFileAtomic(join(this.#dir, MANIFEST), `${JSON.stringify(full, null, 2)}\n`)
    this.#state = 'committed'
    // The batch is committed from here on; a leftover scratch folder is harmless, so its removal cannot fail it.
    await rm(this.scratchDir, { recursive: true, force: true }).catch(() => {})
    return full
  }

  /**
   * Removes the batch folder and everything in it. Safe after a failure and when called twice; a no-op after a
   * successful commit (use `StagingStore.deleteBatch` to remove a committed batch).
   */
  async abort(): Promise<void> {
    if (this.#state === 'committed') return
    this.#state = 'aborted'
    await rm(this.#dir, { recursive: true, force: true })
  }

  #assertOpen(operation: string): void {
    if (this.#state !== 'open') {
      throw new StagingError(
        `table ${this.table}: batch ${this.batchId}: ${operation} after the batch was ${this.#state}`,
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
