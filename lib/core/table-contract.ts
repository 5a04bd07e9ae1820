import type { DimensionLayout } from './dimension-layout.ts'
import { ContractChangedError } from './errors.ts'
import { METADATA_COLUMN_OPTIONS, METADATA_COLUMN_KEYS } from './metadata-columns.ts'
import type { TableSpec, TrackedSpec } from './table-spec.ts'
import { canonicalJson } from './watermark.ts'

/**
 * What a dimension was built under: the parts of its table's config that decide how its rows are read. It is
 * recorded with the dimension (in the batch ledger row of the merge that wrote it, inside the merge's transaction),
 * so each merge can tell what changed since, before it writes anything.
 *
 * Some changes cannot apply to rows already written and are refused (`unsafe`): the key (rows of one entity would
 * be read as another's), the table mode, where valid_from comes from, system time, and the metadata columns
 * (names, end style, open end: the current version would no longer be found). The others apply from the next
 * merge on without a version per key: the tracked set (and what changes it: keep_first, the cursor of an
 * incremental extract, which is never tracked) rehashes the current versions once; previous_value and
 * current_value are filled as keys change.
 */
export interface TableContract {
  readonly version: 1
  readonly key: readonly string[]
  readonly mode: TableSpec['mode']
  readonly validFrom: TableSpec['validFrom']['kind']
  /** The system-time column names of a bitemporal table, or null. */
  readonly systemTime: { readonly systemFrom: string; readonly systemTo: string } | null
  /** How versions are stored: the metadata column names and conventions (presets set them). */
  readonly storage: {
    readonly columns: Readonly<Record<string, string>>
    readonly endStyle: string
    readonly openEnd: string | null
    readonly dbtIds: { readonly scdId: string; readonly updatedAt: string } | null
  }
  /** The tracked (type 2) columns, as resolved against the source's columns; sorted. */
  readonly tracked: readonly string[]
  /** The config's `tracked` option (the resolved set also moves with the source's columns). */
  readonly trackedConfig: TrackedSpec
  readonly keepFirst: readonly string[]
  readonly previousValue: readonly string[]
  readonly currentValue: readonly string[]
  readonly extract: { readonly mode: 'full' | 'incremental'; readonly cursor: string | null }
  /**
   * `change_detection` (absent in contracts recorded before it existed: the row hash). Safe to change: it decides
   * only how later rows are compared with the versions, which it leaves as they are.
   */
  readonly changeDetection?: { readonly versionColumn: string; readonly onSameVersion: string } | null
}

/** The parts of a contract the config alone decides (no source columns needed): all the unsafe ones. */
export type ConfigContract = Pick<TableContract, 'key' | 'mode' | 'validFrom' | 'systemTime' | 'storage'>

export function configContract(table: TableSpec): ConfigContract {
  const columns: Record<string, string> = {}
  for (const k of METADATA_COLUMN_KEYS) columns[METADATA_COLUMN_OPTIONS[k]] = table.columns[k]
  return {
    key: [...table.key],
    mode: table.mode,
    validFrom: table.validFrom.kind,
    systemTime:
      table.systemTime === undefined
        ? null
        : { systemFrom: table.systemTime.systemFrom, systemTo: table.systemTime.systemTo },
    storage: {
      columns,
      endStyle: table.endStyle ?? 'exclusive',
      openEnd: table.openEnd,
      dbtIds:
        table.dbtIds === undefined ? null : { scdId: table.dbtIds.scdId, updatedAt: table.dbtIds.updatedAt },
    },
  }
}

export function tableContract(table: TableSpec, layout: DimensionLayout): TableContract {
  const sorted = (names: readonly string[]) => [...names].sort()
  return {
    version: 1,
    ...configContract(table),
    tracked: sorted(layout.tracked.map((c) => c.name)),
    trackedConfig:
      table.tracked.kind === 'list'
        ? { kind: 'list', columns: sorted(table.tracked.columns) }
        : { kind: 'all_except', columns: sorted(table.tracked.columns) },
    keepFirst: sorted(table.policies?.keepFirst ?? []),
    previousValue: sorted(table.policies?.previousValue ?? []),
    currentValue: sorted(table.policies?.currentValue ?? []),
    extract:
      table.extract.mode === 'incremental'
        ? { mode: 'incremental', cursor: table.extract.cursor }
        : { mode: 'full', cursor: null },
    changeDetection: table.changeDetection === undefined ? null : { ...table.changeDetection },
  }
}

/** The text recorded in the ledger: canonical JSON, so equal contracts record equal texts. */
export function contractText(contract: TableContract): string {
  return canonicalJson(contract)
}

/**
 * A recorded contract read back. A text this version cannot read (a newer dimsync wrote it) stops the merge: it
 * could not tell what changed.
 */
export function parseContract(table: TableSpec, text: string, batchId: string): TableContract {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  const c = parsed as Partial<TableContract> | undefined
  if (c?.version !== 1 || !Array.isArray(c.key) || !Array.isArray(c.tracked) || c.storage === undefined)
    throw new ContractChangedError(
      table.name,
      `table ${table.name}: the contract recorded with ${table.target} by batch ${batchId} is not one this ` +
        'version of dimsync reads (was the dimension written by a newer one?); nothing was written',
    )
  return c as TableContract
}

export type ContractPart =
  | 'key'
  | 'mode'
  | 'valid_from'
  | 'system_time'
  | 'columns'
  | 'tracked'
  | 'keep_first'
  | 'previous_value'
  | 'current_value'
  | 'extract'
  | 'change_detection'

/** One difference between the recorded contract and the config now. */
export interface ContractChange {
  readonly part: ContractPart
  readonly from: string
  readonly to: string
  /** Refused: rows already written would be misread. */
  readonly unsafe: boolean
}

