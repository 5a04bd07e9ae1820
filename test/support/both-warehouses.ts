import { readdir, readFile } from 'node:fs/promises'
import { BigQueryWarehouse } from '../../lib/adapters/warehouse/bigquery-warehouse.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { MergeCounts } from '../../lib/core/run-record.ts'
import type { TableRef } from '../../lib/core/table-ref.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { StagingStore } from '../../lib/ports/staging-store.ts'
import type { Row, Warehouse } from '../../lib/ports/warehouse.ts'
import { arrayElementType } from '../../lib/sql/bigquery/bigquery-types.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { dimensionObjects } from '../../lib/sql/render-ddl.ts'
import { mergeBatch, type KeyChanges } from '../../lib/use-cases/merge-batch.ts'
import { BigQueryEmulator } from './bigquery-emulator/bigquery-emulator.ts'
import { ZetaSqlService } from './bigquery-emulator/zetasql-service.ts'
import { checkGuards } from './guard-check.ts'
import { TestBatches, type Value } from './staged-batches.ts'
import { openSmallWarehouse } from './small-warehouse.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
/** Linux's USER_HZ, the unit of /proc/<pid>/stat times. */
const CLOCK_TICKS_PER_SECOND = 100
const DATASET = 'history'

export interface StagedBatch {
  readonly rows: readonly Record<string, Value>[]
  readonly extractedAt: string
  readonly mode?: 'full' | 'incremental'
}

/** What one merge did, in terms both warehouses must agree on: its report, or the error it was refused with. */
export type MergeOutcome =
  | {
      readonly status: 'merged' | 'already-applied' | 'dry-run'
      readonly counts?: MergeCounts
      readonly keys?: KeyChanges
    }
  | { readonly error: string; readonly message: string }

export interface Paired<T> {
  readonly duckdb: T
  readonly bigquery: T
}

/** Rows with every value as text (`castToString` of each dialect), sorted, so two warehouses compare equal. */
export type TextRows = Record<string, string | null>[]

/** Time and statements of the merges run on one warehouse, for the report of how long the emulated part takes. */
export interface MergeTally {
  /** mergeBatch calls (refused ones included) and their wall-clock time. */
  calls: number
  ms: number
  /** Merges that wrote, and the statements of their scripts. */
  merged: number
  statements: number
}

/**
 * Runs the same staged batches through the same merge on real DuckDB and on the BigQuery emulator (the real
 * client, every statement run by ZetaSQL's reference implementation), so a test can require both warehouses to
 * report the same counts, refuse the same batches with the same message, and hold the same rows.
 */
export class BothWarehouses {
  readonly other = 'bigquery'
  readonly otherName = 'BigQuery'
  readonly tally: Paired<MergeTally> = {
    duckdb: { calls: 0, ms: 0, merged: 0, statements: 0 },
    bigquery: { calls: 0, ms: 0, merged: 0, statements: 0 },
  }

  private constructor(
    readonly zeta: ZetaSqlService,
    readonly batches: TestBatches,
  ) {}

  static async start(): Promise<BothWarehouses> {
    return new BothWarehouses(await ZetaSqlService.start(), await TestBatches.create())
  }

  async stop(): Promise<void> {
    await this.batches.dispose()
    await this.zeta.stop()
  }

