import type { StagedColumn } from './batch.ts'
import { afterRenames, plannedRenames } from './column-renames.ts'
import { BatchRejectedError } from './errors.ts'
import { inferredColumnName } from './inferred-member.ts'
import { isOrderedVersionType, stagedTypeName } from './staged-types.ts'
import {
  DBT_ID_COLUMNS,
  SYNCED_COLUMN,
  metadataColumnList,
  PRESET_NAMES,
  PRESET_CONVENTIONS,
  SYSTEM_TIME_COLUMNS,
  systemTimeColumnNames,
} from './metadata-columns.ts'
import type { ColumnRename, TableSpec } from './table-spec.ts'
import { isWidening } from './type-widening.ts'

/** A stored column of a dimension: name and warehouse-neutral type text (DuckDB logical type names). */
export interface DimensionColumn {
  readonly name: string
  readonly type: string
  /** A column of an existing table declared NOT NULL (as read back by `Warehouse.describeTable`). */
  readonly notNull?: boolean
}

/** A column whose type is widened in place: its type in the dimension (`from`) and in the source (`type`). */
export interface WidenedColumn extends DimensionColumn {
  readonly from: string
}

/** A column the merge derives from a stored one: `previous_<col>` (type 3) or `current_<col>` (type 6). */
export interface DerivedColumn extends DimensionColumn {
  readonly kind: 'previous' | 'current'
  /** The stored column it is derived from. */
  readonly from: string
}

/** The name of the column of kind `kind` derived from stored column `from` (`previous_region`). */
export function derivedColumnName(kind: DerivedColumn['kind'], from: string): string {
  return `${kind}_${from}`
}

/**
 * How a staged batch maps onto a dimension: which columns identify, which open versions (tracked, type 2),
 * which are overwritten on every version of the key (type 1), which keep the key's first value (type 0), which
 * are derived from others (types 3 and 6), and which DDL the dimension needs first.
 */
export interface DimensionLayout {
  readonly key: readonly DimensionColumn[]
  readonly tracked: readonly DimensionColumn[]
  readonly type1: readonly DimensionColumn[]
  readonly keepFirst: readonly DimensionColumn[]
  /** key + tracked + type1 + keepFirst, in source order: the data columns of the dimension, read from the source. */
  readonly stored: readonly DimensionColumn[]
  /** Columns the merge fills from stored ones (not in the source). */
  readonly derived: readonly DerivedColumn[]
  /**
   * Partial updates: attribute columns where a NULL keeps the key's value, and columns a row of an existing key
   * does not update. Absent: every row holds its key's full state.
   */
  readonly partial?: {
    readonly ignoreNulls: readonly DimensionColumn[]
    readonly kept: readonly DimensionColumn[]
    /** Every staged column, in the stage's order: the fold's output lists them where SQL has no `* REPLACE`. */
    readonly staged: readonly string[]
  }
  readonly softDelete?: DimensionColumn
  readonly validFromColumn?: DimensionColumn
  /** Change feeds: the operation column and the optional sequence column (bookkeeping, not stored). */
  readonly operation?: DimensionColumn
  readonly sequence?: DimensionColumn
  /** Columns the dimension lacks and that are added before the merge (schema evolution). */
  readonly addColumns: readonly DimensionColumn[]
  /**
   * Columns whose type the source widened (INTEGER → BIGINT, a decimal's precision up, ...; see
   * type-widening.ts): the dimension's column takes the new type in place before the merge (schema evolution).
   */
  readonly widened: readonly WidenedColumn[]
  /**
   * Columns the dimension has and the source no longer sends: kept, with their values on existing versions and
   * NULL on new ones; they open no versions (schema evolution).
   */
  readonly removed: readonly DimensionColumn[]
  /**
   * The dimension has the inferred-member flag column (a fact inferred a member of it; see inferred-member.ts):
   * dimsync's own column, so not among `removed`.
   */
  readonly hasInferredFlag: boolean
  /** True when the dimension does not exist yet. */
  readonly createDimension: boolean
  /**
   * Columns of the dimension renamed before the merge (`renamed:`); the rest of the layout already reads them
   * by their new names. Absent: none.
   */
  readonly renamed?: readonly ColumnRename[]
}

/** Prefix reserved for dimsync's working columns inside staging tables. */
export const RESERVED_PREFIX = '__dimsync_'

/**
 * Derives the layout of `table` from the staged columns of a batch and the columns the dimension already has
 * (undefined when it does not exist). Throws `BatchRejectedError` naming the table and column when the batch
 * cannot be merged: a configured column is missing, a stored column changed type. A dimension column the source
 * no longer has is kept (`removed`).
 */
