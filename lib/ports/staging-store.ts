import type { BatchManifest, StagedPart } from '../core/batch.ts'

/**
 * What an extract that ran out of time saved before it stopped (`_progress.json` in the batch folder): the parts
 * staged so far and the extract's own JSON state (where the source continues, the extraction time, the
 * watermark it started from). The batch stays uncommitted until a later pass commits it.
 */
export interface BatchCheckpoint {
  /** 1 after the first pass was suspended, 2 after the second, ... */
  readonly pass: number
  readonly savedAt: string
  /** Every part staged by the passes so far, in order. */
  readonly parts: readonly StagedPart[]
  /** A JSON value owned by the extract (opaque to the store). */
  readonly state: unknown
}

/** Writes the parts of one batch. Nothing is visible to readers until `commit` writes the manifest. */
export interface BatchWriter {
  readonly table: string
  readonly batchId: string
  /** A local scratch folder where a source may create part files before handing them to `addPart`. */
  readonly scratchDir: string
  /** Moves (local) or uploads (S3) a finished part file; the local file is consumed. */
  addPart(localPath: string, rows: number): Promise<StagedPart>
  /** Writes the manifest (the commit marker) and returns it. */
  commit(manifest: Omit<BatchManifest, 'parts' | 'formatVersion'>): Promise<BatchManifest>
  /**
   * Saves a checkpoint (every part added so far, and `state`) and closes this writer without removing any part;
   * the local scratch folder is removed. The batch stays uncommitted; `StagingStore.resumeBatch` continues it.
   * Refused while a part is still uploading.
   */
  suspend(state: unknown): Promise<BatchCheckpoint>
  /**
   * Removes everything written so far. Safe to call after a failure, and twice. With `keepCheckpoint`, a batch
   * that has a checkpoint keeps it and its parts (only parts added after it are removed), so the pass can be
   * retried with `resumeBatch`; a batch without a checkpoint is removed entirely either way.
   */
  abort(options?: { readonly keepCheckpoint?: boolean }): Promise<void>
}

/** A committed batch opened for reading: part files available as local paths, checksums verified. */
export interface OpenedBatch {
  readonly manifest: BatchManifest
  readonly partPaths: readonly string[]
  /** Frees local copies (S3); a no-op for the local store. */
  release(): Promise<void>
}

/**
 * A committed batch whose parts are fetched when a reader needs them, a few at a time, so that a load holds only
 * the parts it is working on (the merge function's ephemeral storage is smaller than a large batch).
 */
export interface BatchOnDemand {
  readonly manifest: BatchManifest
  readonly parts: BatchParts
}

/** The parts of a batch, in manifest order, fetched on demand. */
export interface BatchParts {
  /** Part names, for messages. */
  readonly names: readonly string[]
  /** Part sizes in bytes. */
  readonly bytes: readonly number[]
  /**
   * The parts at `indexes` as local files, each checked against the manifest (present, same size, same SHA-256;
   * else a `StagingError` naming the batch and the part, nothing left behind). `release` frees the copies.
   */
  fetch(indexes: readonly number[]): Promise<LocalParts>
}

export interface LocalParts {
  readonly paths: readonly string[]
  release(): Promise<void>
}

/** A batch its extract never committed: one still at work, suspended between passes, or abandoned by a crash. */
export interface UncommittedBatch {
  readonly batchId: string
  /** When anything of the batch was last written (ISO instant). */
  readonly lastWrittenAt: string
  /** It holds a checkpoint: a multi-pass extract suspended it, and a later pass may continue it. */
  readonly suspended: boolean
}

/** A table's staged batches from one listing of its folder: what `listBatches` and `listUncommitted` answer. */
export interface StagedListing {
  /** Committed batches, oldest extraction first (as `listBatches`). */
  readonly committed: readonly BatchManifest[]
  /** Batches without a manifest, by batch id (as `listUncommitted`). */
  readonly uncommitted: readonly UncommittedBatch[]
}

/**
 * Staging area for batches: `<root>/<table>/<batchId>/part-NNNNN.parquet` plus `_manifest.json` written last.
 */
export interface StagingStore {
  beginBatch(table: string, batchId: string): Promise<BatchWriter>
  /**
   * Reopens an uncommitted batch that a writer suspended: the writer's next part is numbered after the saved
   * ones, and its commit lists saved and new parts. Parts not in the checkpoint (left by a pass that failed)
   * are deleted first. `StagingError` naming the table and batch when the batch is committed, or has no
   * checkpoint (never suspended, or removed).
   */
  resumeBatch(table: string, batchId: string): Promise<{ writer: BatchWriter; checkpoint: BatchCheckpoint }>
  /** Committed batches of a table, oldest extraction first. */
  listBatches(table: string): Promise<readonly BatchManifest[]>
  /** Throws `StagingError` when the manifest is missing, a part is missing or a checksum differs. */
  openBatch(table: string, batchId: string): Promise<OpenedBatch>
  /**
   * A committed batch whose parts are fetched (and checked) only when asked for. Throws `StagingError` when the
   * manifest is missing; a missing or damaged part fails its `fetch`.
   */
  openBatchOnDemand(table: string, batchId: string): Promise<BatchOnDemand>
  deleteBatch(table: string, batchId: string): Promise<void>
  /**
   * Deletes batch folders that have no manifest and are older than `olderThan` (abandoned extracts). `listed`:
   * the table's uncommitted batches as `listStaged` answered them under the table's lease (nothing else wrote
   * the table's staging since), so the folder is not listed again.
   */
  removeAbandoned(
    table: string,
    olderThan: Date,
    listed?: readonly UncommittedBatch[],
  ): Promise<readonly string[]>
  /** Batches of a table that have no manifest (see `UncommittedBatch`), by batch id; `deleteBatch` removes one. */
  listUncommitted(table: string): Promise<readonly UncommittedBatch[]>
  /**
   * `listBatches` and `listUncommitted` from one listing of the table's folder (a run lists its table once). A
   * store without it is asked both.
   */
  listStaged?(table: string): Promise<StagedListing>
  /**
   * `openBatch` of a batch whose manifest the caller holds (listed under the table's lease, or returned by its
   * commit): a committed manifest never changes, so it is not read again; the parts are checked against it as
   * `openBatch` checks them. A store without it is asked `openBatch`.
   */
  openListedBatch?(table: string, manifest: BatchManifest): Promise<OpenedBatch>
  /** `openBatchOnDemand` of a batch whose manifest the caller holds (see `openListedBatch`). */
  openListedBatchOnDemand?(table: string, manifest: BatchManifest): Promise<BatchOnDemand>
}
