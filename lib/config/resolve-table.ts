/**
 * One table of dimsync.yaml resolved into a TableSpec, in named steps: its own options, then source, key, how it is
 * extracted, tracked and excluded columns, then the rules that span them (roles, extracted columns, deletes,
 * metadata names). Options a table leaves out come from `defaults`; problems name where the value came from.
 */
import {
  COLUMN_PRESETS,
  METADATA_COLUMN_KEYS,
  METADATA_COLUMN_OPTIONS,
  systemTimeColumnNames,
  type MetadataColumn,
} from '../core/metadata-columns.ts'
import type {
  ColumnPolicies,
  ColumnSelection,
  PartialUpdateSpec,
  ExtractSpec,
  SourceSpec,
  TableMode,
  TableSpec,
  TrackedSpec,
  ValidFromSpec,
} from '../core/table-spec.ts'
import type { TableDocument } from './config-schema.ts'
import type { IssueList, Path } from './issue-list.ts'
import { show } from './messages.ts'
import { normalizeOpenEnd } from './open-end.ts'
import { changeFeedColumns, resolveChangeFeed, type ResolvedChangeFeed } from './resolve-change-feed.ts'
import { resolveChangeDetection } from './resolve-change-detection.ts'
import { resolveRenamed } from './resolve-renamed.ts'
import { parseDeleteCondition, type DeleteCondition } from './delete-condition.ts'
import { resolveLambdaSize, resolveSchedule } from './resolve-deploy-options.ts'
import { resolveSource } from './resolve-source.ts'
import {
  checkDuplicates,
  checkMetadataDistinct,
  checkOwnOptions,
  presetOf,
  presetTableFields,
  resolveColumns,
  type Options,
} from './table-options.ts'

export const DEFAULT_MAX_DELETE_SHARE = 0.5

const INHERITED = ' (inherited from defaults)'

/** A table option as the table wrote it or as inherited; `note` says which, for messages. */
interface Picked<T> {
  readonly value: T
  readonly note: string
}

/** What every step of one table needs: where it is in the file, its options, and where problems go. */
interface TableContext {
  readonly table: TableDocument
  readonly defaults: Options
  readonly issues: IssueList
  readonly base: Path
  readonly at: (...rest: PropertyKey[]) => Path
  readonly pick: <K extends keyof Options>(key: K) => Picked<Options[K]>
}

/** A column the table names for a role (the key, tracked, a cursor…), with where it was written. */
type NamedColumn = readonly [where: Path, name: string, note: string]

/** A column the run reads from the source for a role other than being stored (cursor, change time, …). */
type RoleColumn = readonly [where: Path, name: string | undefined, role: string, note: string]

