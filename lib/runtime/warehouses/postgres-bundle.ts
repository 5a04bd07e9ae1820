/** PostgreSQL: a server the CLI reaches with the URL in the environment variable the config names. */
import type { PostgresWarehouseSpec } from '../../core/table-spec.ts'
import { PARQUET_READ_BY_DUCKDB } from '../../core/staged-parquet.ts'
import type { WarehouseBundle } from '../warehouse-bundle.ts'

export const postgresBundle: WarehouseBundle<PostgresWarehouseSpec> = {
  type: 'postgres',
  // The embedded DuckDB reads the parts and streams them into PostgreSQL.
  stagedParquetVersion: PARQUET_READ_BY_DUCKDB,
  async checks() {
    const { postgresChecks } = await import('../../sql/postgres/postgres-types.ts')
    return postgresChecks
  },
  async openLocal(spec, opening) {
    // The URL (with its credentials) comes from the environment variable the config names, never the file.
    const { PostgresWarehouse, postgresUrlFromEnvironment } =
      await import('../../adapters/warehouse/postgres-warehouse.ts')
    return await PostgresWarehouse.open({
      url: postgresUrlFromEnvironment(spec.urlEnv),
      writeWait: { ms: opening.waitMs, setting: opening.waitSetting },
    })
  },
  sharedAcrossTables: false,
  deployProblem: () =>
    'warehouse.type: "postgres" cannot be deployed to AWS yet: the functions merge into BigQuery only; run a ' +
    'PostgreSQL warehouse with dimsync run (the CLI), or set warehouse: { type: bigquery, ... }',
}
