/**
 * Pure resolution of a parsed dimsync.yaml document into a frozen ProjectSpec: shape checks (zod), then
 * defaults precedence (table > defaults > built-in) and the rules that span fields. All problems are
 * collected and thrown together as one ConfigError, so a user fixes the file in one pass.
 */
import path from 'node:path'
import { ConfigError } from '../core/errors.ts'
import {
  COLUMN_PRESETS,
  METADATA_COLUMN_KEYS,
  METADATA_COLUMN_OPTIONS,
  type ColumnPreset,
  type MetadataColumn,
  type MetadataColumnNames,
} from '../core/metadata-columns.ts'
import type {
  ExtractSpec,
  ProjectSpec,
  SourceSpec,
  TableSpec,
  TrackedSpec,
  ValidFromSpec,
  WarehouseSpec,
} from '../core/table-spec.ts'
import {
  configDocumentSchema,
  defaultsSchema,
  localStoreSchema,
  tableSchema,
  warehouseSchema,
  bigQueryWarehouseSchema,
  type TableDocument,
  type TableOptionsDocument,
} from './config-schema.ts'
import { deepFreeze } from './deep-freeze.ts'
import { awsSchema } from './config-schema.ts'
import {
  checkScheduleOptions,
  resolveAws,
  resolveLambdaSize,
  resolveSchedule,
} from './resolve-deploy-options.ts'
import { formatPath, show } from './messages.ts'
import { changeFeedColumns, resolveChangeFeed } from './resolve-change-feed.ts'
import { fallbackErrorMap, fromZodIssues, type ConfigIssue } from './zod-issues.ts'

export const DEFAULT_WAREHOUSE = Object.freeze({
  type: 'duckdb',
  path: '.dimsync/warehouse.duckdb',
  schema: 'main',
})
export const DEFAULT_STAGING = Object.freeze({ type: 'local', path: '.dimsync/staging' })
export const DEFAULT_STATE = Object.freeze({ type: 'local', path: '.dimsync/state' })
export const DEFAULT_MAX_DELETE_SHARE = 0.5
/** Open-end sentinels must be unmistakably "open": a real business date could otherwise read as a closed version. */
export const OPEN_END_MINIMUM = '2100-01-01T00:00:00.000Z'

type Path = readonly PropertyKey[]
type Options = NonNullable<TableOptionsDocument>

/** Issues are reported in document order: top-level sections first, then tables by index. */
const SECTION_ORDER = ['version', 'warehouse', 'staging', 'state', 'defaults', 'tables']