/** Resolves table `index`, or returns undefined when it has problems (all of them added to `issues`). */
export function resolveTable(
  index: number,
  table: TableDocument,
  defaults: Options,
  issues: IssueList,
): TableSpec | undefined {
  const before = issues.items.length
  checkOwnOptions(['tables', index], table, issues)
  const mode = resolveMode(tableContext(index, table, defaults, issues))
  const ctx = tableContext(index, table, withoutUnusedDefaults(defaults, mode.value), issues)
  checkOptionsOfMode(ctx, mode)

  const source = resolveSource(ctx.base, table.source, issues)
  const key = resolveKey(ctx)
  const read = resolveExtract(ctx, source)
  const { validFrom, extract, changeFeed } = read
  if (source.type === 'file' && source.format === 'json' && changeFeed === undefined)
    issues.add(
      ctx.at('source', 'format'),
      'JSON files are read as Debezium change events only: set extract: { mode: changes, format: debezium }',
    )
  const tracked = resolveTracked(ctx, mode.value)
  const excludeOpt = ctx.pick('exclude')
  const exclude: Picked<readonly string[]> = { value: excludeOpt.value ?? [], note: excludeOpt.note }
  const softOpt = ctx.pick('soft_delete_column')
  const deletesOpt = ctx.pick('deletes')
  const deletesDoc = deletesOpt.value
  const condition =
    typeof deletesDoc === 'object'
      ? resolveDeleteCondition(ctx, deletesDoc.when, softOpt, deletesOpt.note)
      : undefined
  const softDelete: Picked<string | undefined> =
    condition !== undefined
      ? { value: condition.column, note: deletesOpt.note }
      : { value: softOpt.value ?? undefined, note: softOpt.note }
  // A change feed says when a key was deleted, so its delete events close versions unless told otherwise.
  const deletes =
    (typeof deletesDoc === 'object' ? (deletesDoc.policy ?? 'invalidate') : deletesDoc) ??
    (changeFeed !== undefined ||
    (mode.value === 'mirror' && !readsNewFilesOnly(source) && seesDeletes(extract, softOpt.value))
      ? 'invalidate'
      : 'ignore')

  checkColumnRoles(ctx, key, tracked, exclude)
  const policies = resolveColumnPolicies(ctx, mode, key, tracked.value, exclude.value)
  const partialUpdates = resolvePartialUpdates(ctx, mode, key, exclude.value)
  const roleColumns = readColumns(ctx, read, softDelete)
  checkRoleColumnsExtracted(ctx, roleColumns, exclude.value)
  checkSoftDeleteNotKey(ctx, softDelete, key)
  if (changeFeed === undefined)
    checkDeletesNeedFullExtract(
      ctx,
      extract,
      source,
      { value: deletes, note: deletesOpt.note },
      softDelete.value,
    )
  const columns = resolveMetadataNames(ctx)
  const preset = presetTableFields(presetOf(ctx.table.columns, presetOf(ctx.defaults.columns, 'dimsync')))
  const systemTime = resolveSystemTime(ctx, mode, columns)
  const renamed = resolveRenamed(ctx.table.renamed, {
    at: ctx.at,
    issues,
    mode: mode.value,
    key,
    exclude: exclude.value,
    validFrom,
    changeFeed: changeFeed !== undefined,
    systemTime,
  })
  const changeDetection = resolveChangeDetection(ctx.table.change_detection, {
    at: ctx.at,
    issues,
    mode: mode.value,
    key,
    tracked: tracked.value,
    exclude: exclude.value,
    policies,
    changeFeed: changeFeed !== undefined,
    partialUpdates: partialUpdates !== undefined,
    systemTime,
    validFromColumn: validFrom.kind === 'column' ? validFrom.column : undefined,
    cursor: extract.mode === 'incremental' ? extract.cursor : undefined,
  })
  checkDbtIdsFree(ctx, columns, preset.dbtIds)
  if (preset.syncedColumn !== undefined && deletes === 'new_record')
    ctx.issues.add(
      ctx.at('deletes'),
      `new_record does not apply to the fivetran preset: Fivetran's history mode records a delete by ending the ` +
        `key's last version at the delete time with _fivetran_active = FALSE, and writes no deletion version; ` +
        `use invalidate${deletesOpt.note}`,
    )
  checkMetadataClashes(ctx, columns, systemTime, preset.dbtIds, [
    ...key.map((name, i): NamedColumn => [keyPath(ctx, i), name, '']),
    ...tracked.value.columns.map((name, i): NamedColumn => [
      trackedPath(ctx, tracked.value, i),
      name,
      tracked.note,
    ]),
    ...exclude.value.map((name, i): NamedColumn => [ctx.at('exclude', i), name, exclude.note]),
    // A soft delete flag is read, never stored: it may share the name of a metadata column (is_deleted).
    ...roleColumns.flatMap(([where, name, , note]): NamedColumn[] =>
      name === undefined || name === softDelete.value ? [] : [[where, name, note]],
    ),
  ])

  const schedule = resolveSchedule(ctx.base, table.schedule, defaults.schedule, (where, message) =>
    issues.add(where, message),
  )
  const lambda =
    table.lambda === undefined && defaults.lambda === undefined
      ? undefined
      : resolveLambdaSize(table.lambda, defaults.lambda)

  if (issues.items.length > before) return undefined
  const removedColumns = ctx.pick('removed_columns').value
  const openEnd = ctx.pick('open_end').value
  return {
    name: table.name,
    source,
    target: table.target ?? `dim_${table.name}`,
    key,
    mode: mode.value,
    extract,
    ...(changeFeed !== undefined ? { changes: changeFeed.changes } : {}),
    validFrom,
    tracked: tracked.value,
    ...(policies !== undefined ? { policies } : {}),
    ...(partialUpdates !== undefined ? { partialUpdates } : {}),
    ...(changeDetection !== undefined ? { changeDetection } : {}),
    ...(renamed !== undefined ? { renamed } : {}),
    ...(removedColumns === 'keep_last' ? { removedColumns } : {}),
    ...(systemTime !== undefined ? { systemTime } : {}),
    exclude: exclude.value,
    deletes,
    maxDeleteShare: ctx.pick('max_delete_share').value ?? DEFAULT_MAX_DELETE_SHARE,
    openEnd: openEnd === undefined ? preset.openEnd : openEnd === null ? null : normalizeOpenEnd(openEnd)!,
    columns,
    ...(preset.endStyle !== undefined ? { endStyle: preset.endStyle } : {}),
    ...(preset.dbtIds !== undefined ? { dbtIds: preset.dbtIds } : {}),
    ...(preset.syncedColumn !== undefined ? { syncedColumn: preset.syncedColumn } : {}),
    ...(softDelete.value !== undefined ? { softDeleteColumn: softDelete.value } : {}),
    ...(condition !== undefined ? { softDeleteEquals: condition.equals } : {}),
    ...(schedule !== undefined ? { schedule } : {}),
    ...(lambda !== undefined ? { lambda } : {}),
  }
}

