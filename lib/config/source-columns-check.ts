/**
 * Checks a resolved table against the column names its source really has, before anything is extracted: a
 * typo in the key found here costs a message, found in the merge it costs a failed (or wrong) load.
 */
import { ConfigError } from '../core/errors.ts'
import {
  METADATA_COLUMN_KEYS,
  METADATA_COLUMN_OPTIONS,
  type MetadataColumn,
} from '../core/metadata-columns.ts'
import type { ProjectSpec } from '../core/table-spec.ts'
import { didYouMean } from './did-you-mean.ts'

/** Every problem of table `tableIndex` against `sourceColumns`, as `<path>: <what is wrong>` lines. */
export function checkTableAgainstSource(
  project: ProjectSpec,
  tableIndex: number,
  sourceColumns: readonly string[],
): string[] {
  const table = project.tables[tableIndex]
  if (table === undefined)
    throw new RangeError(`no table at index ${tableIndex} (${project.tables.length} tables)`)
  const base = `tables[${tableIndex}]`
  const references: [string, string][] = [
    ...table.key.map((name, i): [string, string] => [`${base}.key[${i}]`, name]),
    ...table.tracked.columns.map((name, i): [string, string] => [
      table.tracked.kind === 'list' ? `${base}.tracked[${i}]` : `${base}.tracked.all_except[${i}]`,
      name,
    ]),
    ...table.exclude.map((name, i): [string, string] => [`${base}.exclude[${i}]`, name]),
  ]
  if (table.extract.mode === 'incremental') references.push([`${base}.extract.cursor`, table.extract.cursor])
  if (table.validFrom.kind === 'column')
    references.push([`${base}.valid_from.column`, table.validFrom.column])
  if (table.softDeleteColumn !== undefined)
    references.push([`${base}.soft_delete_column`, table.softDeleteColumn])
  if (table.changeDetection !== undefined)
    references.push([`${base}.change_detection.version_column`, table.changeDetection.versionColumn])
  if (table.changes !== undefined) {
    references.push([`${base}.extract.operation`, table.changes.operation.column])
    if (table.changes.sequence !== undefined)
      references.push([`${base}.extract.sequence`, table.changes.sequence])
  }

  const present = new Set(sourceColumns)
  const issues: string[] = []
  for (const [where, name] of references) {
    if (!present.has(name)) {
      issues.push(`${where}: column "${name}" is not in the source${didYouMean(name, sourceColumns)}`)
    }
  }

  // Stored source columns share the dimension with the metadata columns; warehouses compare names without case.
  const excluded = new Set(table.exclude)
  const metadata = new Map<string, MetadataColumn>(
    METADATA_COLUMN_KEYS.map((key) => [table.columns[key].toLowerCase(), key]),
  )
  for (const name of sourceColumns) {
    const clash = metadata.get(name.toLowerCase())
    // A soft delete flag is read, never stored, so it may share the name (is_deleted).
    if (clash === undefined || excluded.has(name) || name === table.softDeleteColumn) continue
    const option = METADATA_COLUMN_OPTIONS[clash]
    issues.push(
      `${base}: source column "${name}" has the name of the ${option} metadata column; ` +
        `rename the metadata column with columns: { ${option}: <other name> }`,
    )
  }
  return issues
}

/** Throws ConfigError (about the config file) when the table does not match its source. */
export function assertTableMatchesSource(
  project: ProjectSpec,
  tableIndex: number,
  sourceColumns: readonly string[],
): void {
  const issues = checkTableAgainstSource(project, tableIndex, sourceColumns)
  if (issues.length > 0) throw new ConfigError(project.configPath, issues)
}