export function planDimensionLayout(
  table: TableSpec,
  batchId: string,
  staged: readonly StagedColumn[],
  described: readonly DimensionColumn[] | undefined,
): DimensionLayout {
  const reject = (message: string): never => {
    throw new BatchRejectedError(table.name, batchId, `table ${table.name}: ${message}`)
  }
  const renamed = plannedRenames(table, staged, described, reject)
  const existing = described === undefined ? undefined : afterRenames(described, renamed)
  const byName = new Map(staged.map((c) => [c.name, c]))
  const need = (name: string, role: string): StagedColumn =>
    byName.get(name) ??
    reject(`${role} column "${name}" is not in the source (source columns: ${[...byName.keys()].join(', ')})`)

  for (const c of staged) {
    if (c.name.startsWith(RESERVED_PREFIX))
      reject(`source column "${c.name}" uses the reserved prefix ${RESERVED_PREFIX}`)
  }
  const metadata = [
    ...metadataColumnList(table.columns),
    ...presetColumnList(table),
    ...systemTimeColumnList(table),
  ]
  const metadataNames = new Set(metadata.map((c) => c.name))
  for (const c of staged) {
    // A soft delete flag is read, never stored, so it may share the name of a metadata column (is_deleted).
    if (metadataNames.has(c.name) && c.name !== table.softDeleteColumn)
      reject(
        `source column "${c.name}" has the name of a metadata column; rename it or choose other column names`,
      )
  }

  const key = table.key.map((k) => need(k, 'key'))
  const softDelete =
    table.softDeleteColumn === undefined ? undefined : need(table.softDeleteColumn, 'soft delete')
  const validFromColumn =
    table.validFrom.kind === 'column' ? need(table.validFrom.column, 'valid_from') : undefined
  if (table.extract.mode === 'incremental') need(table.extract.cursor, 'cursor')
  if (table.changeDetection !== undefined) {
    const version = need(table.changeDetection.versionColumn, 'version')
    if (!isOrderedVersionType(version.type))
      reject(
        `version column "${version.name}" is ${version.type}: change_detection compares versions as numbers, ` +
          'dates or times (as text "v10" sorts before "v9", so growth cannot be told); cast it to a number or a ' +
          'time in the source, or leave change_detection out',
      )
  }
  // Excluded columns are not staged (the extract drops them); a batch staged before that still has them.
  const operation =
    table.changes === undefined ? undefined : need(table.changes.operation.column, 'operation')
  const sequence =
    table.changes?.sequence === undefined ? undefined : need(table.changes.sequence, 'sequence')

  const keyNames = new Set(table.key)
  const excluded = new Set(table.exclude)
  if (softDelete) excluded.add(softDelete.name)
  // The change-time column is the version's valid_from: storing it again would only duplicate it.
  if (validFromColumn) excluded.add(validFromColumn.name)
  // What happened to a key and in which order are facts about the event, not attributes of the key.
  if (operation) excluded.add(operation.name)
  if (sequence) excluded.add(sequence.name)
  // A cursor is bookkeeping: it moves on every write, so hashing it would version rows that did not change.
  // Unless it is the version column (change_detection), whose growth is what opens a version.
  const cursor =
    table.extract.mode === 'incremental' && table.extract.cursor !== table.changeDetection?.versionColumn
      ? table.extract.cursor
      : undefined
  const attributes = staged.filter((c) => !keyNames.has(c.name) && !excluded.has(c.name))
  let trackedNames: Set<string>
  if (table.tracked.kind === 'list') {
    for (const name of table.tracked.columns) {
      need(name, 'tracked')
      if (excluded.has(name) || keyNames.has(name))
        reject(
          `column "${name}" cannot be tracked: it is a key, excluded, the soft delete, the valid_from, the operation or the sequence column`,
        )
    }
    trackedNames = new Set(table.tracked.columns)
  } else {
    for (const name of table.tracked.columns) need(name, 'untracked')
    const untracked = new Set(table.tracked.columns)
    if (cursor !== undefined) untracked.add(cursor)
    trackedNames = new Set(attributes.filter((c) => !untracked.has(c.name)).map((c) => c.name))
  }
  const policies = table.policies
  const keepFirstNames = new Set(policies?.keepFirst.map((name) => need(name, 'keep_first').name) ?? [])
  const stored = staged.filter((c) => keyNames.has(c.name) || attributes.includes(c))
  const tracked = attributes.filter((c) => trackedNames.has(c.name) && !keepFirstNames.has(c.name))
  const type1 = attributes.filter((c) => !trackedNames.has(c.name) && !keepFirstNames.has(c.name))
  const keepFirst = attributes.filter((c) => keepFirstNames.has(c.name))
  const derivedOf = (kind: DerivedColumn['kind'], names: readonly string[] | undefined): DerivedColumn[] =>
    (names ?? []).map((name) => {
      const from = need(name, kind === 'previous' ? 'previous_value' : 'current_value')
      return { name: derivedColumnName(kind, from.name), type: from.type, kind, from: from.name }
    })
  const partial = partialColumns(table, attributes, need)
  const derived = [
    ...derivedOf('previous', policies?.previousValue),
    ...derivedOf('current', policies?.currentValue),
  ]
  for (const c of derived) {
    if (byName.has(c.name) || metadataNames.has(c.name))
      reject(
        `column "${c.name}" (the ${c.kind} value of "${c.from}") is already a ${byName.has(c.name) ? 'source' : 'metadata'} column; rename that column`,
      )
  }

  const addColumns: DimensionColumn[] = []
  const widened: WidenedColumn[] = []
  const removed: DimensionColumn[] = []
  const inferredFlag = inferredColumnName(table.columns)
  let hasInferredFlag = false
  if (existing !== undefined) {
    const existingByName = new Map(existing.map((c) => [c.name, c]))
    checkSystemTimeMatches(table, existingByName, reject)
    checkNotFormerPresetLayout(table, existingByName, reject)
    checkPresetColumnsPresent(table, existingByName, reject)
    for (const m of metadata) {
      if (!existingByName.has(m.name))
        reject(
          `dimension ${table.target} has no metadata column "${m.name}"; was it created with other column names?`,
        )
    }
    for (const c of [...stored, ...derived]) {
      const have = existingByName.get(c.name)
      if (have === undefined) addColumns.push(c)
      else if (stagedTypeName(have.type) === stagedTypeName(c.type)) continue
      else if (isWidening(have.type, c.type)) widened.push({ name: c.name, type: c.type, from: have.type })
      else
        reject(
          `column "${c.name}" changed type from ${have.type} (dimension ${table.target}) to ${c.type} (source); ` +
            `nothing was written. Either give the new type a new column name in the source (the dimension keeps ` +
            `the old column), or rewrite the column in the dimension: dimsync evolve --table ${table.name} ` +
            `--column ${c.name}`,
        )
    }
    const storedNames = new Set([...stored, ...derived].map((c) => c.name))
    for (const c of existing) {
      if (c.name === inferredFlag) hasInferredFlag = true
      else if (!metadataNames.has(c.name) && !storedNames.has(c.name)) removed.push(c)
    }
  }
  return Object.freeze({
    key,
    tracked,
    type1,
    keepFirst,
    stored,
    derived,
    ...(partial !== undefined ? { partial: { ...partial, staged: staged.map((c) => c.name) } } : {}),
    softDelete,
    validFromColumn,
    operation,
    sequence,
    addColumns,
    widened,
    removed,
    hasInferredFlag,
    createDimension: existing === undefined,
    ...(renamed.length > 0 ? { renamed } : {}),
  })
}