function resolveMode(ctx: TableContext): Picked<TableMode> {
  const picked = ctx.pick('mode')
  return { value: picked.value ?? 'history', note: picked.note }
}

/** Options about versions that a table of `mode` has no use for; refused on the table, ignored in defaults. */
const UNUSED_OPTIONS: Record<TableMode, readonly (keyof Options)[]> = {
  history: [],
  mirror: ['tracked'],
  append: ['tracked', 'deletes', 'soft_delete_column', 'valid_from'],
}

const WHY_UNUSED: Record<Exclude<TableMode, 'history'>, string> = {
  mirror: 'a mirror keeps only the current row of each key, so no column opens versions',
  append:
    'append keeps every row of every extract, valid from its extraction time until the next extract that holds ' +
    'its key (or, for a full extract, until the next extract)',
}

function withoutUnusedDefaults(defaults: Options, mode: TableMode): Options {
  const kept: Record<string, unknown> = { ...defaults }
  for (const option of UNUSED_OPTIONS[mode]) delete kept[option]
  return kept as Options
}

function checkOptionsOfMode(ctx: TableContext, mode: Picked<TableMode>): void {
  if (mode.value === 'history') return
  const why = WHY_UNUSED[mode.value]
  const modeText = `mode ${mode.value}${mode.note === '' ? '' : ' (inherited from defaults)'}`
  for (const option of UNUSED_OPTIONS[mode.value]) {
    if (ctx.table[option] !== undefined)
      ctx.issues.add(ctx.at(option), `does not apply to ${modeText}: ${why}; leave it out`)
  }
  const deletes = ctx.pick('deletes')
  const policy = typeof deletes.value === 'object' ? deletes.value.policy : deletes.value
  if (mode.value === 'mirror' && policy === 'new_record') {
    ctx.issues.add(
      ctx.at('deletes'),
      `new_record does not apply to ${modeText}: a deleted key's row is removed (use invalidate, or ignore to ` +
        `keep it)${deletes.note}`,
    )
  }
  const extract = ctx.pick('extract')
  if (mode.value === 'append' && typeof extract.value === 'object' && extract.value.mode === 'changes') {
    ctx.issues.add(
      ctx.at('extract', 'mode'),
      `a change feed cannot be appended (${modeText}): its rows are events, not states; use mode history or ` +
        `mirror${extract.note}`,
    )
  }
}

/** A mirror sees deletes when the extract is whole, or when a column marks deleted rows. */
/** A file source that reads only the files it has not merged: each batch is a delta. */
function readsNewFilesOnly(source: SourceSpec): boolean {
  return source.type === 'file' && source.files === 'new_only'
}

function seesDeletes(extract: ExtractSpec, softDeleteColumn: string | null | undefined): boolean {
  return extract.mode === 'full' || (softDeleteColumn !== undefined && softDeleteColumn !== null)
}

function tableContext(
  index: number,
  table: TableDocument,
  defaults: Options,
  issues: IssueList,
): TableContext {
  const base: Path = ['tables', index]
  return {
    table,
    defaults,
    issues,
    base,
    at: (...rest) => [...base, ...rest],
    pick: (key) =>
      table[key] !== undefined
        ? { value: table[key], note: '' }
        : { value: defaults[key], note: defaults[key] !== undefined ? INHERITED : '' },
  }
}

