import type { BatchManifest } from '../../core/batch.ts'
import { noCheckpointError, parseCheckpoint } from '../../core/batch-checkpoint.ts'
import { checkManifest, compareManifests, MANIFEST_FILE, PART_NAME } from '../../core/batch-manifest.ts'
import { StagingError } from '../../core/errors.ts'
import type { BlobInfo, BlobStore } from '../../ports/blob-store.ts'
import type {
  BatchCheckpoint,
  BatchOnDemand,
  BatchParts,
  BatchWriter,
  OpenedBatch,
  StagedListing,
  StagingStore,
  UncommittedBatch,
} from '../../ports/staging-store.ts'
import { BlobBatchWriter } from './blob-batch-writer.ts'
import { batchKeys, isBatchId, PROGRESS, tableFolder } from './batch-keys.ts'

/**
 * The staging store, over any blob store (a local folder, an S3 prefix): `<table>/<batchId>/part-NNNNN.parquet`
 * plus `_manifest.json`, written last and whole, so a batch is either committed or invisible to readers. Parts
 * are checked against the manifest (size and SHA-256) before a reader gets them. A suspended batch holds
 * `_progress.json` (its checkpoint) instead of a manifest until a later pass commits it.
 */
export class BlobStagingStore implements StagingStore {
  readonly #blobs: BlobStore

  constructor(blobs: BlobStore) {
    this.#blobs = blobs
  }

