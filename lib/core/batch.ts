/**
 * A staged batch: the Parquet part files of one extract and the manifest that commits them. The manifest is
 * written last; a batch without one does not exist for the merge.
 */

import type { SourceTypes } from './source-types.ts'

export type ColumnType = string

/** A source column as staged: its name and its DuckDB logical type (`BIGINT`, `VARCHAR`, `TIMESTAMP`, ...). */
export interface StagedColumn {
  readonly name: string
  readonly type: ColumnType
}

export interface StagedPart {
  /** File name inside the batch (`part-00000.parquet`). */
  readonly name: string
  readonly rows: number
  readonly bytes: number
  /** Hex SHA-256 of the file's bytes, verified when the batch is read. */
  readonly sha256: string
}

/**
 * Position of an incremental extract: rows are read in (cursor, key) order and a row is new when its
 * (cursor, key) tuple is greater than the watermark. Values are JSON scalars (timestamps as ISO strings).
 */
export interface Watermark {
  readonly cursor: string | number
  readonly key: readonly (string | number)[]
  /**
   * The cursor column the position is a value of, as committed (database sources; absent for `files: new_only`,
   * and in watermarks kept by a dimsync that did not record it). A watermark of another column is never read as a
   * value of the table's cursor (see watermarkToReadFrom).
   */
  readonly column?: string
  /** The batch whose merge committed this watermark: the warehouse's ledger must hold it (absent before it was kept). */
  readonly batchId?: string
  /** `files: new_only` with `time_from_name`: the newest time read from a merged file's name (lib/core/dated-files.ts). */
  readonly namedTime?: string
}

export interface BatchManifest {
  readonly formatVersion: 1
  readonly table: string
  readonly batchId: string
  /** ISO instant (UTC, microseconds allowed) at which the source was read: the batch's business time. */
  readonly extractedAt: string
  readonly mode: 'full' | 'incremental'
  readonly rowCount: number
  readonly columns: readonly StagedColumn[]
  readonly parts: readonly StagedPart[]
  /** Watermark to commit once the batch is merged (incremental extracts only). */
  readonly watermarkCandidate?: Watermark
  /** Where the rows came from (file names, or a database snapshot id), for audits. */
  readonly sourceDescription: string
  /** How the source's CSV columns were read (CSV sources): recorded once the batch is merged. */
  readonly sourceTypes?: SourceTypes
}