/** The system-time columns of a bitemporal table (none for other tables), in dimension order. */
export function systemTimeColumnList(table: TableSpec): readonly DimensionColumn[] {
  const names = table.systemTime
  if (names === undefined) return []
  return [
    { name: names.systemFrom, type: SYSTEM_TIME_COLUMNS.systemFrom.type },
    { name: names.systemTo, type: SYSTEM_TIME_COLUMNS.systemTo.type },
  ]
}

/**
 * The columns a preset's tool writes beside the metadata columns (lib/sql/preset-columns.ts): the dbt preset's
 * dbt_scd_id, dbt_updated_at and dbt_is_deleted, the fivetran preset's _fivetran_synced; in dimension order.
 */
export function presetColumnList(table: TableSpec): readonly DimensionColumn[] {
  const names = table.dbtIds
  return [
    ...(names === undefined
      ? []
      : [
          { name: names.scdId, type: DBT_ID_COLUMNS.scdId.type },
          { name: names.updatedAt, type: DBT_ID_COLUMNS.updatedAt.type },
          { name: names.isDeleted, type: DBT_ID_COLUMNS.isDeleted.type },
        ]),
    ...(table.syncedColumn === undefined ? [] : [{ name: table.syncedColumn, type: SYNCED_COLUMN.type }]),
  ]
}

/**
 * Dimensions created by dimsync before the dbt and fivetran presets followed their tools (an integer dbt_scd_id,
 * an exclusive _fivetran_end) have the preset's former surrogate key name and not the current one: refused, since
 * reading them with today's conventions would misread their windows and ids.
 */