  /**
   * Starts a batch: refuses a batch id that is already committed (`StagingError`: batches are immutable),
   * removes what an earlier uncommitted attempt with the same id left, writes the `_started.json` marker and
   * makes a scratch folder for the source.
   */
  async beginBatch(table: string, batchId: string): Promise<BatchWriter> {
    const keys = batchKeys(table, batchId)
    const where = `table ${table}: batch ${batchId}`
    if (await this.#blobs.exists(keys.manifest, where)) {
      throw new StagingError(`${where} is already committed in ${this.#blobs.locate(keys.folder)}`)
    }
    await this.#blobs.deleteFolder(keys.folder, where)
    const started = JSON.stringify({ table, batchId, startedAt: new Date().toISOString() })
    await this.#blobs.writeText(keys.started, started, where)
    const scratchDir = await this.#blobs.scratchFolder(keys.folder)
    return new BlobBatchWriter(this.#blobs, table, batchId, keys, scratchDir)
  }

  /**
   * Reopens a suspended batch: refuses a committed batch and one without `_progress.json` (`StagingError`),
   * checks the checkpoint, deletes the parts it does not list (left by a pass that failed or crashed), checks
   * that every listed part is there with its recorded size (checksums are verified by `openBatch`) and makes a
   * fresh scratch folder. The writer numbers its parts after the saved ones.
   */
  async resumeBatch(
    table: string,
    batchId: string,
  ): Promise<{ writer: BatchWriter; checkpoint: BatchCheckpoint }> {
    const keys = batchKeys(table, batchId)
    const where = `table ${table}: batch ${batchId}`
    if (await this.#blobs.exists(keys.manifest, where)) {
      throw new StagingError(
        `${where} is already committed in ${this.#blobs.locate(keys.folder)}; a committed batch cannot be resumed`,
      )
    }
    const text = await this.#blobs.readText(keys.progress, where)
    if (text === undefined) throw noCheckpointError(table, batchId)
    const checkpoint = parseCheckpoint(table, batchId, this.#blobs.locate(keys.progress), text)
    const sizes = new Map<string, number>()
    for (const blob of await this.#blobs.list(keys.folder, where)) {
      const name = blob.key.slice(keys.folder.length + 1)
      if (PART_NAME.test(name)) sizes.set(name, blob.bytes)
    }
    const saved = new Set(checkpoint.parts.map((part) => part.name))
    for (const name of sizes.keys()) {
      if (!saved.has(name)) await this.#blobs.delete(keys.part(name), where)
    }
    for (const part of checkpoint.parts) {
      const bytes = sizes.get(part.name)
      const location = this.#blobs.locate(keys.part(part.name))
      if (bytes === undefined) {
        throw new StagingError(`${where}: part ${part.name} of the checkpoint is missing (${location})`)
      }
      if (bytes !== part.bytes) {
        throw new StagingError(
          `${where}: part ${part.name} has ${bytes} bytes, the checkpoint says ${part.bytes} (${location})`,
        )
      }
    }
    const scratchDir = await this.#blobs.scratchFolder(keys.folder)
    return {
      writer: new BlobBatchWriter(this.#blobs, table, batchId, keys, scratchDir, checkpoint),
      checkpoint,
    }
  }

  /** Committed batches of `table` (those with a manifest), oldest `extractedAt` first, ties by batch id. */
  async listBatches(table: string): Promise<readonly BatchManifest[]> {
    return await this.#committed(table, await this.#blobsOf(table))
  }

  /** `listBatches` and `listUncommitted` from one listing of the table's folder. */
  async listStaged(table: string): Promise<StagedListing> {
    const blobs = await this.#blobsOf(table)
    return { committed: await this.#committed(table, blobs), uncommitted: uncommittedOf(table, blobs) }
  }

  async #blobsOf(table: string): Promise<readonly BlobInfo[]> {
    return await this.#blobs.list(tableFolder(table), `table ${table}`)
  }

  async #committed(table: string, blobs: readonly BlobInfo[]): Promise<readonly BatchManifest[]> {
    const folder = tableFolder(table)
    const manifests: BatchManifest[] = []
    for (const blob of blobs) {
      const [batchId, name, ...deeper] = blob.key.slice(folder.length + 1).split('/')
      if (batchId === undefined || name !== MANIFEST_FILE || deeper.length > 0 || !isBatchId(batchId))
        continue
      const manifest = await this.#readManifest(table, batchId)
      if (manifest !== undefined) manifests.push(manifest)
    }
    return manifests.sort(compareManifests)
  }

  /**
   * Opens a committed batch: every part as a local file, checked against the manifest (present, same size,
   * same SHA-256) before the paths are handed out. Any difference is a `StagingError` naming the batch and the
   * part, and nothing is left behind. `release()` frees local copies (S3).
   */
  async openBatch(table: string, batchId: string): Promise<OpenedBatch> {
    const manifest = await this.#committedManifest(table, batchId)
    const parts = this.#parts(table, manifest)
    const local = await parts.fetch(manifest.parts.map((_, index) => index))
    return { manifest, partPaths: local.paths, release: () => local.release() }
  }

  /**
   * Opens a committed batch without reading its parts: each `fetch` downloads (S3) the parts asked for and checks
   * them against the manifest like `openBatch`, so a load holds only the parts it is working on.
   */
  async openBatchOnDemand(table: string, batchId: string): Promise<BatchOnDemand> {
    const manifest = await this.#committedManifest(table, batchId)
    return { manifest, parts: this.#parts(table, manifest) }
  }

  /** `openBatch` with the manifest the caller holds (read when the batch was listed, or written by its commit). */
  async openListedBatch(table: string, manifest: BatchManifest): Promise<OpenedBatch> {
    const parts = this.#parts(table, listedManifest(table, manifest))
    const local = await parts.fetch(manifest.parts.map((_, index) => index))
    return { manifest, partPaths: local.paths, release: () => local.release() }
  }

  /** `openBatchOnDemand` with the manifest the caller holds. */
  async openListedBatchOnDemand(table: string, manifest: BatchManifest): Promise<BatchOnDemand> {
    return { manifest, parts: this.#parts(table, listedManifest(table, manifest)) }
  }

  async #committedManifest(table: string, batchId: string): Promise<BatchManifest> {
    const manifest = await this.#readManifest(table, batchId)
    if (manifest !== undefined) return manifest
    const keys = batchKeys(table, batchId)
    throw new StagingError(
      `table ${table}: batch ${batchId} is not committed (no ${this.#blobs.locate(keys.manifest)})`,
    )
  }

  #parts(table: string, manifest: BatchManifest): BatchParts {
    const keys = batchKeys(table, manifest.batchId)
    const where = `table ${table}: batch ${manifest.batchId}`
    return {
      names: manifest.parts.map((part) => part.name),
      bytes: manifest.parts.map((part) => part.bytes),
      fetch: async (indexes) => {
        const parts = indexes.map((index) => manifest.parts[index]!)
        const local = await this.#blobs.readLocally(
          parts.map((part) => keys.part(part.name)),
          where,
        )
        try {
          const paths = parts.map((part, index) => {
            const file = local.files[index]
            const location = this.#blobs.locate(keys.part(part.name))
            if (file === undefined)
              throw new StagingError(`${where}: part ${part.name} is missing (${location})`)
            if (file.bytes !== part.bytes) {
              throw new StagingError(
                `${where}: part ${part.name} has ${file.bytes} bytes, manifest says ${part.bytes} (${location})`,
              )
            }
            if (file.sha256 !== part.sha256) {
              throw new StagingError(
                `${where}: part ${part.name} checksum mismatch (sha256 ${file.sha256}, manifest says ${part.sha256}; ` +
                  `${location})`,
              )
            }
            return file.path
          })
          return { paths, release: () => local.release() }
        } catch (error) {
          await local.release()
          throw error
        }
      },
    }
  }

  /**
   * Deletes a batch, committed or not. The manifest goes first so that a crash half-way leaves an uncommitted
   * batch (removed later by `removeAbandoned`), never a manifest pointing at missing parts. Missing: no-op.
   */
  async deleteBatch(table: string, batchId: string): Promise<void> {
    const keys = batchKeys(table, batchId)
    const where = `table ${table}: batch ${batchId}`
    await this.#blobs.delete(keys.manifest, where)
    await this.#blobs.deleteFolder(keys.folder, where)
  }

  /**
   * Deletes uncommitted batches of `table` (no manifest) in which nothing was written since `olderThan`: the
   * start marker, every part, the checkpoint of a suspended batch and (local folder) the files the source is
   * still writing count, so an extract still at work, or suspended since `olderThan`, is left alone. Returns
   * the removed ids, sorted.
   */
  async removeAbandoned(
    table: string,
    olderThan: Date,
    listed?: readonly UncommittedBatch[],
  ): Promise<readonly string[]> {
    const removed: string[] = []
    for (const batch of listed ?? (await this.listUncommitted(table))) {
      if (Date.parse(batch.lastWrittenAt) >= olderThan.getTime()) continue
      const { batchId } = batch
      await this.#blobs.deleteFolder(batchKeys(table, batchId).folder, `table ${table}: batch ${batchId}`)
      removed.push(batchId)
    }
    return removed
  }

  /** Batches of `table` without a manifest, by batch id, with the time of their newest blob. */
  async listUncommitted(table: string): Promise<readonly UncommittedBatch[]> {
    return uncommittedOf(table, await this.#blobsOf(table))
  }

  async #readManifest(table: string, batchId: string): Promise<BatchManifest | undefined> {
    const key = batchKeys(table, batchId).manifest
    const text = await this.#blobs.readText(key, `table ${table}: batch ${batchId}`)
    if (text === undefined) return undefined
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (error) {
      throw new StagingError(
        `table ${table}: batch ${batchId}: unreadable manifest ${this.#blobs.locate(key)}`,
        { cause: error },
      )
    }
    return checkManifest(table, batchId, this.#blobs.locate(key), parsed)
  }
}

/** The batches of a table's blobs that have no manifest, by batch id, with the time of their newest blob. */
function uncommittedOf(table: string, blobs: readonly BlobInfo[]): readonly UncommittedBatch[] {
  const folder = tableFolder(table)
  const batches = new Map<string, { committed: boolean; suspended: boolean; newest: number }>()
  for (const blob of blobs) {
    const [batchId, name] = blob.key.slice(folder.length + 1).split('/')
    if (batchId === undefined || name === undefined || !isBatchId(batchId)) continue
    const entry = batches.get(batchId) ?? { committed: false, suspended: false, newest: 0 }
    entry.committed ||= name === MANIFEST_FILE
    entry.suspended ||= name === PROGRESS
    entry.newest = Math.max(entry.newest, blob.modifiedAt)
    batches.set(batchId, entry)
  }
  return [...batches]
    .filter(([, entry]) => !entry.committed)
    .map(([batchId, entry]) => ({
      batchId,
      lastWrittenAt: new Date(entry.newest).toISOString(),
      suspended: entry.suspended,
    }))
    .sort((a, b) => (a.batchId < b.batchId ? -1 : a.batchId > b.batchId ? 1 : 0))
}

/** A manifest handed in by a caller, checked to be the table's (its parts' keys are built from its batch id). */
function listedManifest(table: string, manifest: BatchManifest): BatchManifest {
  batchKeys(table, manifest.batchId)
  if (manifest.table !== table)
    throw new StagingError(
      `table ${table}: batch ${manifest.batchId}'s manifest names table ${manifest.table}`,
    )
  return manifest
}
