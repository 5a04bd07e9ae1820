/**
 * What `dimsync validate` asks of a warehouse kind beyond what every warehouse checks: found there, a column the
 * warehouse cannot store or compare costs a line of validate instead of a failed batch. Each kind's bundle
 * (lib/runtime/warehouse-registry.ts) gives its own; the use-case never asks which warehouse it checks for.
 */
import type { StagedColumn } from './batch.ts'
import type { TableSpec } from './table-spec.ts'

export interface WarehouseChecks {
  /** The warehouse's name in messages (`BigQuery`). */
  readonly name: string
  /** The staged columns it cannot store. */
  unstorableColumns(columns: readonly StagedColumn[]): readonly StagedColumn[]
  /** Key columns, and columns the merge compares, of a type it stores but cannot compare: one problem each. */
  uncomparableColumns(table: TableSpec, columns: readonly StagedColumn[]): readonly string[]
  /**
   * What its merge of `table` would be, told after the table's `ok` line (`line`), and why a run would refuse it
   * (`problem`), when that can be known from the columns alone.
   */
  mergeReport(table: TableSpec, columns: readonly StagedColumn[]): { line?: string; problem?: string }
}

/** A warehouse that stores and compares every type a source stages (DuckDB: the staged types are its own). */
export function storesEveryStagedType(name: string): WarehouseChecks {
  return {
    name,
    unstorableColumns: () => [],
    uncomparableColumns: () => [],
    mergeReport: () => ({}),
  }
}
