import { DimsyncError } from '../core/errors.ts'
import { valueText } from '../core/value-text.ts'
import type { FactSpec } from '../core/fact-spec.ts'
import {
  depthStats,
  instantMs,
  mergeDimensionDays,
  type DimensionReport,
  type FactDay,
  type FactReport,
  type FactReferenceReport,
  type KeyTimeline,
  type LedgerBatch,
  type ProjectReport,
  type TimelineVersion,
} from '../core/history-report.ts'
import { inferredColumnName } from '../core/inferred-member.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { ProjectSpec, TableSpec } from '../core/table-spec.ts'
import type { StateStore } from '../ports/state-store.ts'
import type { Row, Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { dimensionObjects } from '../sql/render-ddl.ts'
import { factObjects } from '../sql/render-fact-ddl.ts'
import {
  renderDepthQuery,
  renderFactDaysQuery,
  renderKeyVersionsQuery,
  renderLedgerDaysQuery,
  renderRecentBatchesQuery,
  renderRestoredDaysQuery,
  renderRetiredDaysQuery,
  renderSupersededDaysQuery,
  renderVersionDaysQuery,
  restoredCounting,
  type FactReferenceColumns,
} from '../sql/render-report.ts'
import { parseKey } from './read-history.ts'

export interface ReportDeps {
  readonly warehouse: Warehouse<SqlDialect>
  /** Run records; absent: the report shows none (a warehouse read on its own). */
  readonly state?: StateStore
}

export interface ReportRequest {
  readonly project: Pick<ProjectSpec, 'configPath' | 'tables' | 'facts' | 'warehouse'>
  readonly schema: string
  /** One table or fact table (absent: every one). */
  readonly only?: string
  /** A key of the table `only` names (or of the project's one table): its timeline. */
  readonly key?: string
  readonly now: Date
  /** How many run records and ledger batches each section lists (default 10). */
  readonly recent?: number
}

const DEFAULT_RECENT = 10

/**
 * Reads what `dimsync report` shows: per dimension and per fact the aggregates the warehouse computes (a few rows
 * per day or per depth, whatever the table's size), their latest ledger batches and run records, and one key's
 * timeline when asked. Reads only: nothing is created, a table not loaded yet is reported as such.
 */
export async function readReport(deps: ReportDeps, request: ReportRequest): Promise<ProjectReport> {
  const { project } = request
  const facts = project.facts ?? []
  const names = [...project.tables.map((t) => t.name), ...facts.map((f) => f.name)]
  if (request.only !== undefined && !names.includes(request.only))
    throw new DimsyncError(
      `report: ${request.only} is neither a table nor a fact table of ${project.configPath} (tables: ${names.join(', ')})`,
    )
  const selected = <T extends { readonly name: string }>(list: readonly T[]) =>
    list.filter((t) => request.only === undefined || t.name === request.only)
  const reader = new ReportReader(deps, request.schema, request.recent ?? DEFAULT_RECENT)
  const dimensions: DimensionReport[] = []
  for (const table of selected(project.tables)) dimensions.push(await reader.dimension(table))
  const factReports: FactReport[] = []
  for (const fact of selected(facts)) factReports.push(await reader.fact(fact, project.tables))
  const timeline =
    request.key === undefined
      ? undefined
      : await readKeyTimeline(deps.warehouse, {
          table: keyTable(project, request.only, facts),
          schema: request.schema,
          key: request.key,
        })
  return {
    config: project.configPath,
    warehouse: project.warehouse.type,
    generatedAt: request.now.toISOString(),
    dimensions,
    facts: factReports,
    ...(timeline === undefined ? {} : { timeline }),
  }
}

/** The table whose key `--key` names: the one `--table` names, or the project's only table. */
function keyTable(
  project: Pick<ProjectSpec, 'tables'>,
  only: string | undefined,
  facts: readonly FactSpec[],
): TableSpec {
  const tables = project.tables.map((t) => t.name).join(', ')
  if (only === undefined) {
    if (project.tables.length === 1) return project.tables[0]!
    throw new DimsyncError(`report --key: name the table the key is of with --table (tables: ${tables})`)
  }
  if (facts.some((f) => f.name === only))
    throw new DimsyncError(
      `report --key: ${only} is a fact table; a key's timeline is drawn for a dimension's table (tables: ${tables})`,
    )
  return project.tables.find((t) => t.name === only)!
}

export interface KeyTimelineRequest {
  readonly table: TableSpec
  readonly schema: string
  /** `101`, or `tenant=a,customer_id=1` for composite keys. */
  readonly key: string
}

/** Every version of one key (bitemporal tables: superseded rows too), with its attributes as text. */
export async function readKeyTimeline(
  warehouse: Warehouse<SqlDialect>,
  request: KeyTimelineRequest,
): Promise<KeyTimeline> {
  const { table } = request
  const objects = dimensionObjects(table, request.schema)
  if ((await warehouse.describeTable(objects.dimension)) === undefined)
    throw new DimsyncError(
      `table ${table.name}: dimension ${table.target} does not exist yet; run dimsync run first`,
    )
  const key = parseKey(table, request.key)
  const rows = await warehouse.query(renderKeyVersionsQuery(warehouse.dialect, table, objects.dimension, key))
  const n = table.columns
  const hidden = new Set<string>([
    ...Object.values(n),
    ...table.key,
    ...(table.systemTime ? [table.systemTime.systemFrom, table.systemTime.systemTo] : []),
    ...(table.dbtIds ? [table.dbtIds.scdId, table.dbtIds.updatedAt, table.dbtIds.isDeleted] : []),
    inferredColumnName(n),
  ])
  const attributes = rows.length === 0 ? [] : Object.keys(rows[0]!).filter((c) => !hidden.has(c))
  const text = (value: Row[string] | undefined) =>
    value === null || value === undefined ? null : valueText(value)
  const openOrText = (value: Row[string] | undefined) => {
    const t = text(value)
    return t === null || isOpenEnd(t, table.openEnd) ? undefined : t
  }
  const versions = rows.map((row): TimelineVersion => {
    const current = row[n.isCurrent] === true
    const validTo = current ? undefined : openOrText(row[n.validTo])
    const systemTime = table.systemTime
    return {
      surrogateKey: String(row[n.surrogateKey]),
      validFrom: String(row[n.validFrom]),
      ...(validTo === undefined ? {} : { validTo }),
      deleted: row[n.isDeleted] === true,
      current,
      ...(systemTime === undefined ? {} : systemTimeOf(row, systemTime, openOrText)),
      values: attributes.map((a) => text(row[a])),
    }
  })
  return {
    table: table.name,
    target: table.target,
    key: request.key,
    attributes,
    bitemporal: table.systemTime !== undefined,
    versions,
  }
}

function systemTimeOf(
  row: Row,
  columns: NonNullable<TableSpec['systemTime']>,
  openOrText: (value: Row[string] | undefined) => string | undefined,
): { systemFrom?: string; systemTo?: string } {
  const from = openOrText(row[columns.systemFrom])
  const to = openOrText(row[columns.systemTo])
  return {
    ...(from === undefined ? {} : { systemFrom: from }),
    ...(to === undefined ? {} : { systemTo: to }),
  }
}

/** A stored end that means "open": the configured sentinel instant (an open NULL never gets here). */
function isOpenEnd(text: string, openEnd: TableSpec['openEnd']): boolean {
  if (openEnd === null) return false
  return instantMs(text) === Date.parse(openEnd)
}

/** Reads the sections of one report, remembering which shared objects (the ledger) exist. */
class ReportReader {
  #ledgerExists: Promise<boolean> | undefined

  constructor(
    readonly deps: ReportDeps,
    readonly schema: string,
    readonly recent: number,
  ) {}

  get #d(): SqlDialect {
    return this.deps.warehouse.dialect
  }

  async #exists(ref: TableRef): Promise<boolean> {
    return (await this.deps.warehouse.describeTable(ref)) !== undefined
  }

  async #query(sql: string): Promise<Row[]> {
    return this.deps.warehouse.query(sql)
  }

  #ledger(ref: TableRef): Promise<boolean> {
    this.#ledgerExists ??= this.#exists(ref)
    return this.#ledgerExists
  }

  async dimension(table: TableSpec): Promise<DimensionReport> {
    const d = this.#d
    const objects = dimensionObjects(table, this.schema)
    const runs = (await this.deps.state?.listRuns(table.name, this.recent)) ?? []
    const base = {
      kind: 'dimension' as const,
      name: table.name,
      target: table.target,
      mode: table.mode,
      deletes: table.deletes,
      bitemporal: table.systemTime !== undefined,
      restoredCounting: restoredCounting(table),
      runs,
    }
    const ledger = (await this.#ledger(objects.batches)) ? objects.batches : undefined
    const recentBatches = ledger === undefined ? [] : await this.#recentBatches(ledger, table.target)
    if (!(await this.#exists(objects.dimension)))
      return {
        ...base,
        loaded: false,
        rows: 0,
        liveKeys: 0,
        depth: depthStats([]),
        days: [],
        recentBatches,
      }
    const depthRows = await this.#query(renderDepthQuery(d, table, objects.dimension))
    const depth = depthStats(depthRows.map((r) => ({ versions: num(r.versions), keys: num(r.keys_count) })))
    const liveKeys = depthRows.reduce((sum, r) => sum + num(r.live_keys), 0)
    const versionDays = (await this.#query(renderVersionDaysQuery(d, table, objects.dimension))).map((r) => ({
      day: String(r.day_text),
      opened: num(r.opened),
      closed: num(r.closed),
    }))
    const superseded =
      ledger !== undefined && table.systemTime !== undefined
        ? (await this.#query(renderSupersededDaysQuery(d, table, objects.dimension, ledger))).map((r) => ({
            day: String(r.day_text),
            corrected: num(r.corrected),
          }))
        : []
    const restored =
      base.restoredCounting === 'none'
        ? []
        : (await this.#query(renderRestoredDaysQuery(d, table, objects.dimension))).map((r) => ({
            day: String(r.day_text),
            restored: num(r.restored),
          }))
    const ledgerDays =
      ledger === undefined
        ? []
        : (await this.#query(renderLedgerDaysQuery(d, ledger, table.target))).map((r) => ({
            day: String(r.day_text),
            batches: num(r.batches),
            deletedKeys: num(r.deleted_keys),
            lateKeys: num(r.late_keys),
          }))
    // Versions a correction retired (mirror tables retire every replaced row: that is not a correction).
    const retired =
      ledger !== undefined &&
      objects.retired !== undefined &&
      table.mode === 'history' &&
      (await this.#exists(objects.retired))
        ? (await this.#query(renderRetiredDaysQuery(d, objects.retired, ledger, table.target))).map((r) => ({
            day: String(r.day_text),
            corrected: num(r.corrected),
          }))
        : []
    return {
      ...base,
      loaded: true,
      rows: depth.versions,
      liveKeys,
      depth,
      days: mergeDimensionDays(versionDays, superseded, restored, ledgerDays, retired),
      recentBatches,
    }
  }

  async fact(fact: FactSpec, tables: readonly TableSpec[]): Promise<FactReport> {
    const d = this.#d
    const objects = factObjects(fact, this.schema)
    const runs = (await this.deps.state?.listRuns(fact.name, this.recent)) ?? []
    const ledger = (await this.#ledger(objects.batches)) ? objects.batches : undefined
    const recentBatches = ledger === undefined ? [] : await this.#recentBatches(ledger, fact.target)
    const columns = await this.deps.warehouse.describeTable(objects.table)
    const referenceColumns: FactReferenceColumns[] = []
    for (const reference of fact.references) {
      const dimension = tables.find((t) => t.name === reference.dimension)!
      const dimensionRef = dimensionObjects(dimension, this.schema).dimension
      const flag = inferredColumnName(dimension.columns)
      const dimensionColumns = reference.inferred
        ? await this.deps.warehouse.describeTable(dimensionRef)
        : undefined
      referenceColumns.push({
        reference,
        dimension: dimensionRef,
        dimensionSurrogateKey: dimension.columns.surrogateKey,
        ...(dimensionColumns?.some((c) => c.name === flag) ? { inferredFlag: flag } : {}),
      })
    }
    const references = referenceColumns.map((r): FactReferenceReport => ({
      dimension: r.reference.dimension,
      surrogateKeyColumn: r.reference.surrogateKeyColumn,
      unknownMemberKey: r.reference.unknownMemberKey,
      countsInferred: r.inferredFlag !== undefined,
    }))
    const base = {
      kind: 'fact' as const,
      name: fact.name,
      target: fact.target,
      references,
      recentBatches,
      runs,
    }
    const eventTime = columns?.find((c) => c.name === fact.eventTime)
    if (columns === undefined || eventTime === undefined) return { ...base, loaded: false, days: [] }
    const rows = await this.#query(renderFactDaysQuery(d, objects.table, eventTime, referenceColumns))
    const days = rows.map((r): FactDay => ({
      day: String(r.day_text),
      rows: num(r.fact_rows),
      unknown: references.map((_, i) => num(r[`unknown_${i}`])),
      inferred: references.map((_, i) => num(r[`inferred_${i}`])),
    }))
    return { ...base, loaded: true, days }
  }

  async #recentBatches(ledger: TableRef, target: string): Promise<LedgerBatch[]> {
    const rows = await this.#query(renderRecentBatchesQuery(this.#d, ledger, target, this.recent))
    return rows.map((r) => ({
      batchId: String(r.batch_id),
      extractedAt: String(r.extracted_at),
      appliedAt: String(r.applied_at),
      mode: String(r.mode),
      events: num(r.events),
      insertedVersions: num(r.inserted_versions),
      closedVersions: num(r.closed_versions),
      deletedKeys: num(r.deleted_keys),
      unchangedEvents: num(r.unchanged_events),
      lateKeys: num(r.late_keys),
    }))
  }
}

function num(value: Row[string] | undefined): number {
  return value === null || value === undefined ? 0 : Number(value)
}
