import type { ColumnPreset, MetadataColumnNames } from '../core/table-spec.ts'

/**
 * Metadata column names per preset. Presets exist so that a dimension migrated from dbt snapshots, Fivetran
 * history mode or Databricks keeps the names its downstream queries already use (DESIGN.md section 6); the
 * columns those tools do not have are named with the same prefix so the table still reads as one family.
 */
export const COLUMN_PRESETS: Readonly<Record<ColumnPreset, MetadataColumnNames>> = Object.freeze({
  dimsync: Object.freeze({
    surrogateKey: 'dimsync_sk',
    validFrom: 'valid_from',
    validTo: 'valid_to',
    isCurrent: 'is_current',
    isDeleted: 'is_deleted',
    rowHash: 'dimsync_row_hash',
    batchId: 'dimsync_batch_id',
  }),
  dbt: Object.freeze({
    surrogateKey: 'dbt_scd_id',
    validFrom: 'dbt_valid_from',
    validTo: 'dbt_valid_to',
    isCurrent: 'dbt_is_current',
    isDeleted: 'dbt_is_deleted',
    rowHash: 'dbt_row_hash',
    batchId: 'dbt_batch_id',
  }),
  fivetran: Object.freeze({
    surrogateKey: '_fivetran_id',
    validFrom: '_fivetran_start',
    validTo: '_fivetran_end',
    isCurrent: '_fivetran_active',
    isDeleted: '_fivetran_deleted',
    rowHash: '_fivetran_row_hash',
    batchId: '_fivetran_batch_id',
  }),
  databricks: Object.freeze({
    surrogateKey: '__dimsync_sk',
    validFrom: '__START_AT',
    validTo: '__END_AT',
    isCurrent: '__IS_CURRENT',
    isDeleted: '__IS_DELETED',
    rowHash: '__ROW_HASH',
    batchId: '__BATCH_ID',
  }),
})

export const PRESET_NAMES: readonly ColumnPreset[] = Object.freeze([
  'dimsync',
  'dbt',
  'fivetran',
  'databricks',
])

/** YAML (snake_case) name of each metadata column option, in the order messages list them. */
export const METADATA_COLUMN_OPTIONS: Readonly<Record<keyof MetadataColumnNames, string>> = Object.freeze({
  surrogateKey: 'surrogate_key',
  validFrom: 'valid_from',
  validTo: 'valid_to',
  isCurrent: 'is_current',
  isDeleted: 'is_deleted',
  rowHash: 'row_hash',
  batchId: 'batch_id',
})

export const METADATA_COLUMN_KEYS = Object.freeze(
  Object.keys(METADATA_COLUMN_OPTIONS) as (keyof MetadataColumnNames)[],
)
