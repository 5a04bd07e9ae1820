import type { BatchManifest, StagedPart } from '../core/batch.ts'

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
  /** Removes everything written so far. Safe to call after a failure, and twice. */
  abort(): Promise<void>
}

/** A committed batch opened for reading: part files available as local paths, checksums verified. */
export interface OpenedBatch {
  readonly manifest: BatchManifest
  readonly partPaths: readonly string[]
  /** Frees local copies (S3); a no-op for the local store. */
  release(): Promise<void>
}

/**
 * Staging area for batches: `<root>/<table>/<batchId>/part-NNNNN.parquet` plus `_manifest.json` written last.
 */
export interface StagingStore {
  beginBatch(table: string, batchId: string): Promise<BatchWriter>
  /** Committed batches of a table, oldest extraction first. */
  listBatches(table: string): Promise<readonly BatchManifest[]>
  /** Throws `StagingError` when the manifest is missing, a part is missing or a checksum differs. */
  openBatch(table: string, batchId: string): Promise<OpenedBatch>
  deleteBatch(table: string, batchId: string): Promise<void>
  /** Deletes batch folders that have no manifest and are older than `olderThan` (abandoned extracts). */
  removeAbandoned(table: string, olderThan: Date): Promise<readonly string[]>
}
