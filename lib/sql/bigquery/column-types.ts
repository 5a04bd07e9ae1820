import type { DimensionColumn } from '../../core/dimension-layout.ts'
import type { SqlDialect, TableRef } from '../dialect.ts'

/**
 * The staged (source) type of every dimension column, kept in a table of its own beside the batch ledger.
 * BigQuery's column types are coarser than the staged ones (INT64 holds INTEGER and BIGINT, FLOAT64 holds FLOAT
 * and DOUBLE), and dimsync refuses a batch whose column changed type exactly as DuckDB does, so the exact type is
 * recorded. Not in the column's description (where versions before this one kept it): descriptions are their
 * users', who document columns in the console. Rows are only inserted (a type recorded again wins by
 * `recorded_at`), so merges of different dimensions never contend for the table.
 */
export const COLUMN_TYPES_TABLE = '_dimsync_columns'

export function columnTypesTable(dimension: TableRef): TableRef {
  return { ...dimension, name: COLUMN_TYPES_TABLE }
}

export function renderColumnTypesDdl(d: SqlDialect, dimension: TableRef): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${d.table(columnTypesTable(dimension))} (\n` +
    '  target STRING NOT NULL, column_name STRING NOT NULL, source_type STRING NOT NULL,\n' +
    '  recorded_at TIMESTAMP NOT NULL\n)\nCLUSTER BY target\n' +
    `OPTIONS(description = ${d.stringLiteral('dimsync: the source type of every dimension column (one row per change)')})`
  )
}

/** The latest recorded type of each column of `dimension`: rows (column_name, source_type). */
export function renderRecordedColumnTypesQuery(d: SqlDialect, dimension: TableRef): string {
  return (
    'SELECT column_name, ARRAY_AGG(source_type ORDER BY recorded_at DESC LIMIT 1)[OFFSET(0)] AS source_type\n' +
    `FROM ${d.table(columnTypesTable(dimension))}\nWHERE target = ${d.stringLiteral(dimension.name)}\n` +
    'GROUP BY column_name'
  )
}

export function renderRecordColumnTypes(
  d: SqlDialect,
  dimension: TableRef,
  columns: readonly DimensionColumn[],
): string {
  const rows = columns.map(
    (c) =>
      `(${d.stringLiteral(dimension.name)}, ${d.stringLiteral(c.name)}, ${d.stringLiteral(c.type)}, CURRENT_TIMESTAMP())`,
  )
  return (
    `INSERT INTO ${d.table(columnTypesTable(dimension))} (target, column_name, source_type, recorded_at)\n` +
    `VALUES ${rows.join(',\n  ')}`
  )
}
