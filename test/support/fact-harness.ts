import { BigQueryWarehouse } from '../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { PostgresWarehouse } from '../../lib/adapters/warehouse/postgres-warehouse.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { BigQueryEmulator } from './bigquery-emulator/bigquery-emulator.ts'
import type { ZetaSqlService } from './bigquery-emulator/zetasql-service.ts'
import { MemoryFactHarness } from './fact-harness-memory.ts'
import { TestBatches } from './staged-batches.ts'
import { PG_URL, dropPostgresSchemas } from '../integration/sources/support/db-services.ts'
import { randomBytes } from 'node:crypto'

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'

/**
 * The fact harness (fact-harness-memory.ts) on real DuckDB in memory, real PostgreSQL or the BigQuery emulator.
 */
export class FactHarness extends MemoryFactHarness {
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
}
