import { makeSecretsManagerClient } from '../adapters/aws/aws-clients.ts'
import { secretsManagerGetter } from '../adapters/aws/source-secrets.ts'
import { LocalStagingStore } from '../adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../adapters/state/local-state-store.ts'
import { openBigQueryWarehouse } from '../adapters/warehouse/bigquery-credentials.ts'
import type { BigQueryWarehouseOptions } from '../adapters/warehouse/bigquery-warehouse.ts'
import { DuckDbWarehouse } from '../adapters/warehouse/duckdb-warehouse.ts'
import { assertTableMatchesSource } from '../config/index.ts'
import type { ProjectSpec } from '../core/table-spec.ts'
import { openSource } from './open-source.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { RunEvent } from '../use-cases/run-event.ts'
import type { PipelineDeps } from '../use-cases/run-table.ts'
import { openStoreOverrides, type StoreOverrides } from './aws-deps.ts'

export interface LocalDeps extends PipelineDeps {
  readonly warehouse: Warehouse
  close(): Promise<void>
}

export interface LocalDepsOptions {
  /** BigQuery client settings (an API endpoint and auth client in tests; nothing in normal use). */
  readonly bigQuery?: Partial<BigQueryWarehouseOptions>
}

/**
 * Composition root of the CLI: local folders for staging and state, DuckDB as the warehouse by default. `stores`
 * (CLI `--staging s3://... --state dynamodb://...`) swaps in S3 and DynamoDB: the same code path as the Lambdas;
 * a `warehouse: { type: bigquery }` config loads into BigQuery with Application Default Credentials.
 */
export async function buildLocalDeps(
  project: ProjectSpec,
  onEvent?: (event: RunEvent) => void,
  stores: StoreOverrides = {},
  options: LocalDepsOptions = {},
): Promise<LocalDeps> {
  // ---- store overrides (AWS runtime) ----
  const overridden = openStoreOverrides(stores)
  // ---- end store overrides ----
  const warehouse = await openLocalWarehouse(project, options)
  return {
    staging: overridden.staging ?? new LocalStagingStore({ root: project.staging.path }),
    state: overridden.state ?? new LocalStateStore({ root: project.state.path }),
    warehouse,
    openWarehouse: async () => warehouse,
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

async function openLocalWarehouse(project: ProjectSpec, options: LocalDepsOptions): Promise<Warehouse> {
  if (project.warehouse.type === 'bigquery') {
    // From a laptop the key comes from Application Default Credentials; a Secrets Manager secret is read with the
    // AWS credential chain, as on Lambda.
    return await openBigQueryWarehouse(project.warehouse, {
      getSecret: secretsManagerGetter(makeSecretsManagerClient({})),
      extra: options.bigQuery,
    })
  }
  return await DuckDbWarehouse.open({
    path: project.warehouse.path,
    memoryLimit: process.env.DIMSYNC_DUCKDB_MEMORY_LIMIT ?? '128MB',
  })
}
