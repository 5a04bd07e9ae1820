import { BigQueryWarehouse } from '../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { Row, Warehouse } from '../../lib/ports/warehouse.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { mergeBatch } from '../../lib/use-cases/merge-batch.ts'
import { BigQueryEmulator } from './bigquery-emulator/bigquery-emulator.ts'
import { ZetaSqlService } from './bigquery-emulator/zetasql-service.ts'
import { TestBatches, type Value } from './staged-batches.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'

export interface StagedBatch {
  readonly rows: readonly Record<string, Value>[]
  readonly extractedAt: string
  readonly mode?: 'full' | 'incremental'
}

/**
 * Runs the same staged batches through the same merge on real DuckDB and on the BigQuery emulator (the real
 * client, every statement run by ZetaSQL's reference implementation) and reads what each warehouse holds with
 * `read` (rendered per dialect), so a test can require both to hold the same rows.
 */
export class BothWarehouses {
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

  async run(
    table: TableSpec,
    columns: readonly StagedColumn[],
    batches: readonly StagedBatch[],
    read: (d: SqlDialect, schema: string) => string,
  ): Promise<{ readonly duckdb: Row[]; readonly bigquery: Row[] }> {
    const ids: string[] = []
    for (const b of batches)
      ids.push(
        await this.batches.stage(table.name, columns, b.rows, {
          extractedAt: b.extractedAt,
          mode: b.mode ?? table.extract.mode,
        }),
      )
    const duck = await DuckDbWarehouse.open({ path: ':memory:' })
    const emulator = await BigQueryEmulator.start({ zetaSql: this.zeta })
    emulator.createDataset(PROJECT, DATASET, { location: 'EU' })
    const bigquery = new BigQueryWarehouse({
      project: PROJECT,
      location: 'EU',
      ...emulator.clientOptions(),
      pollIntervalMs: 5,
    })
    try {
      const mergeAll = async (warehouse: Warehouse<SqlDialect>, schema: string) => {
        let clock = Date.parse('2030-01-01T00:00:00Z')
        for (const batchId of ids) {
          clock += 1000
          await mergeBatch(
            { warehouse, staging: this.batches },
            { table, schema, batchId, now: new Date(clock), allowMassDelete: true },
          )
        }
        return warehouse.query(read(warehouse.dialect, schema))
      }
      return { duckdb: await mergeAll(duck, 'main'), bigquery: await mergeAll(bigquery, DATASET) }
    } finally {
      await bigquery.close()
      await emulator.stop()
      await duck.close()
    }
  }
}