function resolveKey(ctx: TableContext): readonly string[] {
  const written = ctx.table.key
  if (typeof written === 'string') return [written]
  checkDuplicates(ctx.at('key'), written, ctx.issues)
  return written
}

function keyPath(ctx: TableContext, i: number): Path {
  return typeof ctx.table.key === 'string' ? ctx.at('key') : ctx.at('key', i)
}

interface ResolvedExtract {
  readonly validFrom: ValidFromSpec
  readonly extract: ExtractSpec
  readonly changeFeed: ResolvedChangeFeed | undefined
  /** Marks messages about the extract option when it was inherited. */
  readonly extractNote: string
  readonly validFromNote: string
}

/** How the source is read (full, incremental or as a change feed) and where business time comes from. */
function resolveExtract(ctx: TableContext, source: SourceSpec): ResolvedExtract {
  const validFromOpt = ctx.pick('valid_from')
  const validFrom: ValidFromSpec =
    validFromOpt.value === undefined || validFromOpt.value === 'extracted_at'
      ? { kind: 'extracted_at' }
      : { kind: 'column', column: validFromOpt.value.column }

  const extractOpt = ctx.pick('extract')
  const changeFeed =
    typeof extractOpt.value === 'object' && extractOpt.value.mode === 'changes'
      ? resolveChangeFeed(extractOpt.value, source, validFrom, ctx.at, extractOpt.note, (where, message) =>
          ctx.issues.add(where, message),
        )
      : undefined
  const extract: ExtractSpec =
    changeFeed !== undefined
      ? changeFeed.extract
      : extractOpt.value === undefined ||
          extractOpt.value === 'full' ||
          extractOpt.value.mode !== 'incremental'
        ? { mode: 'full' }
        : {
            mode: 'incremental',
            cursor: extractOpt.value.cursor,
            lookbackMinutes: extractOpt.value.lookback_minutes ?? 0,
          }
  return { validFrom, extract, changeFeed, extractNote: extractOpt.note, validFromNote: validFromOpt.note }
}

function resolveTracked(ctx: TableContext, mode: TableMode): Picked<TrackedSpec> {
  const trackedOpt = ctx.pick('tracked')
  // A mirror keeps one row per key, so every column is overwritten in place (as untracked columns are).
  const tracked: TrackedSpec =
    mode === 'mirror'
      ? { kind: 'list', columns: [] }
      : trackedOpt.value === undefined
        ? { kind: 'all_except', columns: [] }
        : Array.isArray(trackedOpt.value)
          ? { kind: 'list', columns: trackedOpt.value }
          : { kind: 'all_except', columns: trackedOpt.value.all_except }
  return { value: tracked, note: trackedOpt.note }
}

function trackedPath(ctx: TableContext, tracked: TrackedSpec, i: number): Path {
  return tracked.kind === 'list' ? ctx.at('tracked', i) : ctx.at('tracked', 'all_except', i)
}

function resolveMetadataNames(ctx: TableContext): TableSpec['columns'] {
  const { table, defaults } = ctx
  const defaultColumns =
    defaults.columns === undefined
      ? COLUMN_PRESETS.dimsync
      : resolveColumns(defaults.columns, COLUMN_PRESETS.dimsync)
  const columns = table.columns === undefined ? defaultColumns : resolveColumns(table.columns, defaultColumns)
  // Checked here, not with the other own options: an override without a preset builds on the defaults' names.
  if (table.columns !== undefined)
    checkMetadataDistinct(ctx.at('columns'), table.columns, columns, ctx.issues)
  return columns
}

const lowerSet = (names: readonly string[]) => new Set(names.map((name) => name.toLowerCase()))

/** A key column is neither tracked nor excluded; a column is either tracked, stored untracked or excluded. */
function checkColumnRoles(
  ctx: TableContext,
  key: readonly string[],
  tracked: Picked<TrackedSpec>,
  exclude: Picked<readonly string[]>,
): void {
  const keySet = lowerSet(key)
  const trackedSet = lowerSet(tracked.value.columns)
  if (tracked.value.kind === 'list') {
    tracked.value.columns.forEach((name, i) => {
      if (keySet.has(name.toLowerCase())) {
        ctx.issues.add(
          trackedPath(ctx, tracked.value, i),
          `key column ${show(name)} cannot be tracked: the key identifies the entity${tracked.note}`,
        )
      }
    })
  }
  exclude.value.forEach((name, i) => {
    const lname = name.toLowerCase()
    const where = ctx.at('exclude', i)
    if (keySet.has(lname)) ctx.issues.add(where, `key column ${show(name)} cannot be excluded${exclude.note}`)
    else if (tracked.value.kind === 'list' && trackedSet.has(lname)) {
      ctx.issues.add(where, `${show(name)} is tracked, so it cannot be excluded${exclude.note}`)
    } else if (tracked.value.kind === 'all_except' && trackedSet.has(lname)) {
      ctx.issues.add(
        where,
        `${show(name)} is in tracked.all_except (stored, not tracked), so it cannot also be excluded${exclude.note}`,
      )
    }
  })
}

