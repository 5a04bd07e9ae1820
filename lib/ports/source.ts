import type { StagedColumn, Watermark } from '../core/batch.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { BatchWriter } from './staging-store.ts'

export interface ExtractRequest {
  readonly table: TableSpec
  readonly batchId: string
  readonly extractedAt: Date
  /** Last committed watermark (incremental extracts); undefined on the first run. */
  readonly watermark?: Watermark
  /** Receives the Parquet part files. The source never writes the manifest. */
  readonly writer: BatchWriter
  /** Called now and then with the rows written so far (progress display). */
  readonly onProgress?: (rows: number) => void
}

export interface ExtractResult {
  readonly rows: number
  readonly columns: readonly StagedColumn[]
  readonly watermarkCandidate?: Watermark
  readonly sourceDescription: string
}

/**
 * Reads one table of an operational system and writes it as Parquet part files.
 * Contract: memory stays bounded whatever the table size; on any error no part is left committed
 * (the caller aborts the batch) and the error is a `SourceError` naming the table and what failed.
 */
export interface Source {
  /** The columns an extract of `table` would stage (names and DuckDB types), without staging anything. */
  describe(table: TableSpec): Promise<readonly StagedColumn[]>
  extract(request: ExtractRequest): Promise<ExtractResult>
  close(): Promise<void>
}
