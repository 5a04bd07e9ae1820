import type { TableSpec } from '../../core/table-spec.ts'
import { sqlIdentifier, sqlString } from '../duckdb/parquet-schema.ts'

/** How one SQL dialect writes what the predicate needs. */
export interface OperationSql {
  /** The operation column, quoted. */
  readonly column: string
  /**
   * `expression` as text (or bytes), so a value compares with the configured values exactly (case and trailing
   * spaces count, as in the merge) whatever the column's type.
   */
  asText(expression: string): string
  literal(value: string): string
}

/**
 * The rows of a change feed its extract keeps: those whose operation is none of `ops.ignore` (before-images,
 * heartbeats), which are never staged, counted or used for the watermark. A NULL operation is kept, so that the
 * merge refuses it naming the key. Undefined when the table ignores nothing.
 */
export function keptOperationsPredicate(table: TableSpec, sql: OperationSql): string | undefined {
  const ignore = table.changes?.operation.ignore ?? []
  if (ignore.length === 0) return undefined
  const values = ignore.map((value) => sql.literal(value)).join(', ')
  return `${sql.column} IS NULL OR ${sql.asText(sql.column)} NOT IN (${values})`
}

/** `select` (DuckDB SQL, a file source) without the rows of the table's ignored operations. */
export function duckdbSelectOfKeptOperations(table: TableSpec, select: string): string {
  const kept = keptOperationsPredicate(table, {
    column: sqlIdentifier(table.changes?.operation.column ?? ''),
    asText: (expression) => `CAST(${expression} AS VARCHAR)`,
    literal: sqlString,
  })
  return kept === undefined ? select : `SELECT * FROM (${select}) WHERE ${kept}`
}