const POLICY_OPTIONS = ['keep_first', 'previous_value', 'current_value'] as const

/**
 * Types 0, 3 and 6 (history tables only). A keep-first column is not tracked (its changes open nothing) and has
 * no previous or current value; a previous value needs a tracked column, whose versions hold the earlier values.
 */
function resolveColumnPolicies(
  ctx: TableContext,
  mode: Picked<TableMode>,
  key: readonly string[],
  tracked: TrackedSpec,
  exclude: readonly string[],
): ColumnPolicies | undefined {
  const { table } = ctx
  if (POLICY_OPTIONS.every((option) => table[option] === undefined)) return undefined
  const keySet = lowerSet(key)
  const excludeSet = lowerSet(exclude)
  const keepFirstSet = lowerSet(table.keep_first ?? [])
  const isTracked = (lname: string) =>
    tracked.kind === 'list'
      ? lowerSet(tracked.columns).has(lname)
      : !lowerSet(tracked.columns).has(lname) && !keepFirstSet.has(lname)
  for (const option of POLICY_OPTIONS) {
    const names = table[option]
    if (names === undefined) continue
    if (mode.value !== 'history') {
      ctx.issues.add(
        ctx.at(option),
        `only applies to mode history (this table is mode ${mode.value}${mode.note === '' ? '' : ', inherited from defaults'})`,
      )
      continue
    }
    checkDuplicates(ctx.at(option), names, ctx.issues)
    names.forEach((name, i) => {
      const lname = name.toLowerCase()
      const problem = keySet.has(lname)
        ? `key column ${show(name)} identifies the entity; it has no column policy`
        : excludeSet.has(lname)
          ? `${show(name)} is in exclude, so it is not stored`
          : option === 'keep_first' && tracked.kind === 'list' && lowerSet(tracked.columns).has(lname)
            ? `${show(name)} is tracked; a keep_first column never opens versions (leave it out of tracked)`
            : option !== 'keep_first' && keepFirstSet.has(lname)
              ? `${show(name)} is in keep_first: it never changes, so it has no ${option === 'previous_value' ? 'previous' : 'current'} value`
              : option === 'previous_value' && !isTracked(lname)
                ? `${show(name)} is not tracked: previous_value needs a tracked column, whose versions hold the values before its last change`
                : undefined
      if (problem !== undefined) ctx.issues.add(ctx.at(option, i), problem)
    })
  }
  return {
    keepFirst: table.keep_first ?? [],
    previousValue: table.previous_value ?? [],
    currentValue: table.current_value ?? [],
  }
}

/** `ignore_null_updates` and `columns_to_update`: which columns a row of an existing key may leave as they were. */
function resolvePartialUpdates(
  ctx: TableContext,
  mode: Picked<TableMode>,
  key: readonly string[],
  exclude: readonly string[],
): PartialUpdateSpec | undefined {
  const { ignore_null_updates: ignoreNulls, columns_to_update: toUpdate } = ctx.table
  if (ignoreNulls === undefined && toUpdate === undefined) return undefined
  if (mode.value === 'append') {
    for (const option of ['ignore_null_updates', 'columns_to_update'] as const)
      if (ctx.table[option] !== undefined)
        ctx.issues.add(
          ctx.at(option),
          `does not apply to mode append${mode.note === '' ? '' : ' (inherited from defaults)'}: append keeps every row as it is`,
        )
    return undefined
  }
  const keySet = lowerSet(key)
  const excludeSet = lowerSet(exclude)
  const checkNames = (listPath: Path, names: readonly string[]) => {
    checkDuplicates(listPath, names, ctx.issues)
    names.forEach((name, i) => {
      const lname = name.toLowerCase()
      if (keySet.has(lname))
        ctx.issues.add(
          [...listPath, i],
          `key column ${show(name)} is never NULL and always identifies the row`,
        )
      else if (excludeSet.has(lname))
        ctx.issues.add([...listPath, i], `${show(name)} is in exclude, so it is not stored`)
    })
  }
  let selection: ColumnSelection | undefined
  if (ignoreNulls === 'all') selection = { kind: 'all' }
  else if (Array.isArray(ignoreNulls)) {
    checkNames(ctx.at('ignore_null_updates'), ignoreNulls)
    selection = { kind: 'list', columns: ignoreNulls }
  } else if (ignoreNulls !== undefined) {
    checkNames(ctx.at('ignore_null_updates', 'except'), ignoreNulls.except)
    selection = { kind: 'all_except', columns: ignoreNulls.except }
  }
  if (toUpdate !== undefined) checkNames(ctx.at('columns_to_update'), toUpdate)
  return {
    ...(selection !== undefined ? { ignoreNulls: selection } : {}),
    ...(toUpdate !== undefined ? { columnsToUpdate: toUpdate } : {}),
  }
}

