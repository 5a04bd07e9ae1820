/**
 * Checks and resolution shared by `defaults` and each table: the options a table may inherit (tracked and
 * exclude lists, open_end, schedule, metadata column names).
 */
import {
  METADATA_COLUMN_KEYS,
  METADATA_COLUMN_OPTIONS,
  COLUMN_PRESETS,
  PRESET_CONVENTIONS,
  type ColumnPreset,
  type MetadataColumn,
  type MetadataColumnNames,
} from '../core/metadata-columns.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { TableOptionsDocument } from './config-schema.ts'
import type { IssueList, Path } from './issue-list.ts'
import { formatPath, show } from './messages.ts'
import { openEndProblem } from './open-end.ts'
import { checkScheduleOptions } from './resolve-deploy-options.ts'

export type Options = NonNullable<TableOptionsDocument>

export function checkOwnOptions(base: Path, options: Options, issues: IssueList): void {
  if (typeof options.tracked === 'object' && options.tracked !== null) {
    if (Array.isArray(options.tracked)) checkDuplicates([...base, 'tracked'], options.tracked, issues)
    else checkDuplicates([...base, 'tracked', 'all_except'], options.tracked.all_except, issues)
  }
  if (options.exclude !== undefined) checkDuplicates([...base, 'exclude'], options.exclude, issues)
  if (typeof options.open_end === 'string') {
    const problem = openEndProblem(options.open_end)
    if (problem !== undefined) issues.add([...base, 'open_end'], problem)
  }
  checkScheduleOptions(base, options, (where, message) => issues.add(where, message))
}

/** Warehouses compare identifiers without case, so `ID` and `id` are the same column there. */
export function checkDuplicates(listPath: Path, names: readonly string[], issues: IssueList): void {
  const seen = new Map<string, number>()
  names.forEach((name, index) => {
    const first = seen.get(name.toLowerCase())
    if (first === undefined) seen.set(name.toLowerCase(), index)
    else
      issues.add(
        [...listPath, index],
        `duplicate column ${show(name)} (also ${formatPath([...listPath, first])})`,
      )
  })
}

export function resolveColumns(
  value: NonNullable<Options['columns']>,
  base: MetadataColumnNames,
): MetadataColumnNames {
  if (typeof value === 'string') return COLUMN_PRESETS[value]
  // An override without a preset refines what the table would otherwise get (the defaults' columns).
  const start = value.preset !== undefined ? COLUMN_PRESETS[value.preset as ColumnPreset] : base
  const names: Record<string, string> = { ...start }
  for (const key of METADATA_COLUMN_KEYS) {
    const override = value[METADATA_COLUMN_OPTIONS[key] as keyof typeof value]
    if (override !== undefined) names[key] = override
  }
  return names as unknown as MetadataColumnNames
}

/**
 * What a table with `columns: <preset>` and no open_end gets: the preset's names and its tool's conventions (how
 * valid_to ends, the open end, dbt's own columns).
 */
export function presetTableFields(
  preset: ColumnPreset,
): Pick<TableSpec, 'columns' | 'openEnd' | 'endStyle' | 'dbtIds' | 'syncedColumn'> {
  const conventions = PRESET_CONVENTIONS[preset]
  return {
    columns: COLUMN_PRESETS[preset],
    openEnd: conventions.openEnd,
    ...(conventions.endStyle !== 'exclusive' ? { endStyle: conventions.endStyle } : {}),
    ...(conventions.dbtIds !== undefined ? { dbtIds: conventions.dbtIds } : {}),
    ...(conventions.syncedColumn !== undefined ? { syncedColumn: conventions.syncedColumn } : {}),
  }
}

/** The preset a `columns:` option builds on: the one it names, or (an override without a preset) `base`. */
export function presetOf(value: Options['columns'] | undefined, base: ColumnPreset): ColumnPreset {
  if (value === undefined) return base
  if (typeof value === 'string') return value
  return value.preset === undefined ? base : (value.preset as ColumnPreset)
}

export function checkMetadataDistinct(
  columnsPath: Path,
  value: NonNullable<Options['columns']>,
  names: MetadataColumnNames,
  issues: IssueList,
): void {
  // Point at the option the user wrote: with { valid_to: is_current } the culprit is valid_to, not is_current.
  const written = (key: MetadataColumn) =>
    typeof value === 'object' && value[METADATA_COLUMN_OPTIONS[key] as keyof typeof value] !== undefined
  const seen = new Map<string, MetadataColumn>()
  for (const key of METADATA_COLUMN_KEYS) {
    const name = names[key]
    const first = seen.get(name.toLowerCase())
    if (first === undefined) {
      seen.set(name.toLowerCase(), key)
      continue
    }
    const [culprit, other] = written(key) || !written(first) ? [key, first] : [first, key]
    issues.add(
      [...columnsPath, METADATA_COLUMN_OPTIONS[culprit]],
      `${show(names[culprit])} is already the name of the ${METADATA_COLUMN_OPTIONS[other]} metadata column`,
    )
  }
}
