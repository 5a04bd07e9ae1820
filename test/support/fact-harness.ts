import { BigQueryWarehouse } from '../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { openMemoryWarehouse } from '../../lib/adapters/warehouse/duckdb-memory-warehouse.ts'
import { PostgresWarehouse } from '../../lib/adapters/warehouse/postgres-warehouse.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { FactSpec } from '../../lib/core/fact-spec.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { Row, Warehouse } from '../../lib/ports/warehouse.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { loadFactBatch, type LoadFactBatchResult } from '../../lib/use-cases/load-fact-batch.ts'
import { mergeBatch, type MergeBatchResult } from '../../lib/use-cases/merge-batch.ts'
import { BigQueryEmulator } from './bigquery-emulator/bigquery-emulator.ts'
import type { ZetaSqlService } from './bigquery-emulator/zetasql-service.ts'
import { TestBatches, type Value } from './staged-batches.ts'
import { PG_URL, dropPostgresSchemas } from '../integration/sources/support/db-services.ts'
import { randomBytes } from 'node:crypto'

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'

/**
 * One warehouse (real DuckDB in memory, or the BigQuery emulator) with staged Parquet batches: merge dimension
 * batches, load fact batches, read tables back. `t(name)` is a table's quoted name in the warehouse's dialect.
 */
export class FactHarness {
  #clock = Date.parse('2030-01-01T00:00:00Z')

  private constructor(
    readonly warehouse: Warehouse<SqlDialect>,
    readonly schema: string,
    readonly batches: TestBatches,
    readonly dimensions: TableSpec[],
    /** Stops what the harness started besides the warehouse (the emulator, a PostgreSQL schema). */
    private readonly stopOwn?: () => Promise<void>,
  ) {}

  static async duckdb(dimensions: TableSpec[]): Promise<FactHarness> {
    const warehouse = await openMemoryWarehouse()
    return new FactHarness(warehouse, 'main', await TestBatches.create(), dimensions)
  }

  /** Real PostgreSQL (DIMSYNC_TEST_PG_URL), in a schema of its own dropped by `dispose`. */
  static async postgres(dimensions: TableSpec[]): Promise<FactHarness> {
    const schema = `dimsync_facts_${randomBytes(6).toString('hex')}`
    const warehouse = await PostgresWarehouse.open({ url: PG_URL })
    await warehouse.createSchemaIfMissing(schema)
    const dropSchema = () => dropPostgresSchemas(schema)
    return new FactHarness(warehouse, schema, await TestBatches.create(), dimensions, dropSchema)
  }

  static async bigquery(zetaSql: ZetaSqlService, dimensions: TableSpec[]): Promise<FactHarness> {
    const emulator = await BigQueryEmulator.start({ zetaSql })
    emulator.createDataset(PROJECT, DATASET, { location: 'EU' })
    const warehouse = new BigQueryWarehouse({
      project: PROJECT,
      location: 'EU',
      ...emulator.clientOptions(),
      pollIntervalMs: 5,
    })
    return new FactHarness(warehouse, DATASET, await TestBatches.create(), dimensions, () => emulator.stop())
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