class IssueList {
  readonly items: ConfigIssue[] = []
  add(path: Path, message: string): void {
    this.items.push({ path, message })
  }
  render(): string[] {
    const rank = (issue: ConfigIssue) => {
      if (issue.path.length === 0) return [-1, -1] as const
      const section = SECTION_ORDER.indexOf(String(issue.path[0]))
      const table = issue.path[0] === 'tables' && typeof issue.path[1] === 'number' ? issue.path[1] : -1
      return [section === -1 ? SECTION_ORDER.length : section, table] as const
    }
    return this.items
      .map((issue, index) => ({ issue, index, rank: rank(issue) }))
      .sort((a, b) => a.rank[0] - b.rank[0] || a.rank[1] - b.rank[1] || a.index - b.index)
      .map(({ issue }) => `${formatPath(issue.path)}: ${issue.message}`)
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/**
 * Resolves a parsed YAML document (plain data) into a ProjectSpec. `configPath` is made absolute; every relative
 * path in the config resolves against its folder. Throws ConfigError listing every problem found.
 */
export function resolveProject(document: unknown, configPath: string): ProjectSpec {
  const file = path.resolve(configPath)
  const baseDir = path.dirname(file)
  const issues = new IssueList()
  if (document === null || document === undefined) {
    throw new ConfigError(file, ['(root): the file is empty; expected a mapping with version and tables'])
  }
  const parsed = configDocumentSchema.safeParse(document, { error: fallbackErrorMap })
  if (!parsed.success)
    for (const issue of fromZodIssues(parsed.error.issues)) {
      // The warehouse section is reported by the shape its `type` picks (see below), not as a union mismatch.
      if (issue.path[0] !== 'warehouse') issues.add(issue.path, issue.message)
    }
  if (!isRecord(document)) throw new ConfigError(file, issues.render())

  // Each part is parsed again on its own so one broken table does not hide the rule checks of the others.
  const defaultsParsed = defaultsSchema.nullable().optional().safeParse(document.defaults)
  const defaults = defaultsParsed.success ? checkDefaults(defaultsParsed.data ?? {}, issues) : undefined

  const rawTables = Array.isArray(document.tables) ? document.tables : []
  const tables: TableSpec[] = []
  rawTables.forEach((raw, index) => {
    const table = tableSchema.safeParse(raw)
    if (table.success && defaults !== undefined) {
      const spec = resolveTable(index, table.data, defaults, issues)
      if (spec !== undefined) tables.push(spec)
    }
  })
  checkUnique(rawTables, 'name', issues, (raw) => raw.name, 'table name')
  checkUnique(rawTables, 'target', issues, (raw) => targetOf(raw), 'target', true)

  const aws = awsSchema.nullable().optional().safeParse(document.aws)
  const awsSpec =
    aws.success && aws.data != null
      ? resolveAws(aws.data, tables, (where, message) => issues.add(where, message))
      : undefined
  // ---- BigQuery warehouse (BigQuery issue): `type` picks the shape whose messages are reported ----
  const bigQuery = isRecord(document.warehouse) && document.warehouse.type === 'bigquery'
  const warehouse = (bigQuery ? bigQueryWarehouseSchema : warehouseSchema)
    .nullable()
    .optional()
    .safeParse(document.warehouse, { error: fallbackErrorMap })
  if (!warehouse.success)
    for (const issue of fromZodIssues(warehouse.error.issues))
      issues.add(['warehouse', ...issue.path], issue.message)
  // ---- end BigQuery warehouse ----
  const staging = localStoreSchema.nullable().optional().safeParse(document.staging)
  const state = localStoreSchema.nullable().optional().safeParse(document.state)
  const rendered = issues.render()
  if (rendered.length > 0 || !warehouse.success || !staging.success || !state.success || !aws.success) {
    throw new ConfigError(file, rendered)
  }

  const warehousePath =
    (warehouse.data as { path?: string } | null | undefined)?.path ?? DEFAULT_WAREHOUSE.path
  return deepFreeze<ProjectSpec>({
    configPath: file,
    baseDir,
    warehouse: resolveWarehouse(warehouse.data, () => ({
      type: 'duckdb',
      // DuckDB's in-memory database is a name, not a file; resolving it would create a file called ":memory:".
      path: warehousePath === ':memory:' ? warehousePath : path.resolve(baseDir, warehousePath),
      schema: (warehouse.data as { schema?: string } | null | undefined)?.schema ?? DEFAULT_WAREHOUSE.schema,
    })),
    staging: { type: 'local', path: path.resolve(baseDir, staging.data?.path ?? DEFAULT_STAGING.path) },
    state: { type: 'local', path: path.resolve(baseDir, state.data?.path ?? DEFAULT_STATE.path) },
    tables,
    ...(awsSpec !== undefined ? { aws: awsSpec } : {}),
  })
}

/** BigQuery warehouse (BigQuery issue): the dataset is also the `schema` every warehouse places dimensions in. */
function resolveWarehouse(data: unknown, duckdb: () => WarehouseSpec): WarehouseSpec {
  if (!isRecord(data) || data.type !== 'bigquery') return duckdb()
  const w = data as { project: string; dataset: string; location: string; credentials_secret?: string }
  return {
    type: 'bigquery',
    project: w.project,
    dataset: w.dataset,
    schema: w.dataset,
    location: w.location,
    ...(w.credentials_secret !== undefined ? { credentialsSecret: w.credentials_secret } : {}),
  }
}

function targetOf(raw: unknown): unknown {
  if (!isRecord(raw)) return undefined
  if (raw.target !== undefined) return raw.target
  return typeof raw.name === 'string' ? `dim_${raw.name}` : undefined
}

function checkUnique(
  rawTables: readonly unknown[],
  field: string,
  issues: IssueList,
  valueOf: (raw: Record<string, unknown>) => unknown,
  what: string,
  ignoreCase = false,
): void {
  const seen = new Map<string, number>()
  rawTables.forEach((raw, index) => {
    if (!isRecord(raw)) return
    const value = valueOf(raw)
    if (typeof value !== 'string') return
    const norm = ignoreCase ? value.toLowerCase() : value
    const first = seen.get(norm)
    if (first === undefined) seen.set(norm, index)
    else issues.add(['tables', index, field], `duplicate ${what} ${show(value)} (also tables[${first}])`)
  })
}

/** Checks of option values that do not depend on a table; done once so a bad default is reported once. */
function checkDefaults(defaults: Options, issues: IssueList): Options | undefined {
  const before = issues.items.length
  checkOwnOptions(['defaults'], defaults, issues)
  if (defaults.columns !== undefined) {
    const names = resolveColumns(defaults.columns, COLUMN_PRESETS.dimsync)
    checkMetadataDistinct(['defaults', 'columns'], defaults.columns, names, issues)
  }
  return issues.items.length === before ? defaults : undefined
}

function checkOwnOptions(base: Path, options: Options, issues: IssueList): void {
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
function checkDuplicates(listPath: Path, names: readonly string[], issues: IssueList): void {
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

const TIMESTAMP_PARTS =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|([+-])(\d{2}):(\d{2})))?$/

/** Normalizes an open-end sentinel to ISO UTC (`toISOString`), or undefined if it is not a real instant. */
export function normalizeOpenEnd(text: string): string | undefined {
  const m = TIMESTAMP_PARTS.exec(text)
  if (m === null) return undefined
  const [y, mo, d, h = 0, mi = 0, s = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((part) =>
    part === undefined ? undefined : Number(part),
  ) as number[]
  const local = new Date(Date.UTC(y!, mo! - 1, d!, h, mi, s))
  // Date.UTC rolls 02-30 over into March; a sentinel that silently moves is worse than an error.
  const real =
    local.getUTCFullYear() === y &&
    local.getUTCMonth() === mo! - 1 &&
    local.getUTCDate() === d &&
    local.getUTCHours() === h &&
    local.getUTCMinutes() === mi &&
    local.getUTCSeconds() === s
  const offsetHours = m[10] === undefined ? 0 : Number(m[10])
  const offsetMinutes = m[11] === undefined ? 0 : Number(m[11])
  if (!real || offsetHours > 14 || offsetMinutes > 59) return undefined
  const millis = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000)
  const sign = m[9] === '-' ? -1 : 1
  const instant = local.getTime() + millis - sign * (offsetHours * 60 + offsetMinutes) * 60_000
  return new Date(instant).toISOString()
}

function openEndProblem(text: string): string | undefined {
  const normalized = normalizeOpenEnd(text)
  if (normalized === undefined) return `${show(text)} is not a valid date/time`
  if (normalized <= OPEN_END_MINIMUM) {
    return `must be after 2100-01-01 (got ${show(text)}): a sentinel that close could be mistaken for a real end date`
  }
  return undefined
}

function resolveColumns(
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

function checkMetadataDistinct(
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

const INHERITED = ' (inherited from defaults)'

function inferFormat(filePath: string): 'csv' | 'parquet' | undefined {
  const lower = filePath.toLowerCase()
  if (lower.endsWith('.csv') || lower.endsWith('.csv.gz')) return 'csv'
  if (lower.endsWith('.parquet')) return 'parquet'
  return undefined
}

function resolveSource(base: Path, source: TableDocument['source'], issues: IssueList): SourceSpec {
  if (source.type === 'file') {
    const format = source.format ?? inferFormat(source.path)
    if (format === undefined) {
      issues.add(
        [...base, 'source', 'format'],
        `cannot infer the format from ${show(source.path)} (expected .csv or .parquet); set format: csv or parquet`,
      )
    }
    if (format === 'parquet') {
      for (const option of ['delimiter', 'header'] as const) {
        if (source[option] !== undefined)
          issues.add([...base, 'source', option], 'only applies to csv sources')
      }
    }
    return {
      type: 'file',
      path: source.path,
      format: format ?? 'csv',
      csv: { delimiter: source.delimiter ?? ',', header: source.header ?? true },
    }
  }
  const hasTable = source.table !== undefined
  const hasQuery = source.query !== undefined
  if (hasTable === hasQuery) {
    issues.add(
      [...base, 'source'],
      `needs exactly one of table or query (got ${hasTable ? 'both' : 'neither'})`,
    )
  }
  return {
    type: source.type,
    urlEnv: source.url_env,
    ...(hasTable ? { table: source.table } : {}),
    ...(hasQuery ? { query: source.query } : {}),
    ...(source.chunks !== undefined ? { chunks: source.chunks } : {}),
    ...(source.slice_rows !== undefined ? { sliceRows: source.slice_rows } : {}),
    ...(source.statement_timeout_seconds !== undefined
      ? { statementTimeoutSeconds: source.statement_timeout_seconds }
      : {}),
  }
}

function resolveTable(
  index: number,
  table: TableDocument,
  defaults: Options,
  issues: IssueList,
): TableSpec | undefined {
  const before = issues.items.length
  const base: Path = ['tables', index]
  checkOwnOptions(base, table, issues)

  const pick = <K extends keyof Options>(key: K): { value: Options[K]; note: string } =>
    table[key] !== undefined
      ? { value: table[key], note: '' }
      : { value: defaults[key], note: defaults[key] !== undefined ? INHERITED : '' }
  const at = (...rest: PropertyKey[]): Path => [...base, ...rest]

  const source = resolveSource(base, table.source, issues)
  const key = typeof table.key === 'string' ? [table.key] : table.key
  if (typeof table.key !== 'string') checkDuplicates(at('key'), key, issues)
  const keyPath = (i: number) => (typeof table.key === 'string' ? at('key') : at('key', i))

  const validFromOpt = pick('valid_from')
  const validFrom: ValidFromSpec =
    validFromOpt.value === undefined || validFromOpt.value === 'extracted_at'
      ? { kind: 'extracted_at' }
      : { kind: 'column', column: validFromOpt.value.column }

  const extractOpt = pick('extract')
  const changeFeed =
    typeof extractOpt.value === 'object' && extractOpt.value.mode === 'changes'
      ? resolveChangeFeed(extractOpt.value, source, validFrom, at, extractOpt.note, (where, message) =>
          issues.add(where, message),
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

  const trackedOpt = pick('tracked')
  const tracked: TrackedSpec =
    trackedOpt.value === undefined
      ? { kind: 'all_except', columns: [] }
      : Array.isArray(trackedOpt.value)
        ? { kind: 'list', columns: trackedOpt.value }
        : { kind: 'all_except', columns: trackedOpt.value.all_except }
  const trackedPath = (i: number) =>
    tracked.kind === 'list' ? at('tracked', i) : at('tracked', 'all_except', i)

  const excludeOpt = pick('exclude')
  const exclude = excludeOpt.value ?? []
  const deletesOpt = pick('deletes')
  // A change feed says when a key was deleted, so its delete events close versions unless told otherwise.
  const deletes = deletesOpt.value ?? (changeFeed !== undefined ? 'invalidate' : 'ignore')
  const softOpt = pick('soft_delete_column')
  const softDeleteColumn = softOpt.value ?? undefined
  const openEnd = pick('open_end').value
  const defaultColumns =
    defaults.columns === undefined
      ? COLUMN_PRESETS.dimsync
      : resolveColumns(defaults.columns, COLUMN_PRESETS.dimsync)
  const columns = table.columns === undefined ? defaultColumns : resolveColumns(table.columns, defaultColumns)

  const lower = (names: readonly string[]) => new Set(names.map((name) => name.toLowerCase()))
  const keySet = lower(key)
  const excludeSet = lower(exclude)

  if (tracked.kind === 'list') {
    tracked.columns.forEach((name, i) => {
      if (keySet.has(name.toLowerCase())) {
        issues.add(
          trackedPath(i),
          `key column ${show(name)} cannot be tracked: the key identifies the entity${trackedOpt.note}`,
        )
      }
    })
  }
  exclude.forEach((name, i) => {
    const lname = name.toLowerCase()
    if (keySet.has(lname))
      issues.add(at('exclude', i), `key column ${show(name)} cannot be excluded${excludeOpt.note}`)
    else if (tracked.kind === 'list' && lower(tracked.columns).has(lname)) {
      issues.add(at('exclude', i), `${show(name)} is tracked, so it cannot be excluded${excludeOpt.note}`)
    } else if (tracked.kind === 'all_except' && lower(tracked.columns).has(lname)) {
      issues.add(
        at('exclude', i),
        `${show(name)} is in tracked.all_except (stored, not tracked), so it cannot also be excluded${excludeOpt.note}`,
      )
    }
  })

  const needsExtracting: [Path, string | undefined, string, string][] = [
    [
      at('extract', 'cursor'),
      extract.mode === 'incremental' && (changeFeed === undefined || hasOwnCursor(extractOpt.value))
        ? extract.cursor
        : undefined,
      'cursor',
      extractOpt.note,
    ],
    [
      at('valid_from', 'column'),
      validFrom.kind === 'column' ? validFrom.column : undefined,
      'valid_from',
      validFromOpt.note,
    ],
    [at('soft_delete_column'), softDeleteColumn, 'soft delete', softOpt.note],
    ...(changeFeed === undefined
      ? []
      : changeFeedColumns(changeFeed.changes, at).map(
          ([where, name, role]): [Path, string, string, string] => [where, name, role, extractOpt.note],
        )),
  ]
  for (const [where, name, role, note] of needsExtracting) {
    if (name !== undefined && excludeSet.has(name.toLowerCase())) {
      issues.add(where, `the ${role} column ${show(name)} is in exclude; it must be extracted${note}`)
    }
  }
  if (softDeleteColumn !== undefined && keySet.has(softDeleteColumn.toLowerCase())) {
    issues.add(
      at('soft_delete_column'),
      `key column ${show(softDeleteColumn)} cannot be the soft delete column${softOpt.note}`,
    )
  }

  if (
    changeFeed === undefined &&
    extract.mode === 'incremental' &&
    deletes !== 'ignore' &&
    softDeleteColumn === undefined
  ) {
    issues.add(
      at('deletes'),
      `${show(deletes)} needs a full extract: a row missing from an incremental delta is not deleted ` +
        `(use deletes: ignore, or set soft_delete_column to read deletes from a column)${deletesOpt.note}`,
    )
  }

  // Checked here, not with the other own options: an override without a preset builds on the defaults' names.
  if (table.columns !== undefined) checkMetadataDistinct(at('columns'), table.columns, columns, issues)
  const metadataByName = new Map(METADATA_COLUMN_KEYS.map((k) => [columns[k].toLowerCase(), k]))
  const userColumns: [Path, string, string][] = [
    ...key.map((name, i): [Path, string, string] => [keyPath(i), name, '']),
    ...tracked.columns.map((name, i): [Path, string, string] => [trackedPath(i), name, trackedOpt.note]),
    ...exclude.map((name, i): [Path, string, string] => [at('exclude', i), name, excludeOpt.note]),
    ...needsExtracting.flatMap(([where, name, , note]): [Path, string, string][] =>
      name === undefined ? [] : [[where, name, note]],
    ),
  ]
  for (const [where, name, note] of userColumns) {
    const clash = metadataByName.get(name.toLowerCase())
    if (clash !== undefined) {
      const option = METADATA_COLUMN_OPTIONS[clash]
      issues.add(
        where,
        `${show(name)} is also the name of the ${option} metadata column; ` +
          `rename the metadata column with columns: { ${option}: <other name> }${note}`,
      )
    }
  }

  const schedule = resolveSchedule(base, table.schedule, defaults.schedule, (where, message) =>
    issues.add(where, message),
  )
  const lambda =
    table.lambda === undefined && defaults.lambda === undefined
      ? undefined
      : resolveLambdaSize(table.lambda, defaults.lambda)

  if (issues.items.length > before) return undefined
  return {
    name: table.name,
    source,
    target: table.target ?? `dim_${table.name}`,
    key,
    extract,
    ...(changeFeed !== undefined ? { changes: changeFeed.changes } : {}),
    validFrom,
    tracked,
    exclude,
    deletes,
    maxDeleteShare: pick('max_delete_share').value ?? DEFAULT_MAX_DELETE_SHARE,
    openEnd: openEnd === undefined || openEnd === null ? null : normalizeOpenEnd(openEnd)!,
    columns,
    ...(softDeleteColumn !== undefined ? { softDeleteColumn } : {}),
    ...(schedule !== undefined ? { schedule } : {}),
    ...(lambda !== undefined ? { lambda } : {}),
  }
}

/** A change feed read by a cursor the user named (not the change time it defaults to). */
function hasOwnCursor(extract: Options['extract']): boolean {
  return typeof extract === 'object' && extract.mode === 'changes' && extract.cursor !== undefined
}
