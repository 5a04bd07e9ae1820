import type { StagedColumn } from '../core/batch.ts'
import type { DimensionColumn } from '../core/dimension-layout.ts'
import type { CompiledStatement, SqlDialect, TableRef } from '../sql/dialect.ts'

export type Row = Record<string, string | number | boolean | null>

/** The statements of one unit of work, run inside one transaction. */
export interface WarehouseTransaction {
  execute(statement: CompiledStatement): Promise<void>
  /** Rows as JSON-friendly values (BIGINT above 2^53 and timestamps as strings). */
  query(sql: string): Promise<Row[]>
}

/**
 * The warehouse that keeps the dimensions (embedded DuckDB, or BigQuery). Statements are rendered by the
 * shared renderers in `lib/sql` with this warehouse's `dialect`.
 */
export interface Warehouse {
  readonly dialect: SqlDialect
  /** Columns of a table, or undefined when it does not exist. */
  describeTable(ref: TableRef): Promise<DimensionColumn[] | undefined>
  /** Loads staged Parquet parts into the temporary table `__dimsync_stage`; returns its columns. */
  loadStaging(partPaths: readonly string[]): Promise<StagedColumn[]>
  /**
   * Runs `work` in one transaction. Commits when `work` resolves and `commit` is true; rolls back when it throws
   * (rethrowing) or when `commit` is false (dry run). A failed statement throws `BatchRejectedError` when it is a
   * dimsync check, `WarehouseError` (with the statement's label and SQL) otherwise.
   */
  transaction<T>(work: (tx: WarehouseTransaction) => Promise<T>, options: { commit: boolean }): Promise<T>
  query(sql: string): Promise<Row[]>
  close(): Promise<void>
}
