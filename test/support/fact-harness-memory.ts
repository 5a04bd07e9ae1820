import type { StagedColumn } from '../../lib/core/batch.ts'
import type { FactSpec } from '../../lib/core/fact-spec.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { Row, Warehouse } from '../../lib/ports/warehouse.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { loadFactBatch, type LoadFactBatchResult } from '../../lib/use-cases/load-fact-batch.ts'
import { mergeBatch, type MergeBatchResult } from '../../lib/use-cases/merge-batch.ts'
import { MemoryBatches } from './memory-batches.ts'
import type { Value } from './parquet-rows.ts'
import type { TestBatches } from './staged-batches.ts'
import { openSmallWarehouse } from './small-warehouse.ts'

/**
 * One warehouse with staged Parquet batches: merge dimension batches, load fact batches, read tables back. `t(name)`
 * is a table's quoted name in the warehouse's dialect. `duckdb` is the in-memory ports (DuckDB at ':memory:' and
 * the in-memory staging store, the fast tier); FactHarness (fact-harness.ts) adds PostgreSQL and the BigQuery
 * emulator.
 */
export class MemoryFactHarness {
  #clock = Date.parse('2030-01-01T00:00:00Z')

  protected constructor(
    readonly warehouse: Warehouse<SqlDialect>,
    readonly schema: string,
    readonly batches: MemoryBatches | TestBatches,
    readonly dimensions: TableSpec[],
    /** Stops what the harness started besides the warehouse (the emulator, a PostgreSQL schema). */
    private readonly stopOwn?: () => Promise<void>,
  ) {}

  static async duckdb(dimensions: TableSpec[]): Promise<MemoryFactHarness> {
    return new this(await openSmallWarehouse(), 'main', await MemoryBatches.create(), dimensions)
  }

  async dispose(): Promise<void> {
    await this.warehouse.close()
    await this.stopOwn?.()
    await this.batches.dispose()
  }

  t(name: string): string {
    return this.warehouse.dialect.table({ schema: this.schema, name })
  }

  async query(sql: string): Promise<Row[]> {
    return this.warehouse.query(sql)
  }

  async mergeDimension(
    table: TableSpec,
    columns: readonly StagedColumn[],
    rows: readonly Record<string, Value>[],
    options: { extractedAt: string; mode?: 'full' | 'incremental' },
  ): Promise<MergeBatchResult> {
    const batchId = await this.batches.stage(table.name, columns, rows, {
      extractedAt: options.extractedAt,
      mode: options.mode ?? table.extract.mode,
    })
    this.#clock += 1000
    return mergeBatch(
      { warehouse: this.warehouse, staging: this.batches },
      { table, schema: this.schema, batchId, now: new Date(this.#clock), allowMassDelete: true },
    )
  }

  async stageFacts(
    fact: FactSpec,
    columns: readonly StagedColumn[],
    rows: readonly Record<string, Value>[],
    options: { extractedAt: string; mode?: 'full' | 'incremental' },
  ): Promise<string> {
    return this.batches.stage(fact.name, columns, rows, {
      extractedAt: options.extractedAt,
      mode: options.mode ?? fact.extract.mode,
    })
  }

  async loadFacts(
    fact: FactSpec,
    batchId: string,
    options: { dryRun?: boolean } = {},
  ): Promise<LoadFactBatchResult> {
    this.#clock += 1000
    return loadFactBatch(
      { warehouse: this.warehouse, staging: this.batches },
      {
        fact,
        dimensions: this.dimensions,
        schema: this.schema,
        batchId,
        now: new Date(this.#clock),
        ...options,
      },
    )
  }
}
