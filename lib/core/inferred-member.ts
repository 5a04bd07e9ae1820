/**
 * Inferred members (late-arriving dimension rows): a fact whose reference is marked `inferred: true` and whose
 * natural key the dimension has never held creates a placeholder version of that key, flagged in an extra
 * metadata column, and points at it; the key's first real extract completes the placeholder in place. The flag
 * column is added to a dimension only when a fact first needs it, so dimensions without inferred references
 * keep exactly the columns they had.
 */
import {
  COLUMN_PRESETS,
  METADATA_COLUMN_KEYS,
  PRESET_NAMES,
  type ColumnPreset,
  type MetadataColumnNames,
} from './metadata-columns.ts'

/** Name of the flag column per column preset, in the preset's own style. */
export const INFERRED_COLUMN_NAMES: Readonly<Record<ColumnPreset, string>> = Object.freeze({
  dimsync: 'is_inferred',
  dbt: 'dbt_is_inferred',
  fivetran: '_fivetran_inferred',
  databricks: '__IS_INFERRED',
})

/**
 * The flag column of a dimension with these metadata column names: the name of the preset that names most of
 * its metadata columns (the dimsync preset when none does), so a dimension migrated from dbt gets
 * `dbt_is_inferred`.
 */
export function inferredColumnName(names: MetadataColumnNames): string {
  let best: ColumnPreset = 'dimsync'
  let bestScore = 0
  for (const preset of PRESET_NAMES) {
    const score = METADATA_COLUMN_KEYS.filter((k) => COLUMN_PRESETS[preset][k] === names[k]).length
    if (score > bestScore) [best, bestScore] = [preset, score]
  }
  return INFERRED_COLUMN_NAMES[best]
}

/** What a placeholder's text attributes read, and the row hash and batch id it is written with. */
export const INFERRED_MEMBER = Object.freeze({
  label: 'Inferred',
  rowHash: 'dimsync inferred member',
})
