import type { StagedColumn } from '../../core/batch.ts'
import type { TableSpec } from '../../core/table-spec.ts'
import type { Row, Warehouse } from '../../ports/warehouse.ts'
import type { TableRef } from '../dialect.ts'
import type { CompiledScript } from '../../core/compiled-sql.ts'

/**
 * A warehouse that runs a whole merge as one script job (BigQuery), instead of statement by statement in a
 * client-side transaction. It loads a batch into its own per-batch staging table (load jobs cannot write a
 * script's temporary table). `mergeBatch` uses this path when the warehouse has it.
 */
export interface ScriptWarehouse extends Warehouse {
  readonly mergeMode: 'script'
  /**
   * Loads the batch's Parquet parts into `stage` (created with an expiration if missing), one load job per part
   * with a job id derived from table, batch and part: a retry skips the parts already loaded.
   */
  loadBatch(request: LoadBatchRequest): Promise<void>
  /**
   * Runs the script as one query job (job id derived from table and batch; an existing job is awaited, not
   * repeated). Dry run: validates it and returns the bytes BigQuery estimates it would process.
   * Throws BatchRejectedError / MassDeleteRefusedError for dimsync's checks, WarehouseError otherwise.
   */
  runMergeScript(request: MergeScriptRequest): Promise<MergeScriptResult>
}

export interface LoadBatchRequest {
  readonly table: TableSpec
  readonly batchId: string
  readonly stage: TableRef
  readonly partPaths: readonly string[]
  /** Staged columns (manifest), in file order. */
  readonly columns: readonly StagedColumn[]
}

export interface MergeScriptRequest {
  readonly table: TableSpec
  readonly batchId: string
  readonly script: CompiledScript
  readonly dryRun: boolean
}

export interface MergeScriptResult {
  /** The script's last statement (counts), absent on a dry run. */
  readonly row?: Row
  /** Bytes BigQuery processed (run) or estimates it would process (dry run). */
  readonly bytesProcessed?: number
}

export function isScriptWarehouse(warehouse: Warehouse): warehouse is ScriptWarehouse {
  return (warehouse as Partial<ScriptWarehouse>).mergeMode === 'script'
}
