import type { DimensionColumn } from '../core/dimension-layout.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * The dbt preset's dbt_scd_id, dbt_updated_at and dbt_is_deleted, derived from a version's key, start and deletion
 * flag (DbtIdColumnNames): every statement that inserts a version, moves its start or changes its deletion flag
 * writes them through these helpers.
 *
 * dbt's snapshot_hash_arguments makes dbt_scd_id as the MD5 hex of `coalesce(cast(<key> as <text>), '')`, `'|'`
 * and `coalesce(cast(<updated_at> as <text>), '')`, the key columns first, with the warehouse's own cast to text
 * (dbt-bigquery's override only spells it `to_hex(md5(concat(…)))`). The same casts are used here, of the key
 * columns and of dbt_updated_at as stored (TIMESTAMPTZ on DuckDB, TIMESTAMP on BigQuery): the id is what dbt's
 * macro gives over the table's own columns, `2024-03-01 10:00:00+00` hashed on both warehouses.
 */

/** A key column of the version: its expression and staged type. */
export interface KeyValue {
  readonly expression: string
  readonly type: string
}

/** dbt_scd_id of a version with these key values and start (an instant expression). */
export function dbtScdId(d: SqlDialect, keys: readonly KeyValue[], start: string): string {
  const texts = [
    ...keys.map((k) => d.castToString(k.expression)),
    d.castToString(d.castToTimestamp(start)),
  ].map((text) => `COALESCE(${text}, '')`)
  return d.md5Hex(d.concat(texts.flatMap((text, i) => (i === 0 ? [text] : ["'|'", text]))))
}

/** dbt_is_deleted of a version whose deletion flag is the boolean expression `deleted`: dbt's `'True'`/`'False'`. */
export function dbtDeletedText(deleted: string): string {
  return `CASE WHEN ${deleted} THEN 'True' ELSE 'False' END`
}

/** The key values of a version whose key columns are `alias.<key>`. */
export function keyValues(d: SqlDialect, key: readonly DimensionColumn[], alias: string): KeyValue[] {
  return key.map((c) => ({ expression: `${alias}.${d.quoteIdentifier(c.name)}`, type: c.type }))
}

/** `SET` items of an UPDATE that gives versions the start `start` ([] when the table is not dbt's). */
export function dbtIdAssignments(
  d: SqlDialect,
  table: TableSpec,
  keys: readonly KeyValue[],
  start: string,
): string[] {
  const ids = table.dbtIds
  if (ids === undefined) return []
  return [
    `${d.quoteIdentifier(ids.scdId)} = ${dbtScdId(d, keys, start)}`,
    `${d.quoteIdentifier(ids.updatedAt)} = ${start}`,
  ]
}

/** `SET` items of an UPDATE that gives versions the deletion flag `deleted` ([] when the table is not dbt's). */
export function dbtDeletedAssignments(d: SqlDialect, table: TableSpec, deleted: string): string[] {
  const ids = table.dbtIds
  return ids === undefined ? [] : [`${d.quoteIdentifier(ids.isDeleted)} = ${dbtDeletedText(deleted)}`]
}
