import { randomBytes } from 'node:crypto'
import { PostgresWarehouse } from '../../lib/adapters/warehouse/postgres-warehouse.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { Warehouse } from '../../lib/ports/warehouse.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import {
  holdingsOf,
  mergeOutcome,
  type MergeOutcome,
  type MergeTally,
  type StagedBatch,
  type TextRows,
} from './both-warehouses.ts'
import { checkGuards } from './guard-check.ts'
import { TestBatches, type Value } from './staged-batches.ts'
import { PG_URL, dropPostgresSchemas } from '../integration/sources/support/db-services.ts'
import { openSmallWarehouse } from './small-warehouse.ts'

export interface OnDuckDbAndPostgres<T> {
  readonly duckdb: T
  readonly postgres: T
}

/**
 * The same staged batches merged into real DuckDB and real PostgreSQL (each dimension in a schema of its own,
 * dropped after), so a test can require both to report the same outcome and hold the same rows.
 */
export class DuckDbAndPostgres {
  readonly other = 'postgres'
  readonly otherName = 'PostgreSQL'
  readonly tally: OnDuckDbAndPostgres<MergeTally> = {
    duckdb: { calls: 0, ms: 0, merged: 0, statements: 0 },
    postgres: { calls: 0, ms: 0, merged: 0, statements: 0 },
  }

  private constructor(readonly batches: TestBatches) {}

  static async start(): Promise<DuckDbAndPostgres> {
    return new DuckDbAndPostgres(await TestBatches.create())
  }

  async stop(): Promise<void> {
    await this.batches.dispose()
  }

  async open(
    table: TableSpec,
    columns: readonly StagedColumn[],
    numbering: { readonly rowsPerKeyBucket?: number } = {},
  ): Promise<PostgresPairedDimension> {
    const schema = `dimsync_test_${randomBytes(6).toString('hex')}`
    const duckdb = checkGuards(await openSmallWarehouse())
    const postgres = await PostgresWarehouse.open({ url: PG_URL })
    await postgres.createSchemaIfMissing(schema)
    return new PostgresPairedDimension(table, columns, this, { duckdb, postgres }, schema, numbering)
  }

  /** Runs `body` on a fresh dimension of `table` (see `open`) and closes it after, whatever happens. */
  async withDimension(
    table: TableSpec,
    columns: readonly StagedColumn[],
    body: (dimension: PostgresPairedDimension) => Promise<void>,
  ): Promise<void> {
    const dimension = await this.open(table, columns)
    try {
      await body(dimension)
    } finally {
      await dimension.close()
    }
  }
}

/** One dimension kept on DuckDB and PostgreSQL; every batch is staged once and merged into both. */
export class PostgresPairedDimension {
  #clock = Date.parse('2030-01-01T00:00:00Z')

  constructor(
    readonly table: TableSpec,
    readonly columns: readonly StagedColumn[],
    readonly pair: DuckDbAndPostgres,
    readonly warehouses: OnDuckDbAndPostgres<Warehouse<SqlDialect>>,
    readonly postgresSchema: string,
    readonly numbering: { readonly rowsPerKeyBucket?: number } = {},
  ) {}

  schemaOf(side: keyof OnDuckDbAndPostgres<unknown>): string {
    return side === 'duckdb' ? 'main' : this.postgresSchema
  }

  async stage(
    rows: readonly Record<string, Value>[],
    options: { extractedAt: string; mode?: 'full' | 'incremental'; columns?: readonly StagedColumn[] },
  ): Promise<string> {
    return this.pair.batches.stage(this.table.name, options.columns ?? this.columns, rows, {
      extractedAt: options.extractedAt,
      mode: options.mode ?? this.table.extract.mode,
    })
  }

  /** Merges a staged batch into DuckDB and into PostgreSQL at once (they share nothing), with the same clock. */
  async merge(
    batchId: string,
    options: { allowMassDelete?: boolean } = {},
  ): Promise<OnDuckDbAndPostgres<MergeOutcome>> {
    this.#clock += 1000
    const now = new Date(this.#clock)
    const mergeOn = (side: keyof OnDuckDbAndPostgres<unknown>) =>
      mergeOutcome(this.warehouses[side], this.pair.batches, this.pair.tally[side], {
        table: this.table,
        schema: this.schemaOf(side),
        batchId,
        now,
        ...this.numbering,
        ...options,
      })
    const [duckdb, postgres] = await Promise.all([mergeOn('duckdb'), mergeOn('postgres')])
    return { duckdb, postgres }
  }

  async load(
    rows: readonly Record<string, Value>[],
    options: StagedBatch & { columns?: readonly StagedColumn[]; allowMassDelete?: boolean },
  ): Promise<OnDuckDbAndPostgres<MergeOutcome>> {
    return this.merge(await this.stage(rows, options), options)
  }

  /** What each warehouse holds (see holdingsOf), every typed value as its canonical text. */
  async holdings(asOf: readonly string[] = []): Promise<OnDuckDbAndPostgres<Record<string, TextRows>>> {
    const on = (side: keyof OnDuckDbAndPostgres<unknown>) =>
      holdingsOf(this.warehouses[side], this.table, this.schemaOf(side), asOf, true)
    const [duckdb, postgres] = await Promise.all([on('duckdb'), on('postgres')])
    return { duckdb, postgres }
  }

  async close(): Promise<void> {
    await this.warehouses.postgres.close()
    await this.warehouses.duckdb.close()
    await dropPostgresSchemas(this.postgresSchema)
  }
}
