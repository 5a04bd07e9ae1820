import type { DimensionColumn } from '../core/dimension-layout.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * The dbt preset's dbt_scd_id and dbt_updated_at, derived from a version's key and start (DbtIdColumnNames):
 * every statement that inserts a version or moves its start writes them through these helpers.
 *
 * dbt's snapshot_hash_arguments makes dbt_scd_id as `md5(coalesce(cast(<key> as varchar), '') || '|' ||
 * coalesce(cast(<updated_at> as varchar), ''))`, the key columns first; each value is written as its canonical
 * text (row-hash.ts) instead of the warehouse's cast, so DuckDB and BigQuery give the same id.
 */

/** A key column of the version: its expression and staged type. */
export interface KeyValue {
  readonly expression: string
  readonly type: string
}

const START_TYPE = 'TIMESTAMPTZ'

/** dbt_scd_id of a version with these key values and start (an instant expression). */
export function dbtScdId(d: SqlDialect, keys: readonly KeyValue[], start: string): string {
  const texts = [
    ...keys.map((k) => d.canonicalText(k.expression, k.type)),
    d.canonicalText(start, START_TYPE),
  ].map((text) => `COALESCE(${text}, '')`)
  return d.md5Hex(d.concat(texts.flatMap((text, i) => (i === 0 ? [text] : ["'|'", text]))))
}

/** The key values of a version whose key columns are `alias.<key>`. */
export function keyValues(d: SqlDialect, key: readonly DimensionColumn[], alias: string): KeyValue[] {
  return key.map((c) => ({ expression: `${alias}.${d.quoteIdentifier(c.name)}`, type: c.type }))
}

/** Column names to add to an INSERT's list ([] when the table is not dbt's). */
export function dbtIdNames(table: TableSpec): string[] {
  return table.dbtIds === undefined ? [] : [table.dbtIds.scdId, table.dbtIds.updatedAt]
}

/** Values for `dbtIdNames`, in its order. */
export function dbtIdValues(
  d: SqlDialect,
  table: TableSpec,
  keys: readonly KeyValue[],
  start: string,
): string[] {
  return table.dbtIds === undefined ? [] : [dbtScdId(d, keys, start), start]
}

/** `SET` items of an UPDATE that gives versions the start `start` ([] when the table is not dbt's). */
export function dbtIdAssignments(
  d: SqlDialect,
  table: TableSpec,
  keys: readonly KeyValue[],
  start: string,
): string[] {
  const names = dbtIdNames(table)
  const values = dbtIdValues(d, table, keys, start)
  return names.map((name, i) => `${d.quoteIdentifier(name)} = ${values[i]}`)
}
