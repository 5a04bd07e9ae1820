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
 * (dbt-bigquery's override only spells it `to_hex(md5(concat(…)))`). The same casts are used here: of the key
 * columns, and of the start typed as the adapter types a snapshot's time (SqlDialect.dbtSnapshotTimeText:
 * `2024-03-01 10:00:00+00` on BigQuery, `2024-03-01 10:00:00` on DuckDB).
 */

/** A key column of the version: its expression and staged type. */
export interface KeyValue {
  readonly expression: string
  readonly type: string
}

/** dbt_scd_id of a version with these key values and start (an instant expression). */
export function dbtScdId(d: SqlDialect, keys: readonly KeyValue[], start: string): string {
  return hashArguments(d, [...keys.map((k) => d.castToString(k.expression)), d.dbtSnapshotTimeText(start)])
}

/**
 * dbt_scd_id of a version: of a deletion version (`hard_deletes: new_record`), dbt hashes the id of the version
 * the delete ended (its key and start, `previousStart`) with the deletion's start; of other versions, the key and
 * the start. `deletion` undefined: the version is not a deletion.
 */
export function dbtVersionScdId(
  d: SqlDialect,
  keys: readonly KeyValue[],
  start: string,
  deletion?: { readonly deleted: string; readonly previousStart: string },
): string {
  const id = dbtScdId(d, keys, start)
  if (deletion === undefined) return id
  const deletionId = hashArguments(d, [
    dbtScdId(d, keys, deletion.previousStart),
    d.dbtSnapshotTimeText(start),
  ])
  return `CASE WHEN ${deletion.deleted} THEN ${deletionId} ELSE ${id} END`
}

/** dbt's snapshot_hash_arguments over texts: MD5 hex of each text (NULL as '') joined by '|'. */
function hashArguments(d: SqlDialect, texts: readonly string[]): string {
  const parts = texts.map((text) => `COALESCE(${text}, '')`)
  return d.md5Hex(d.concat(parts.flatMap((text, i) => (i === 0 ? [text] : ["'|'", text]))))
}

/** dbt_is_deleted of a version whose deletion flag is the boolean expression `deleted`: dbt's `'True'`/`'False'`. */
export function dbtDeletedText(deleted: string): string {
  return `CASE WHEN ${deleted} THEN 'True' ELSE 'False' END`
}

/** The key values of a version whose key columns are `alias.<key>`. */
export function keyValues(d: SqlDialect, key: readonly DimensionColumn[], alias: string): KeyValue[] {
  return key.map((c) => ({ expression: `${alias}.${d.quoteIdentifier(c.name)}`, type: c.type }))
}

/**
 * `SET` items of an UPDATE that gives versions the start `start` ([] when the table is not dbt's); `deletion`: as
 * for dbtVersionScdId.
 */
export function dbtIdAssignments(
  d: SqlDialect,
  table: TableSpec,
  keys: readonly KeyValue[],
  start: string,
  deletion?: { readonly deleted: string; readonly previousStart: string },
): string[] {
  const ids = table.dbtIds
  if (ids === undefined) return []
  return [
    `${d.quoteIdentifier(ids.scdId)} = ${dbtVersionScdId(d, keys, start, deletion)}`,
    `${d.quoteIdentifier(ids.updatedAt)} = ${start}`,
  ]
}

/** `SET` items of an UPDATE that gives versions the deletion flag `deleted` ([] when the table is not dbt's). */
export function dbtDeletedAssignments(d: SqlDialect, table: TableSpec, deleted: string): string[] {
  const ids = table.dbtIds
  return ids === undefined ? [] : [`${d.quoteIdentifier(ids.isDeleted)} = ${dbtDeletedText(deleted)}`]
}
