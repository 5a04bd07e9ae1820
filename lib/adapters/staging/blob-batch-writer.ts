import { rm, stat } from 'node:fs/promises'

import type { BatchManifest, StagedPart } from '../../core/batch.ts'
import { checkpointText, nextCheckpoint, partFileName, type Checkpoint } from '../../core/batch-checkpoint.ts'
import { completeManifest } from '../../core/batch-manifest.ts'
import { StagingError } from '../../core/errors.ts'
import type { BlobStore } from '../../ports/blob-store.ts'
import type { BatchCheckpoint, BatchWriter } from '../../ports/staging-store.ts'
import type { BatchKeys } from './batch-keys.ts'

/**
 * Writes one batch into a blob store: parts as they come (numbered in call order, after the saved parts of
 * earlier passes), then the manifest that commits them, or a checkpoint that suspends the batch.
 */
export class BlobBatchWriter implements BatchWriter {
  readonly table: string
  readonly batchId: string
  readonly scratchDir: string
  readonly #blobs: BlobStore
  readonly #keys: BatchKeys
  readonly #where: string
  /** Saved parts of earlier passes first (from the checkpoint), then the parts this writer adds. */
  readonly #parts: (StagedPart | undefined)[]
  readonly #aborter = new AbortController()
  readonly #pending = new Set<Promise<unknown>>()
  /** The checkpoint this writer resumed from, or the one it saved when it suspended. */
  #checkpoint: Checkpoint | undefined
  #state: 'open' | 'suspended' | 'committed' | 'aborted' = 'open'

  constructor(
    blobs: BlobStore,
    table: string,
    batchId: string,
    keys: BatchKeys,
    scratchDir: string,
    checkpoint?: Checkpoint,
  ) {
    this.#blobs = blobs
    this.table = table
    this.batchId = batchId
    this.#keys = keys
    this.#where = `table ${table}: batch ${batchId}`
    this.scratchDir = scratchDir
    this.#checkpoint = checkpoint
    this.#parts = [...(checkpoint?.parts ?? [])]
  }

  /**
   * Stores `localPath` as the next `part-NNNNN.parquet` and records its size and SHA-256; the local file is
   * consumed. Several calls may run at once.
   */
  async addPart(localPath: string, rows: number): Promise<StagedPart> {
    this.#assertOpen('addPart')
    if (!Number.isSafeInteger(rows) || rows < 0) {
      throw new StagingError(`${this.#where}: invalid row count ${rows} for a part`)
    }
    // Reserve the slot before any await so that concurrent calls get distinct, ordered names.
    const index = this.#parts.length
    this.#parts.push(undefined)
    const name = partFileName(index)
    const work = (async () => {
      try {
        await stat(localPath)
      } catch (error) {
        throw new StagingError(`${this.#where}: part file ${localPath} is not readable`, { cause: error })
      }
      const stored = await this.#blobs.putFile(
        this.#keys.part(name),
        localPath,
        this.#where,
        this.#aborter.signal,
      )
      const part: StagedPart = { name, rows, bytes: stored.bytes, sha256: stored.sha256 }
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
   * Writes `_manifest.json` (format version 1, every part in order), which commits the batch, then removes the
   * start marker, the checkpoint and the scratch folder. Refuses a manifest for another table or batch, one
   * whose `rowCount` differs from the parts' rows, a commit while a part is still being added, and a batch
   * another writer committed meanwhile.
   */
  async commit(manifest: Omit<BatchManifest, 'parts' | 'formatVersion'>): Promise<BatchManifest> {
    this.#assertOpen('commit')
    const full = completeManifest(this.table, this.batchId, manifest, this.#parts)
    const text = `${JSON.stringify(full, null, 2)}\n`
    if (!(await this.#blobs.writeText(this.#keys.manifest, text, this.#where, { ifAbsent: true }))) {
      throw new StagingError(
        `${this.#where} was committed by another writer meanwhile (${this.#blobs.locate(this.#keys.manifest)})`,
      )
    }
    this.#state = 'committed'
    // Committed from here on: leftovers are harmless (readers go by the manifest), so cleaning them cannot fail
    // the commit.
    await this.#blobs.delete(this.#keys.started, this.#where).catch(() => undefined)
    await this.#blobs.delete(this.#keys.progress, this.#where).catch(() => undefined)
    await rm(this.scratchDir, { recursive: true, force: true }).catch(() => undefined)
    return full
  }

  /**
   * Writes `_progress.json` (pass, time, every part so far, `state` as JSON) whole, then removes the scratch
   * folder; the parts stay. The writer is closed: `StagingStore.resumeBatch` continues the batch. Refused while a
   * part is still being added.
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
      const text = checkpointText(this.table, this.batchId, checkpoint)
      await this.#blobs.writeText(this.#keys.progress, text, this.#where)
    } catch (error) {
      if (this.#state === 'suspended') this.#state = 'open'
      throw error
    }
    this.#checkpoint = checkpoint
    await rm(this.scratchDir, { recursive: true, force: true }).catch(() => undefined)
    return checkpoint
  }

  /**
   * Cancels running transfers and removes the batch and the scratch folder. With `keepCheckpoint`, a writer that
   * resumed or suspended removes only its scratch folder and the parts added after its checkpoint. Safe after a
   * failure and twice; a no-op after a successful commit (`StagingStore.deleteBatch` removes a committed
   * batch), and after a suspend when a later pass has committed the batch meanwhile.
   */
  async abort(options?: { readonly keepCheckpoint?: boolean }): Promise<void> {
    if (this.#state === 'committed') return
    const wasSuspended = this.#state === 'suspended'
    this.#state = 'aborted'
    this.#aborter.abort()
    await Promise.allSettled([...this.#pending])
    await rm(this.scratchDir, { recursive: true, force: true })
    const checkpoint = this.#checkpoint
    if (options?.keepCheckpoint === true && checkpoint !== undefined) {
      for (let index = checkpoint.parts.length; index < this.#parts.length; index++) {
        await this.#blobs.delete(this.#keys.part(partFileName(index)), this.#where)
      }
      return
    }
    if (wasSuspended && (await this.#blobs.exists(this.#keys.manifest, this.#where))) return
    await this.#blobs.deleteFolder(this.#keys.folder, this.#where)
  }

  #assertOpen(operation: string): void {
    if (this.#state !== 'open') {
      const hint = this.#state === 'suspended' ? ' (continue it with resumeBatch)' : ''
      throw new StagingError(`${this.#where}: ${operation} after the batch was ${this.#state}${hint}`)
    }
  }
}
