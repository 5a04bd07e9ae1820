import type { BatchManifest, StagedColumn } from '../core/batch.ts'
import type { BatchWork, TransactionWork } from '../core/batch-work.ts'
import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { DimensionColumn } from '../core/dimension-layout.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { BatchOnDemand, OpenedBatch, StagingStore } from './staging-store.ts'

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
   * Runs `work` in one transaction. Commits when `work` resolves and `commit` is true; rolls back when it throws
   * (rethrowing) or when `commit` is false (dry run). A failed statement throws `BatchRejectedError` when it is a
   * dimsync check, `WarehouseError` (with the statement's label and SQL) otherwise.
   */
  transaction<T>(work: (tx: WarehouseTransaction) => Promise<T>, options: TransactionOptions): Promise<T>
  query(sql: string): Promise<Row[]>
  /**
   * Runs one statement on its own and commits it (DDL, or one write outside a batch's work such as an unknown
   * member): in a transaction where the warehouse runs DDL in one, else as a plain job.
   */
  runAlone(statement: CompiledStatement, options?: Pick<TransactionOptions, 'onMemoryRaised'>): Promise<void>
  /**
   * Applies `work` in one transaction: its DDL inside it where DDL rolls back with it, else before it (each
   * statement on its own: they are idempotent); then the statements and the report. Commits unless `dryRun`.
   */
  applyInTransaction(work: TransactionWork, options: ApplyOptions): Promise<AppliedWork>
  /**
   * Opens a committed batch of `staging` the way this warehouse reads its parts: all at once as local files
   * (a session reads them), or group by group as its load jobs need them (BigQuery: the merge function's disk is
   * smaller than a large batch). Throws as the staging store's `openBatch` / `openBatchOnDemand` do.
   */
  openBatch(staging: StagingStore, batch: StagedBatchName): Promise<WarehouseBatch>
  /**
   * Makes the batch's rows readable to the statements of its work: the session's temporary `__dimsync_stage`
   * (DuckDB, PostgreSQL), or a per-batch table filled by load jobs (BigQuery, after moving the lease fence up to
   * `fence`: the script checks it at COMMIT). Returns the staged columns and that table (undefined: the session's).
   * A value the warehouse cannot store refuses the batch (`BatchRejectedError`), naming the column.
   */
  stageBatch(batch: WarehouseBatch, request: StageBatchRequest): Promise<StagedBatch>
  /** Drops what `stageBatch` loaded for work that will not be applied (a snapshot already merged). */
  dropStaged(staged: StagedBatch): Promise<void>
  /**
   * Applies the work planned on a staged batch, all of it or nothing: in one transaction (DuckDB, PostgreSQL,
   * see `applyInTransaction`), or as one script job (BigQuery), which also drops the batch's staging table.
   */
  applyWork(work: BatchWork, request: ApplyWorkRequest): Promise<AppliedWork>
  /**
   * Runs `work` as the only writer of `objects` among every dimsync that shares this warehouse, from its first
   * read of them to its COMMIT: two installations (two machines, two copies of a project) have no lease in common.
   * A warehouse others reach at once (PostgreSQL) waits for their writes, then refuses (`WarehouseBusyError`,
   * retryable) when the wait runs out; DuckDB's file lock already makes one process its only writer, and BigQuery
   * aborts a transaction that changed a table another changed first.
   */
  whileWriting<T>(objects: readonly TableRef[], work: () => Promise<T>): Promise<T>
  close(): Promise<void>
}

/** A committed batch, opened by `Warehouse.openBatch`. */
export interface WarehouseBatch {
  readonly manifest: BatchManifest
  /** The parts as the warehouse opened them. */
  readonly opened: OpenedBatch | BatchOnDemand
  /** Frees local copies of parts. */
  release(): Promise<void>
}

export interface StageBatchRequest {
  /** The table the batch is merged into (a fact's: `factStagingTable`): its name, target and columns. */
  readonly table: TableSpec
  readonly batchId: string
  /** The config's `warehouse.schema`: where a per-batch staging table is created. */
  readonly schema: string
  /** A lease holder's fence, moved up to its token before the load (a merge that is not a dry run). */
  readonly fence?: LeaseFence
}

/** A run's lease (its fencing token and owner) and the time it moves the table's fence up to it. */
export interface LeaseFence {
  readonly holder: { readonly token: number; readonly owner: string }
  readonly at: string
}

export interface StagedBatch {
  /** The staged columns, in file order. */
  readonly columns: readonly StagedColumn[]
  /** The per-batch table the batch was loaded into; undefined: the session's temporary `__dimsync_stage`. */
  readonly stage?: TableRef
}

export interface ApplyOptions {
  readonly dryRun: boolean
  /** Called just before COMMIT (a lease check; throwing rolls back), or before a script job is submitted. */
  readonly beforeCommit?: () => Promise<void>
  readonly onMemoryRaised?: (raised: MemoryRaised) => void
  /**
   * Queries whose rows the result shows before the work and inside its transaction after it (a dry run's key
   * histories); `before: false` reads them only after. A warehouse that runs the work as one job reads none.
   */
  readonly around?: { readonly queries: readonly string[]; readonly before: boolean }
}

export interface ApplyWorkRequest extends ApplyOptions {
  /** The table the batch is merged into (a fact's: `factStagingTable`), naming its jobs. */
  readonly table: TableSpec
  readonly batchId: string
  readonly staged: StagedBatch
  /**
   * The dimension's columns after the work, with their staged types: a warehouse whose column types are coarser
   * (BigQuery's INT64 for INTEGER and BIGINT) records them for `describeTable`.
   */
  readonly columns?: readonly DimensionColumn[]
}

export interface AppliedWork {
  /** The report's row (absent on a script's dry run). */
  readonly row?: Row
  /** Every statement of the work, in the order it ran. */
  readonly statements: readonly CompiledStatement[]
  /** `ApplyOptions.around`: the rows of each query before and after, when the warehouse read them. */
  readonly around?: { readonly before: readonly Row[][]; readonly after: readonly Row[][] }
  /** A script job's: the bytes BigQuery processed, or (dry run) estimates for each read and in all. */
  readonly bytesProcessed?: number
  readonly reads?: readonly ReadEstimate[]
  readonly warnings?: readonly string[]
}

/** One read of a merge script: the bytes BigQuery's dry run estimates, or why BigQuery cannot price it alone. */
export type ReadEstimate =
  | { readonly label: string; readonly bytes: number }
  | { readonly label: string; readonly notEstimable: string }
