import type { StagedColumn } from '../core/batch.ts'
import type { CompiledScript, CompiledStatement } from '../core/compiled-sql.ts'
import type { DimensionColumn } from '../core/dimension-layout.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { BatchParts } from './staging-store.ts'

export type Row = Record<string, string | number | boolean | null>

/** Whose staged batch a warehouse loads: the table's (or fact's) name and the batch id. */
export interface StagedBatchName {
  readonly table: string
  readonly batchId: string
}

/** The statements of one unit of work, run inside one transaction. */
export interface WarehouseTransaction {
  execute(statement: CompiledStatement): Promise<void>
  /** Rows as JSON-friendly values (BIGINT above 2^53 and timestamps as strings). */
  query(sql: string): Promise<Row[]>
}

export interface TransactionOptions {
  readonly commit: boolean
  /**
   * A warehouse whose memory limit is a default (DuckDB when DIMSYNC_DUCKDB_MEMORY_LIMIT is not set) rolls back a
   * transaction that ran out of memory and runs `work` again with a higher limit; this is told before each new
   * attempt. `work` must be safe to run again: only its statements' effects are rolled back.
   */
  readonly onMemoryRaised?: (raised: MemoryRaised) => void
  /**
   * The transaction is a first load (it fills a dimension it creates: no diff against versions), whose
   * statements stream the batch; a warehouse may give it more threads than a merge whose joins hold every thread's
   * share in memory.
   */
  readonly firstLoad?: boolean
}

/** A transaction ran out of memory at `from` and runs again at `to`. */
export interface MemoryRaised {
  /** The label of the statement that ran out. */
  readonly statement: string
  readonly from: string
  readonly to: string
}

/**
 * The warehouse that keeps the dimensions (embedded DuckDB, or BigQuery). Statements are rendered by the
 * shared renderers in `lib/sql` with this warehouse's `dialect` (a `SqlDialect`); the port carries it without
 * knowing it, since ports do not render SQL (use-cases take a `Warehouse<SqlDialect>`).
 */
export interface Warehouse<Dialect = unknown> {
  readonly dialect: Dialect
  /** Columns of a table, or undefined when it does not exist. */
  describeTable(ref: TableRef): Promise<DimensionColumn[] | undefined>
  /**
   * Creates `schema` (the config's `warehouse.schema`: a DuckDB schema, a BigQuery dataset) when it does not exist;
   * throws naming the statement to run when the warehouse's credentials may not create it.
   */
  createSchemaIfMissing(schema: string): Promise<void>
  /**
   * Makes the staged Parquet parts of `batch` (its table or fact and id, for messages) readable as the temporary
   * table (or view) `__dimsync_stage`; returns its columns. A value the warehouse cannot store refuses the batch
   * (`BatchRejectedError`), naming the column.
   */
  loadStaging(partPaths: readonly string[], batch: StagedBatchName): Promise<StagedColumn[]>
  /**
   * Runs `work` in one transaction. Commits when `work` resolves and `commit` is true; rolls back when it throws
   * (rethrowing) or when `commit` is false (dry run). A failed statement throws `BatchRejectedError` when it is a
   * dimsync check, `WarehouseError` (with the statement's label and SQL) otherwise.
   */
  transaction<T>(work: (tx: WarehouseTransaction) => Promise<T>, options: TransactionOptions): Promise<T>
  query(sql: string): Promise<Row[]>
  close(): Promise<void>
}

/**
 * A warehouse that runs a whole merge as one script job (BigQuery), instead of statement by statement in a
 * client-side transaction. It loads a batch into its own per-batch staging table (load jobs cannot write a
 * script's temporary table). `mergeBatch` uses this path when the warehouse has it.
 */
export interface ScriptWarehouse<Dialect = unknown> extends Warehouse<Dialect> {
  readonly mergeMode: 'script'
  /**
   * Loads the batch's Parquet parts into `stage` (created with an expiration if missing), one load job per group
   * of consecutive parts with a job id derived from table, batch and group: a retry skips the groups already
   * loaded. Given `parts`, each group's parts are fetched only as its job is submitted and freed after it, so
   * local disk holds the groups in flight, not the batch. Resolves only when `stage` holds the manifest's row
   * count (a missing, expired or partial table is reloaded from the parts); else throws a retryable WarehouseError.
   */
  loadBatch(request: LoadBatchRequest): Promise<void>
  /**
   * Runs the script as one query job (job id derived from table and batch; an existing job is awaited, not
   * repeated). Dry run: validates it and returns the bytes BigQuery estimates it would process, then drops the
   * staging table (a plan leaves nothing behind).
   * Throws BatchRejectedError / MassDeleteRefusedError for dimsync's checks, WarehouseError otherwise.
   */
  runMergeScript(request: MergeScriptRequest): Promise<MergeScriptResult>
}

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

/** One read of a merge script: the bytes BigQuery's dry run estimates, or why BigQuery cannot price it alone. */
export type ReadEstimate =
  | { readonly label: string; readonly bytes: number }
  | { readonly label: string; readonly notEstimable: string }

export function isScriptWarehouse<Dialect>(
  warehouse: Warehouse<Dialect>,
): warehouse is ScriptWarehouse<Dialect> {
  return (warehouse as Partial<ScriptWarehouse>).mergeMode === 'script'
}
