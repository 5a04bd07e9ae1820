import { notFound } from './api-errors.ts'
import type { FieldSchema } from './field-types.ts'
import { unexpiredRows } from './partition-expiration.ts'
import type { Value } from './values.ts'
import type { Proto } from './zetasql-service.ts'

export interface TableRef {
  readonly projectId: string
  readonly datasetId: string
  readonly tableId: string
}

/** A column: its REST field (name, type, mode, description, parameters) and its ZetaSQL type. */
export interface Column {
  readonly field: FieldSchema
  readonly type: Proto
}

/** A row: an id the emulator gives it (the key DML results are matched on) and its cells, one per column. */
export interface Row {
  readonly id: number
  readonly cells: readonly Value[]
}

/** What BigQuery keeps about a table besides its rows; DDL and the REST API both write it. */
export interface TableMetadata {
  readonly description?: string
  readonly friendlyName?: string
  readonly labels?: Readonly<Record<string, string>>
  /** Milliseconds since the epoch after which the table no longer exists. */
  readonly expirationMs?: number
  readonly timePartitioning?: {
    readonly type: string
    readonly field?: string
    readonly expirationMs?: string
  }
  readonly rangePartitioning?: {
    readonly field: string
    readonly range: { readonly start: string; readonly end: string; readonly interval: string }
  }
  readonly requirePartitionFilter?: boolean
  readonly clustering?: { readonly fields: readonly string[] }
  readonly primaryKey?: readonly string[]
  /** Every DDL option as written (`partition_expiration_days`, `max_staleness`, ...), by name. */
  readonly ddlOptions?: Readonly<Record<string, unknown>>
}

export interface StoredTable {
  readonly ref: TableRef
  readonly type: 'TABLE' | 'VIEW'
  readonly columns: readonly Column[]
  readonly rows: readonly Row[]
  readonly metadata: TableMetadata
  /** Views: the body, evaluated each time a statement reads the view. */
  readonly viewQuery?: string
  readonly creationMs: number
  readonly lastModifiedMs: number
}

/** A table function (`CREATE TABLE FUNCTION`): a routine whose body is evaluated with the call's arguments. */
export interface StoredRoutine {
  readonly ref: { readonly projectId: string; readonly datasetId: string; readonly routineId: string }
  readonly arguments: readonly { readonly name: string; readonly type: Proto }[]
  readonly body: string
  readonly returnColumns: readonly Column[]
  readonly creationMs: number
}

export interface Dataset {
  readonly projectId: string
  readonly datasetId: string
  readonly location: string
  readonly description?: string
  readonly labels?: Readonly<Record<string, string>>
  readonly defaultTableExpirationMs?: number
  /** Copied to each time-partitioned table created in the dataset that sets no partition expiration itself. */
  readonly defaultPartitionExpirationMs?: number
  readonly creationMs: number
}

export const tableKey = (ref: TableRef) => `${ref.projectId}.${ref.datasetId}.${ref.tableId}`
export const tableName = (ref: TableRef) => `${ref.projectId}:${ref.datasetId}.${ref.tableId}`
const datasetKey = (projectId: string, datasetId: string) => `${projectId}.${datasetId}`

/**
 * Datasets, tables, views and table functions of the emulator. Tables are immutable values: a change puts a new
 * version (so a transaction can keep the version it started from). A table past its expiration time is gone,
 * as in BigQuery, and so are the partitions of a table past their partition expiration: the clock is injectable
 * so a test can let a table or a partition expire.
 */
export class TableStore {
  readonly #datasets = new Map<string, Dataset>()
  readonly #tables = new Map<string, StoredTable>()
  readonly #routines = new Map<string, StoredRoutine>()
  readonly #clock: () => number
  #nextRowId = 1

  constructor(clock: () => number = Date.now) {
    this.#clock = clock
  }

  now(): number {
    return this.#clock()
  }

  /** A copy to try things on (a dry run applies a script's DDL to one): tables are shared, being immutable. */
  clone(): TableStore {
    const copy = new TableStore(this.#clock)
    for (const [key, value] of this.#datasets) copy.#datasets.set(key, value)
    for (const [key, value] of this.#tables) copy.#tables.set(key, value)
    for (const [key, value] of this.#routines) copy.#routines.set(key, value)
    copy.#nextRowId = this.#nextRowId
    return copy
  }

  nextRowId(): number {
    return this.#nextRowId++
  }

  // ---- datasets ----

  putDataset(dataset: Dataset): void {
    this.#datasets.set(datasetKey(dataset.projectId, dataset.datasetId), dataset)
  }

  getDataset(projectId: string, datasetId: string): Dataset | undefined {
    return this.#datasets.get(datasetKey(projectId, datasetId))
  }

  /** The dataset, or BigQuery's notFound error. */
  requireDataset(projectId: string, datasetId: string): Dataset {
    const dataset = this.getDataset(projectId, datasetId)
    if (dataset === undefined) throw notFound(`Not found: Dataset ${projectId}:${datasetId}`)
    return dataset
  }

  listDatasets(projectId: string): Dataset[] {
    return [...this.#datasets.values()].filter((d) => d.projectId === projectId)
  }

  deleteDataset(projectId: string, datasetId: string): void {
    this.#datasets.delete(datasetKey(projectId, datasetId))
    const prefix = `${datasetKey(projectId, datasetId)}.`
    for (const key of [...this.#tables.keys()]) if (key.startsWith(prefix)) this.#tables.delete(key)
    for (const key of [...this.#routines.keys()]) if (key.startsWith(prefix)) this.#routines.delete(key)
  }

  // ---- tables and views ----

  getTable(ref: TableRef): StoredTable | undefined {
    const key = tableKey(ref)
    const table = this.#tables.get(key)
    if (table?.metadata.expirationMs !== undefined && table.metadata.expirationMs <= this.#clock()) {
      this.#tables.delete(key)
      return undefined
    }
    if (table === undefined) return undefined
    const rows = unexpiredRows(table, this.#clock())
    if (rows.length === table.rows.length) return table
    const kept = { ...table, rows }
    this.#tables.set(key, kept)
    return kept
  }

  putTable(table: StoredTable): void {
    this.#tables.set(tableKey(table.ref), table)
  }

  deleteTable(ref: TableRef): boolean {
    const existed = this.getTable(ref) !== undefined
    this.#tables.delete(tableKey(ref))
    return existed
  }

  /** Puts back a version kept earlier (a rolled back transaction), or removes the table when there was none. */
  restoreTable(key: string, version: StoredTable | undefined): void {
    if (version === undefined) this.#tables.delete(key)
    else this.#tables.set(key, version)
  }

  listTables(projectId: string, datasetId: string): StoredTable[] {
    const prefix = `${datasetKey(projectId, datasetId)}.`
    return [...this.#tables.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .map(([, table]) => this.getTable(table.ref))
      .filter((t): t is StoredTable => t !== undefined)
  }

  // ---- table functions ----

  getRoutine(projectId: string, datasetId: string, routineId: string): StoredRoutine | undefined {
    return this.#routines.get(`${datasetKey(projectId, datasetId)}.${routineId}`)
  }

  putRoutine(routine: StoredRoutine): void {
    const { projectId, datasetId, routineId } = routine.ref
    this.#routines.set(`${datasetKey(projectId, datasetId)}.${routineId}`, routine)
  }

  deleteRoutine(projectId: string, datasetId: string, routineId: string): boolean {
    return this.#routines.delete(`${datasetKey(projectId, datasetId)}.${routineId}`)
  }
}
