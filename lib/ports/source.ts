import type { StagedColumn, Watermark } from '../core/batch.ts'
import type { SourceTypes } from '../core/source-types.ts'
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
  /**
   * Milliseconds this pass may still run (a Lambda's remaining time less a reserve). When given, a source that
   * can continue later may stop between two parts of its work and return `resume`; without it the extract
   * always runs to the end.
   */
  readonly timeLeftMs?: () => number
  /** The `resume` of the previous pass of this batch: where this pass continues. */
  readonly resume?: unknown
  /** How the table's CSV columns were read by the loads merged so far (`StateStore.getSourceTypes`). */
  readonly sourceTypes?: SourceTypes
}

export interface ExtractResult {
  /** Rows staged by this pass (a resumed extract: this pass only). */
  readonly rows: number
  readonly columns: readonly StagedColumn[]
  readonly watermarkCandidate?: Watermark
  readonly sourceDescription: string
  /**
   * Present when the source stopped early because `timeLeftMs` ran low: a JSON value to pass back as
   * `ExtractRequest.resume` in the next pass. Absent when the extract is complete.
   */
  readonly resume?: unknown
  /**
   * How this extract read its CSV columns (the recorded types, plus the columns it read for the first time):
   * kept in the manifest and recorded once the batch is merged, so later extracts read the same way.
   */
  readonly sourceTypes?: SourceTypes
}

/**
 * Reads one table of an operational system and writes it as Parquet part files.
 * Contract: memory stays bounded whatever the table size; on any error no part is left committed
 * (the caller aborts the batch) and the error is a `SourceError` naming the table and what failed.
 */
export interface Source {
  /**
   * The columns an extract of `table` would stage (names and DuckDB types), without staging anything; a CSV
   * source reads with `sourceTypes` when given, as an extract does.
   */
  describe(table: TableSpec, sourceTypes?: SourceTypes): Promise<readonly StagedColumn[]>
  extract(request: ExtractRequest): Promise<ExtractResult>
  close(): Promise<void>
}