/** `tracked columns [name] → [name, price]`. */
export function describeChange(change: ContractChange): string {
  const what: Record<ContractPart, string> = {
    key: 'key',
    mode: 'mode',
    valid_from: 'valid_from',
    system_time: 'system_time',
    columns: 'metadata columns',
    tracked: 'tracked columns',
    keep_first: 'keep_first',
    previous_value: 'previous_value',
    current_value: 'current_value',
    extract: 'extract',
    change_detection: 'change_detection',
  }
  return `${what[change.part]} ${change.from} → ${change.to}`
}

/** The unsafe differences of the config-only parts (before a source is read). */
export function configContractChanges(recorded: ConfigContract, now: ConfigContract): ContractChange[] {
  const changes: ContractChange[] = []
  const unsafe = (part: ContractPart, from: string, to: string) => {
    if (from !== to) changes.push({ part, from, to, unsafe: true })
  }
  const list = (names: readonly string[]) => `(${names.join(', ')})`
  unsafe('key', list(recorded.key), list(now.key))
  unsafe('mode', recorded.mode, now.mode)
  const validFrom = (kind: string) => (kind === 'column' ? 'a source column' : kind)
  unsafe('valid_from', validFrom(recorded.validFrom), validFrom(now.validFrom))
  const systemTime = (s: ConfigContract['systemTime']) =>
    s === null ? 'off' : `on (${s.systemFrom}, ${s.systemTo})`
  unsafe('system_time', systemTime(recorded.systemTime), systemTime(now.systemTime))
  const storage = storageDifferences(recorded.storage, now.storage)
  if (storage.length > 0)
    changes.push({
      part: 'columns',
      from: storage.map((s) => `${s.name} ${s.from}`).join(', '),
      to: storage.map((s) => `${s.name} ${s.to}`).join(', '),
      unsafe: true,
    })
  return changes
}

/** Every difference between the recorded contract and the one a merge would record now. */
export function contractChanges(recorded: TableContract, now: TableContract): ContractChange[] {
  const changes = configContractChanges(recorded, now)
  const safe = (part: ContractPart, from: string, to: string) => {
    if (from !== to) changes.push({ part, from, to, unsafe: false })
  }
  const set = (names: readonly string[] | undefined) => `[${(names ?? []).join(', ')}]`
  safe('tracked', set(recorded.tracked), set(now.tracked))
  safe('keep_first', set(recorded.keepFirst), set(now.keepFirst))
  safe('previous_value', set(recorded.previousValue), set(now.previousValue))
  safe('current_value', set(recorded.currentValue), set(now.currentValue))
  const extract = (e: TableContract['extract'] | undefined) =>
    e === undefined ? 'unknown' : e.mode === 'incremental' ? `incremental (cursor ${e.cursor})` : e.mode
  safe('extract', extract(recorded.extract), extract(now.extract))
  const detection = (c: TableContract['changeDetection']) =>
    c === undefined || c === null
      ? 'row hash'
      : `version_column ${c.versionColumn} (on_same_version ${c.onSameVersion})`
  safe('change_detection', detection(recorded.changeDetection), detection(now.changeDetection))
  return changes
}

/**
 * Whether the config (not only the source's columns) changed what is tracked: the tracked option, keep_first,
 * or the extract (an incremental extract's cursor is never tracked).
 */
export function trackedConfigChanged(recorded: TableContract, now: TableContract): boolean {
  const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null)
  return (
    !same(recorded.trackedConfig, now.trackedConfig) ||
    !same(recorded.keepFirst, now.keepFirst) ||
    !same(recorded.extract, now.extract)
  )
}

/**
 * The error of an unsafe change: names it, says nothing was written, and the ways out (put the config back, or
 * start the history over in a new target).
 */
export function unsafeChangeError(
  table: TableSpec,
  changes: readonly ContractChange[],
  recordedBy: string,
): ContractChangedError {
  const unsafe = changes.filter((c) => c.unsafe)
  const back = unsafe.map((c) => `${c.part === 'columns' ? 'columns' : c.part} back to ${c.from}`).join(', ')
  return new ContractChangedError(
    table.name,
    `table ${table.name}: ${unsafe.map(describeChange).join('; ')} since ${table.target} was built ` +
      `(recorded by batch ${recordedBy}); the versions already written cannot be read that way, so nothing was ` +
      `written. Put ${back} in the config, or load table ${table.name} into a new target ` +
      `(target: ${table.target}_v2) to start its history over`,
  )
}

interface StorageDifference {
  readonly name: string
  readonly from: string
  readonly to: string
}

function storageDifferences(a: ConfigContract['storage'], b: ConfigContract['storage']): StorageDifference[] {
  const out: StorageDifference[] = []
  const names = new Set([...Object.keys(a.columns), ...Object.keys(b.columns)])
  for (const name of [...names].sort())
    if (a.columns[name] !== b.columns[name])
      out.push({ name, from: a.columns[name] ?? 'none', to: b.columns[name] ?? 'none' })
  if (a.endStyle !== b.endStyle) out.push({ name: 'end style', from: a.endStyle, to: b.endStyle })
  if (a.openEnd !== b.openEnd)
    out.push({ name: 'open_end', from: a.openEnd ?? 'NULL', to: b.openEnd ?? 'NULL' })
  const dbt = (ids: ConfigContract['storage']['dbtIds']) =>
    ids === null ? 'none' : `${ids.scdId}, ${ids.updatedAt}`
  if (dbt(a.dbtIds) !== dbt(b.dbtIds)) out.push({ name: 'dbt ids', from: dbt(a.dbtIds), to: dbt(b.dbtIds) })
  return out
}