/** The columns the run reads for what they say (cursor, change time, soft delete, change-feed operation…). */
function readColumns(
  ctx: TableContext,
  { extract, extractNote, validFrom, validFromNote, changeFeed }: ResolvedExtract,
  softDelete: Picked<string | undefined>,
): RoleColumn[] {
  const extractOpt = ctx.pick('extract')
  return [
    [
      ctx.at('extract', 'cursor'),
      extract.mode === 'incremental' && (changeFeed === undefined || hasOwnCursor(extractOpt.value))
        ? extract.cursor
        : undefined,
      'cursor',
      extractNote,
    ],
    [
      ctx.at('valid_from', 'column'),
      validFrom.kind === 'column' ? validFrom.column : undefined,
      'valid_from',
      validFromNote,
    ],
    [ctx.at('soft_delete_column'), softDelete.value, 'soft delete', softDelete.note],
    ...(changeFeed === undefined
      ? []
      : changeFeedColumns(changeFeed.changes, ctx.at).map(([where, name, role]): RoleColumn => [
          where,
          name,
          role,
          extractNote,
        ])),
  ]
}

function checkRoleColumnsExtracted(
  ctx: TableContext,
  roleColumns: readonly RoleColumn[],
  exclude: readonly string[],
): void {
  const excludeSet = lowerSet(exclude)
  for (const [where, name, role, note] of roleColumns) {
    if (name !== undefined && excludeSet.has(name.toLowerCase())) {
      ctx.issues.add(where, `the ${role} column ${show(name)} is in exclude; it must be extracted${note}`)
    }
  }
}

function checkSoftDeleteNotKey(
  ctx: TableContext,
  softDelete: Picked<string | undefined>,
  key: readonly string[],
): void {
  if (softDelete.value !== undefined && lowerSet(key).has(softDelete.value.toLowerCase())) {
    ctx.issues.add(
      ctx.at('soft_delete_column'),
      `key column ${show(softDelete.value)} cannot be the soft delete column${softDelete.note}`,
    )
  }
}

/** `deletes: { when }` parsed (delete-condition.ts); refused with soft_delete_column, which says the same. */
function resolveDeleteCondition(
  ctx: TableContext,
  when: string,
  softOpt: Picked<string | null | undefined>,
  note: string,
): DeleteCondition | undefined {
  const parsed = parseDeleteCondition(when)
  if ('problem' in parsed) {
    ctx.issues.add(ctx.at('deletes', 'when'), `${parsed.problem}${note}`)
    return undefined
  }
  if (softOpt.value !== undefined && softOpt.value !== null)
    ctx.issues.add(
      ctx.at('deletes', 'when'),
      `soft_delete_column ${show(softOpt.value)} says which rows are deletes too; keep one of them${note}`,
    )
  return parsed
}

/** A row missing from an incremental delta was not deleted, so deletes there come only from a column. */
function checkDeletesNeedFullExtract(
  ctx: TableContext,
  extract: ExtractSpec,
  source: SourceSpec,
  deletes: Picked<TableSpec['deletes']>,
  softDeleteColumn: string | undefined,
): void {
  if (deletes.value === 'ignore' || softDeleteColumn !== undefined) return
  if (extract.mode === 'incremental') {
    ctx.issues.add(
      ctx.at('deletes'),
      `${show(deletes.value)} needs a full extract: a row missing from an incremental delta is not deleted ` +
        `(use deletes: ignore, or set soft_delete_column to read deletes from a column)${deletes.note}`,
    )
  } else if (readsNewFilesOnly(source)) {
    ctx.issues.add(
      ctx.at('deletes'),
      `${show(deletes.value)} needs every file read: with source.files: new_only a key missing from the new ` +
        `files is not deleted (use deletes: ignore, or set soft_delete_column to read deletes from a column)` +
        deletes.note,
    )
  }
}