  /**
   * CPU time the ZetaSQL server (the reference implementation every emulated statement runs on) has used so far,
   * in ms: unlike wall-clock time it does not grow when other work loads the machine. Undefined off Linux.
   */
  async engineCpuMs(): Promise<number | undefined> {
    try {
      let total = 0
      for (const entry of await readdir('/proc')) {
        if (!/^\d+$/.test(entry)) continue
        const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '')
        // pid (comm) state ppid … utime(14) stime(15): comm may hold spaces, so split after its ')'.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        if (Number(fields[1]) !== process.pid || !stat.includes('remote_server')) continue
        total += ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND
      }
      return total
    } catch {
      return undefined
    }
  }

  /**
   * A dimension of `table`, empty on both warehouses; close it when done. `rowsPerKeyBucket`: both warehouses
   * number new surrogate keys per bucket of that many rows (surrogate-keys.ts), as BigQuery numbers large batches.
   */
  async open(
    table: TableSpec,
    columns: readonly StagedColumn[],
    options: { readonly rowsPerKeyBucket?: number } = {},
  ): Promise<PairedDimension> {
    const duck = checkGuards(await openSmallWarehouse())
    const emulator = await BigQueryEmulator.start({ zetaSql: this.zeta })
    emulator.createDataset(PROJECT, DATASET, { location: 'EU' })
    const bigquery = new BigQueryWarehouse({
      project: PROJECT,
      location: 'EU',
      ...emulator.clientOptions(),
      pollIntervalMs: 5,
    })
    return new PairedDimension(table, columns, this, { duckdb: duck, bigquery }, emulator, options)
  }

  /** Runs `body` on a fresh dimension of `table` (see `open`) and closes it after, whatever happens. */
  async withDimension(
    table: TableSpec,
    columns: readonly StagedColumn[],
    body: (dimension: PairedDimension) => Promise<void>,
  ): Promise<void> {
    const dimension = await this.open(table, columns)
    try {
      await body(dimension)
    } finally {
      await dimension.close()
    }
  }

  /** Merges `batches` in order on both warehouses, then reads what each holds with `read`. */
  async run(
    table: TableSpec,
    columns: readonly StagedColumn[],
    batches: readonly StagedBatch[],
    read: (d: SqlDialect, schema: string) => string,
  ): Promise<Paired<Row[]>> {
    const dimension = await this.open(table, columns)
    try {
      for (const b of batches) {
        const outcome = await dimension.load(b.rows, { ...b, allowMassDelete: true })
        for (const o of [outcome.duckdb, outcome.bigquery]) if ('error' in o) throw new Error(o.message)
      }
      return await dimension.read(read)
    } finally {
      await dimension.close()
    }
  }
}

/** One dimension kept on both warehouses; every batch is staged once and merged into both. */
export class PairedDimension {
  #clock = Date.parse('2030-01-01T00:00:00Z')

  constructor(
    readonly table: TableSpec,
    readonly columns: readonly StagedColumn[],
    readonly both: BothWarehouses,
    readonly warehouses: Paired<Warehouse<SqlDialect>>,
    readonly emulator: BigQueryEmulator,
    readonly numbering: { readonly rowsPerKeyBucket?: number } = {},
  ) {}

  schemaOf(side: keyof Paired<unknown>): string {
    return side === 'duckdb' ? 'main' : DATASET
  }

  async stage(
    rows: readonly Record<string, Value>[],
    options: { extractedAt: string; mode?: 'full' | 'incremental'; columns?: readonly StagedColumn[] },
  ): Promise<string> {
    return this.both.batches.stage(this.table.name, options.columns ?? this.columns, rows, {
      extractedAt: options.extractedAt,
      mode: options.mode ?? this.table.extract.mode,
    })
  }

