import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { DateRow } from '../core/date-dimension.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { SqlDialect } from './dialect.ts'

/** Columns of `dim_date`, in table order: name, staged (DuckDB) type, and the value of a row. */
const COLUMNS: readonly {
  name: string
  type: string
  value: (r: DateRow) => string | number | boolean | null
}[] = [
  { name: 'date_key', type: 'BIGINT', value: (r) => r.dateKey },
  { name: 'date', type: 'DATE', value: (r) => r.date },
  { name: 'year', type: 'BIGINT', value: (r) => r.year },
  { name: 'quarter', type: 'BIGINT', value: (r) => r.quarter },
  { name: 'month', type: 'BIGINT', value: (r) => r.month },
  { name: 'month_name', type: 'VARCHAR', value: (r) => r.monthName },
  { name: 'day_of_month', type: 'BIGINT', value: (r) => r.dayOfMonth },
  { name: 'day_of_week', type: 'BIGINT', value: (r) => r.dayOfWeek },
  { name: 'day_name', type: 'VARCHAR', value: (r) => r.dayName },
  { name: 'iso_week', type: 'BIGINT', value: (r) => r.isoWeek },
  { name: 'iso_year', type: 'BIGINT', value: (r) => r.isoYear },
  { name: 'is_weekend', type: 'BOOLEAN', value: (r) => r.isWeekend },
  { name: 'holiday', type: 'VARCHAR', value: (r) => r.holiday },
]

/** Rows per INSERT statement (statement size stays far below every warehouse's limit). */
const ROWS_PER_INSERT = 500

/**
 * Creates `dim_date` if needed, then replaces the days of [first row, last row] with `rows` (one transaction):
 * days outside the range are kept, so a wider range extends the table and a run again changes nothing.
 */
export function renderDateDimension(
  d: SqlDialect,
  ref: TableRef,
  rows: readonly DateRow[],
): { readonly ddl: CompiledStatement; readonly load: CompiledStatement[] } {
  const q = (name: string) => d.quoteIdentifier(name)
  const columns = COLUMNS.map(
    (c) =>
      `${q(c.name)} ${d.columnType(c.type, { table: ref.name, column: c.name })}${c.name === 'date_key' || c.name === 'date' ? ' NOT NULL' : ''}`,
  )
  const ddl = {
    label: 'create date dimension',
    sql:
      `CREATE TABLE IF NOT EXISTS ${d.table(ref)} (\n  ${columns.join(',\n  ')}\n)` +
      d.tableOptions('dimension', {
        key: [{ name: 'date_key', type: 'BIGINT' }],
        description: 'dimsync: one row per calendar day',
      }),
  }
  if (rows.length === 0) return { ddl, load: [] }
  const literal = (c: (typeof COLUMNS)[number], r: DateRow) => {
    const v = c.value(r)
    if (v === null) return `CAST(NULL AS ${d.type('string')})`
    if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE'
    if (typeof v === 'number') return String(v)
    return c.type === 'DATE' ? `DATE ${d.stringLiteral(v)}` : d.stringLiteral(v)
  }
  const load: CompiledStatement[] = [
    {
      label: 'remove the days being written',
      sql: `DELETE FROM ${d.table(ref)} WHERE ${q('date_key')} BETWEEN ${rows[0]!.dateKey} AND ${rows.at(-1)!.dateKey}`,
    },
  ]
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const chunk = rows.slice(i, i + ROWS_PER_INSERT)
    const selects = chunk.map(
      (r) => `SELECT ${COLUMNS.map((c) => `${literal(c, r)} AS ${q(c.name)}`).join(', ')}`,
    )
    load.push({
      label: `insert days ${chunk[0]!.date} to ${chunk.at(-1)!.date}`,
      sql: `INSERT INTO ${d.table(ref)} (${COLUMNS.map((c) => q(c.name)).join(', ')})\n${selects.join('\nUNION ALL ')}`,
    })
  }
  return { ddl, load }
}
