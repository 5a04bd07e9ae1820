import { LocalStagingStore } from '../adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../adapters/state/local-state-store.ts'
import { DuckDbWarehouse } from '../adapters/warehouse/duckdb-warehouse.ts'
import { assertTableMatchesSource } from '../config/index.ts'
import { DimsyncError } from '../core/errors.ts'
import type { ProjectSpec } from '../core/table-spec.ts'
import { openSource } from './open-source.ts'
import type { PipelineDeps, RunEvent } from '../use-cases/run-table.ts'
import { openStoreOverrides, type StoreOverrides } from './aws-deps.ts'

export interface LocalDeps extends PipelineDeps {
  readonly warehouse: DuckDbWarehouse
  close(): Promise<void>
}

/**
 * Composition root of embedded mode: local folders for staging and state, DuckDB as the warehouse. `stores`
 * (CLI `--staging s3://... --state dynamodb://...`) swaps in S3 and DynamoDB: the same code path as the Lambdas.
 */
export async function buildLocalDeps(
  project: ProjectSpec,
  onEvent?: (event: RunEvent) => void,
  stores: StoreOverrides = {},
): Promise<LocalDeps> {
  // ---- store overrides (AWS runtime) ----
  const overridden = openStoreOverrides(stores)
  // ---- end store overrides ----
  // ---- BigQuery warehouse (BigQuery issue): embedded mode runs on DuckDB only ----
  if (project.warehouse.type !== 'duckdb')
    throw new DimsyncError(
      `${project.configPath}: warehouse type ${project.warehouse.type} is used by the AWS deployment; ` +
        'embedded mode needs warehouse type duckdb (dimsync plan --dialect bigquery --sql renders the BigQuery SQL offline)',
    )
  // ---- end BigQuery warehouse ----
  const warehouse = await DuckDbWarehouse.open({
    path: project.warehouse.path,
    memoryLimit: process.env.DIMSYNC_DUCKDB_MEMORY_LIMIT ?? '128MB',
  })
  return {
    staging: overridden.staging ?? new LocalStagingStore({ root: project.staging.path }),
    state: overridden.state ?? new LocalStateStore({ root: project.state.path }),
    warehouse,
    schema: project.warehouse.schema,
    openSource: (table) => openSource(table, { baseDir: project.baseDir, env: process.env }),
    clock: () => new Date(),
    onEvent,
    checkSourceColumns: (table, columns) =>
      assertTableMatchesSource(
        project,
        project.tables.findIndex((t) => t.name === table.name),
        columns,
      ),
    close: async () => {
      await warehouse.close()
      await overridden.close()
    },
  }
}