  /** Merges a staged batch into DuckDB and into the emulator at once (they share nothing), with the same clock. */
  async merge(batchId: string, options: { allowMassDelete?: boolean } = {}): Promise<Paired<MergeOutcome>> {
    this.#clock += 1000
    const now = new Date(this.#clock)
    const mergeOn = (side: keyof Paired<unknown>) =>
      mergeOutcome(this.warehouses[side], this.both.batches, this.both.tally[side], {
        table: this.table,
        schema: this.schemaOf(side),
        batchId,
        now,
        ...this.numbering,
        ...options,
      })
    const [duckdb, bigquery] = await Promise.all([mergeOn('duckdb'), mergeOn('bigquery')])
    return { duckdb, bigquery }
  }

  async load(
    rows: readonly Record<string, Value>[],
    options: {
      extractedAt: string
      mode?: 'full' | 'incremental'
      columns?: readonly StagedColumn[]
      allowMassDelete?: boolean
    },
  ): Promise<Paired<MergeOutcome>> {
    return this.merge(await this.stage(rows, options), options)
  }

  /** Runs a query rendered for each dialect on its warehouse. */
  async read(render: (d: SqlDialect, schema: string) => string): Promise<Paired<Row[]>> {
    const on = (side: keyof Paired<unknown>) =>
      this.warehouses[side].query(render(this.warehouses[side].dialect, this.schemaOf(side)))
    const [duckdb, bigquery] = await Promise.all([on('duckdb'), on('bigquery')])
    return { duckdb, bigquery }
  }

  /**
   * What each warehouse holds for this dimension, every value as text and the rows sorted: the dimension, its
   * current view, its as-of function at each of `asOf`, and its internal capture and retired tables.
   */
  async holdings(asOf: readonly string[] = []): Promise<Paired<Record<string, TextRows>>> {
    const on = (side: keyof Paired<unknown>) =>
      holdingsOf(this.warehouses[side], this.table, this.schemaOf(side), asOf)
    const [duckdb, bigquery] = await Promise.all([on('duckdb'), on('bigquery')])
    return { duckdb, bigquery }
  }

  async close(): Promise<void> {
    await this.warehouses.bigquery.close()
    await this.emulator.stop()
    await this.warehouses.duckdb.close()
  }
}

/** One merge on one warehouse: its report or the error it was refused with, counted in `tally`. */
export async function mergeOutcome(
  warehouse: Warehouse<SqlDialect>,
  staging: StagingStore,
  tally: MergeTally,
  request: Parameters<typeof mergeBatch>[1],
): Promise<MergeOutcome> {
  const started = performance.now()
  try {
    const result = await mergeBatch({ warehouse, staging }, request)
    if (result.status === 'merged') {
      tally.merged++
      tally.statements += result.statements.length
    }
    return {
      status: result.status,
      ...(result.counts ? { counts: result.counts } : {}),
      ...(result.keys ? { keys: result.keys } : {}),
    }
  } catch (error) {
    const e = error as Error
    return { error: e.name, message: e.message }
  } finally {
    tally.calls++
    tally.ms += performance.now() - started
  }
}

/**
 * What a warehouse holds for a dimension, every value as text and the rows sorted: the dimension, its current
 * view, its as-of function at each of `asOf`, and its internal capture, retired and key tables. `canonical`: every
 * typed value as its canonical text (the row hash's, the same in every warehouse) instead of the warehouse's cast
 * to text (BLOB and a whole DOUBLE print differently in DuckDB and PostgreSQL).
 */
export async function holdingsOf(
  warehouse: Warehouse<SqlDialect>,
  table: TableSpec,
  schema: string,
  asOf: readonly string[],
  canonical = false,
): Promise<Record<string, TextRows>> {
  const d = warehouse.dialect
  const objects = dimensionObjects(table, schema)
  const out: Record<string, TextRows> = {}
  const dimension = await warehouse.describeTable(objects.dimension)
  if (dimension === undefined) return out
  // Arrays and JSON have no CAST to text on BigQuery: their canonical text (the row hash's) instead.
  const text = (c: { readonly name: string; readonly type?: string }) =>
    c.type !== undefined &&
    (canonical || arrayElementType(c.type) !== undefined || c.type.toUpperCase() === 'JSON')
      ? d.canonicalText(d.quoteIdentifier(c.name), c.type)
      : d.castToString(d.quoteIdentifier(c.name))
  const all = async (from: string, columns: readonly { readonly name: string; readonly type?: string }[]) =>
    sortedText(
      await warehouse.query(
        `SELECT ${columns.map((c) => `${text(c)} AS ${d.quoteIdentifier(c.name)}`).join(', ')} FROM ${from}`,
      ),
    )
  const names = dimension
  out.dimension = await all(d.table(objects.dimension), names)
  out.current = await all(d.table(objects.currentView), names)
  for (const t of asOf)
    out[`as of ${t}`] = await all(`${d.table(objects.asOfFunction)}(${d.timestampLiteral(t)})`, names)
  for (const [label, ref] of [
    ['captures', objects.captures],
    ['retired', objects.retired],
    ['keys', objects.keys],
  ] as const) {
    const columns = ref === undefined ? undefined : await warehouse.describeTable(ref as TableRef)
    if (columns !== undefined) out[label] = await all(d.table(ref!), columns)
  }
  return out
}

function sortedText(rows: readonly Row[]): TextRows {
  return rows
    .map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === null ? null : String(v)])))
    .sort((a, b) =>
      JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0,
    )
}
