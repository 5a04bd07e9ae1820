import type { TableSpec } from '../core/table-spec.ts'
import { dbtDeletedText, dbtVersionScdId, type KeyValue } from './dbt-ids.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * The columns a preset's tool writes beside every dimension's metadata columns, in dimension order: dbt's
 * dbt_scd_id, dbt_updated_at and dbt_is_deleted (dbt-ids.ts), Fivetran's _fivetran_synced. Every statement that
 * inserts a version lists them through `presetColumnNames` and gives them `presetColumnValues`.
 */

/** What a new version's preset columns are computed from. */
export interface NewVersion {
  readonly keys: readonly KeyValue[]
  /** Its start (an instant expression). */
  readonly start: string
  /** Boolean expression: the version records a deletion of the key. */
  readonly deleted: string
  /** The start of the version before it (an instant expression), where it may be a deletion version. */
  readonly previousStart?: string
  /** When the merge writing it loads its batch (an instant expression): Fivetran's _fivetran_synced. */
  readonly loadedAt: string
}

/** Column names to add to an INSERT's list ([] when the table's preset has none). */
export function presetColumnNames(table: TableSpec): string[] {
  const ids = table.dbtIds
  return [
    ...(ids === undefined ? [] : [ids.scdId, ids.updatedAt, ids.isDeleted]),
    ...(table.syncedColumn === undefined ? [] : [table.syncedColumn]),
  ]
}

/** Values for `presetColumnNames`, in its order. */
export function presetColumnValues(d: SqlDialect, table: TableSpec, version: NewVersion): string[] {
  return [
    ...(table.dbtIds === undefined
      ? []
      : [
          dbtVersionScdId(
            d,
            version.keys,
            version.start,
            version.previousStart === undefined
              ? undefined
              : { deleted: version.deleted, previousStart: version.previousStart },
          ),
          version.start,
          dbtDeletedText(version.deleted),
        ]),
    ...(table.syncedColumn === undefined ? [] : [version.loadedAt]),
  ]
}