function checkNotFormerPresetLayout(
  table: TableSpec,
  existing: ReadonlyMap<string, DimensionColumn>,
  reject: (message: string) => never,
): void {
  const sk = table.columns.surrogateKey
  if (existing.has(sk)) return
  for (const preset of PRESET_NAMES) {
    const former = PRESET_CONVENTIONS[preset].formerSurrogateKey
    if (former === undefined || former === sk || !existing.has(former)) continue
    reject(
      `dimension ${table.target} was created by an earlier dimsync with the ${preset} preset (integer surrogate key ` +
        `"${former}", no "${sk}"), whose ${preset === 'dbt' ? 'dbt_scd_id and dbt_updated_at' : '_fivetran_end'} ` +
        `did not follow ${preset === 'dbt' ? 'dbt' : 'Fivetran'}; nothing was written. Load table ${table.name} into ` +
        `a new target, or keep this dimension as it is by naming its columns without the preset ` +
        `(columns: { surrogate_key: ${former}, valid_from: ${table.columns.validFrom}, ... })`,
    )
  }
}

/**
 * Dimensions created with the dbt or fivetran preset before its tool's own columns were written as the tool
 * writes them: dbt's dbt_is_deleted was a BOOLEAN and dbt_scd_id hashed dimsync's text of the start; Fivetran's
 * deleted keys kept an active version, or ended a millisecond before the delete, and had no _fivetran_synced.
 * Adding the missing columns would mix two conventions in one table, so the merge refuses instead.
 */
function checkPresetColumnsPresent(
  table: TableSpec,
  existing: ReadonlyMap<string, DimensionColumn>,
  reject: (message: string) => never,
): void {
  const sk = table.columns.surrogateKey
  if (!existing.has(sk)) return
  const flag = table.columns.isDeleted
  if (table.dbtIds !== undefined && !existing.has(flag) && existing.has(table.dbtIds.isDeleted))
    reject(
      `dimension ${table.target} was created by an earlier dimsync with the dbt preset: its ` +
        `${table.dbtIds.isDeleted} is a BOOLEAN and its ${table.dbtIds.scdId} hashes dimsync's text of the start, ` +
        `where dbt writes the text 'True'/'False' and hashes the warehouse's own cast; nothing was written. Load ` +
        `table ${table.name} into a new target (docs/configuration.md, presets)`,
    )
  if (table.syncedColumn !== undefined && !existing.has(table.syncedColumn))
    reject(
      `dimension ${table.target} was created by an earlier dimsync with the fivetran preset: it has no ` +
        `${table.syncedColumn}, and its deleted keys end a millisecond before the delete where Fivetran writes ` +
        `the delete time; nothing was written. Load table ${table.name} into a new target (docs/configuration.md, ` +
        `presets)`,
    )
}

/**
 * A dimension keeps the time axes it was created with: system time cannot be known for rows written before it
 * was turned on, and turning it off would leave superseded rows looking like versions.
 */
function checkSystemTimeMatches(
  table: TableSpec,
  existing: ReadonlyMap<string, DimensionColumn>,
  reject: (message: string) => never,
): void {
  const names = table.systemTime ?? systemTimeColumnNames(table.columns)
  const has = existing.has(names.systemFrom) && existing.has(names.systemTo)
  if (table.systemTime !== undefined && !has)
    reject(
      `dimension ${table.target} was created without system time (no ${names.systemFrom} and ${names.systemTo} ` +
        `columns), so system_time: true cannot apply to it: when its rows were learned is not known. Load the ` +
        `table into a new target to keep bitemporal history, or leave system_time out`,
    )
  if (table.systemTime === undefined && has)
    reject(
      `dimension ${table.target} keeps bitemporal history (columns ${names.systemFrom} and ${names.systemTo}); ` +
        `set system_time: true on table ${table.name} again: without it superseded rows would read as versions`,
    )
}

function partialColumns(
  table: TableSpec,
  attributes: readonly StagedColumn[],
  need: (name: string, role: string) => StagedColumn,
): Omit<NonNullable<DimensionLayout['partial']>, 'staged'> | undefined {
  const spec = table.partialUpdates
  if (spec === undefined) return undefined
  const named = (names: readonly string[], role: string) =>
    new Set(names.map((name) => need(name, role).name))
  const selection = spec.ignoreNulls
  let ignoreNulls: StagedColumn[] = []
  if (selection?.kind === 'all') ignoreNulls = [...attributes]
  else if (selection?.kind === 'list') {
    const names = named(selection.columns, 'ignore_null_updates')
    ignoreNulls = attributes.filter((c) => names.has(c.name))
  } else if (selection?.kind === 'all_except') {
    const names = named(selection.columns, 'ignore_null_updates.except')
    ignoreNulls = attributes.filter((c) => !names.has(c.name))
  }
  const toUpdate =
    spec.columnsToUpdate === undefined ? undefined : named(spec.columnsToUpdate, 'columns_to_update')
  const kept = toUpdate === undefined ? [] : attributes.filter((c) => !toUpdate.has(c.name))
  const ignored = ignoreNulls.filter((c) => !kept.includes(c))
  return ignored.length === 0 && kept.length === 0 ? undefined : { ignoreNulls: ignored, kept }
}