/** A user column may not share its name with a metadata column the dimension adds. */
/**
 * `system_time: true`: the table's system-time column names. Refused where the table keeps no history to version
 * in system time (a mirror overwrites and deletes rows; an append table only ever appends).
 */
function resolveSystemTime(
  ctx: TableContext,
  mode: Picked<TableMode>,
  columns: TableSpec['columns'],
): TableSpec['systemTime'] {
  const picked = ctx.pick('system_time')
  if (picked.value !== true) return undefined
  if (mode.value !== 'history') {
    ctx.issues.add(
      ctx.at('system_time'),
      `does not apply to mode ${mode.value}${mode.note === '' ? '' : ' (inherited from defaults)'}: bitemporal ` +
        `history versions the rows of a history table in system time, and ` +
        `${mode.value === 'mirror' ? 'a mirror overwrites and deletes its rows' : 'an append table keeps no versions'}; use mode history` +
        picked.note,
    )
    return undefined
  }
  return systemTimeColumnNames(columns)
}

function checkMetadataClashes(
  ctx: TableContext,
  columns: TableSpec['columns'],
  systemTime: TableSpec['systemTime'],
  dbtIds: TableSpec['dbtIds'],
  userColumns: readonly NamedColumn[],
): void {
  const metadataByName = new Map<string, MetadataColumn | 'system_time' | 'dbt_ids'>(
    METADATA_COLUMN_KEYS.map((k) => [columns[k].toLowerCase(), k]),
  )
  for (const name of systemTime === undefined ? [] : [systemTime.systemFrom, systemTime.systemTo])
    metadataByName.set(name.toLowerCase(), 'system_time')
  for (const name of dbtIds === undefined ? [] : [dbtIds.scdId, dbtIds.updatedAt, dbtIds.isDeleted])
    metadataByName.set(name.toLowerCase(), 'dbt_ids')
  for (const [where, name, note] of userColumns) {
    const clash = metadataByName.get(name.toLowerCase())
    if (clash === 'dbt_ids') {
      ctx.issues.add(
        where,
        `${show(name)} is also the name of a column dbt snapshots have (columns: dbt); rename or exclude the ` +
          `source column${note}`,
      )
    } else if (clash === 'system_time') {
      ctx.issues.add(
        where,
        `${show(name)} is also the name of a system-time column of this bitemporal table (system_time: true); ` +
          `rename or exclude the source column${note}`,
      )
    } else if (clash !== undefined) {
      const option = METADATA_COLUMN_OPTIONS[clash]
      ctx.issues.add(
        where,
        `${show(name)} is also the name of the ${option} metadata column; ` +
          `rename the metadata column with columns: { ${option}: <other name> }${note}`,
      )
    }
  }
}

/** The dbt preset's own columns (dbt_scd_id, dbt_updated_at, dbt_is_deleted) are not names for other metadata columns. */
function checkDbtIdsFree(
  ctx: TableContext,
  columns: TableSpec['columns'],
  dbtIds: TableSpec['dbtIds'],
): void {
  if (dbtIds === undefined) return
  const reserved = new Set(
    [dbtIds.scdId, dbtIds.updatedAt, dbtIds.isDeleted].map((name) => name.toLowerCase()),
  )
  for (const key of METADATA_COLUMN_KEYS) {
    if (!reserved.has(columns[key].toLowerCase())) continue
    ctx.issues.add(
      ctx.at('columns', METADATA_COLUMN_OPTIONS[key]),
      `${show(columns[key])} is a column of its own in the dbt preset (dbt's id, start and deletion text of a version); ` +
        `give the ${METADATA_COLUMN_OPTIONS[key]} metadata column another name`,
    )
  }
}

/** A change feed read by a cursor the user named (not the sequence it defaults to). */
function hasOwnCursor(extract: Options['extract']): boolean {
  return typeof extract === 'object' && extract.mode === 'changes' && extract.cursor !== undefined
}
