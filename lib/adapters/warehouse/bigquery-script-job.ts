import type { StagedColumn } from '../../core/batch.ts'
import type { CompiledScript } from '../../core/compiled-sql.ts'
import type { DimensionColumn } from '../../core/dimension-layout.ts'
import type { TableRef } from '../../core/table-ref.ts'
import type { TableSpec } from '../../core/table-spec.ts'
import type { BatchParts } from '../../ports/staging-store.ts'
import type { ReadEstimate, Row } from '../../ports/warehouse.ts'

/**
 * BigQuery's two jobs of a batch (bigquery-warehouse.ts): its parts loaded into a per-batch staging table (load
 * jobs cannot write a script's temporary table), then the whole merge or fact load as one script job.
 */

/** The batch's parts: local files already there, or fetched group by group as the load needs them. */
export type LoadBatchRequest = LoadBatchCommon &
  ({ readonly partPaths: readonly string[] } | { readonly parts: BatchParts })

export interface LoadBatchCommon {
  readonly table: TableSpec
  readonly batchId: string
  readonly stage: TableRef
  /** Staged columns (manifest), in file order. */
  readonly columns: readonly StagedColumn[]
  /** Rows the batch holds (manifest): the staging table must hold exactly these before a merge reads it. */
  readonly rowCount: number
}

export interface MergeScriptRequest {
  readonly table: TableSpec
  readonly batchId: string
  readonly script: CompiledScript
  readonly dryRun: boolean
  /** The batch's staging table the script reads (its run drops it): a dry run drops it too, leaving nothing. */
  readonly stage: TableRef
  /**
   * The dimension's columns after this merge with their staged types. A warehouse whose column types are coarser
   * than the staged ones (BigQuery's INT64 for INTEGER and BIGINT) records them for `describeTable`, somewhere
   * users do not edit (not in column descriptions).
   */
  readonly columns?: readonly DimensionColumn[]
}

export interface MergeScriptResult {
  /** The script's last statement (counts), absent on a dry run. */
  readonly row?: Row
  /** Bytes BigQuery processed (run) or estimates it would process (dry run: the sum of `reads`). */
  readonly bytesProcessed?: number
  /** Dry run: each read of the script as BigQuery prices it on its own (see standalone-reads.ts). */
  readonly reads?: readonly ReadEstimate[]
  /** What a run would refuse or should know (a partition expiration that deletes closed history). */
  readonly warnings?: readonly string[]
}
