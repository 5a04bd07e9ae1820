import { LocalStagingStore } from '../adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../adapters/state/local-state-store.ts'
import type { BigQueryWarehouseOptions } from '../adapters/warehouse/bigquery-warehouse.ts'
import type { FileLockHolder } from '../adapters/warehouse/duckdb-file-lock.ts'
import { readInteger, readMemorySize } from '../config/env.ts'
import { assertTableMatchesSource } from '../config/index.ts'
import type { ProjectSpec } from '../core/table-spec.ts'
import type { StateStore } from '../ports/state-store.ts'
import { openSource, sourceMemoryLimit } from './open-source.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import type { RunEvent } from '../use-cases/run-event.ts'
import type { PipelineDeps } from '../use-cases/run-table.ts'
import { openStoreOverrides, type StoreOverrides } from './store-overrides.ts'
import { warehouseBundle } from './warehouse-registry.ts'
import { WAREHOUSE_MEMORY_LIMIT_VARIABLE, WAREHOUSE_WAIT_VARIABLE } from './warehouses/duckdb-bundle.ts'

export { BIGQUERY_ENDPOINT_VARIABLE } from './warehouses/bigquery-bundle.ts'
export {
  DEFAULT_WAREHOUSE_MEMORY_LIMIT,
  DEFAULT_WAREHOUSE_THREADS,
  firstLoadThreads,
  WAREHOUSE_MEMORY_LIMIT_VARIABLE,
  WAREHOUSE_THREADS_VARIABLE,
  WAREHOUSE_WAIT_VARIABLE,
  warehouseMemoryCeilingMb,
} from './warehouses/duckdb-bundle.ts'

export interface LocalDeps extends PipelineDeps {
  /**
   * The warehouse for reading (history): a DuckDB file is opened read-only, so readers share it; while a run
   * writes it, this waits. A DuckDB file that does not exist yet is not created (it holds no dimension).
   */
  openWarehouseForReading(): Promise<Warehouse<SqlDialect>>
  close(): Promise<void>
}

const DEFAULT_WAREHOUSE_WAIT_SECONDS = 60

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
  // Settings read when a source or the warehouse is opened are refused before anything runs, as a bad path is.
  readMemorySize(process.env, WAREHOUSE_MEMORY_LIMIT_VARIABLE)
  sourceMemoryLimit(process.env)
  const bundle = warehouseBundle(project.warehouse)
  await bundle.assertUsable?.(project.warehouse)
  // --staging and --state may point the run at S3 and DynamoDB instead of the config's folders.
  const overridden = await openStoreOverrides(stores)
  const localState =
    overridden.state === undefined ? new LocalStateStore({ root: project.state.path }) : undefined
  const state: StateStore = overridden.state ?? localState!
  const waitMs =
    readInteger(process.env, WAREHOUSE_WAIT_VARIABLE, {
      defaultValue: DEFAULT_WAREHOUSE_WAIT_SECONDS,
      min: 0,
      max: 86_400,
    }) * 1000
  const openLocalWarehouse = (access: 'read' | 'write') =>
    bundle.openLocal(project.warehouse, {
      access,
      waitMs,
      waitSetting: WAREHOUSE_WAIT_VARIABLE,
      ...(options.bigQuery !== undefined ? { bigQuery: options.bigQuery } : {}),
      describeHolder: (holder) => describeHolder(localState, holder),
      onCheckpointRecovered: (recovery, path) => onEvent?.({ step: 'checkpoint-recovered', path, recovery }),
    })
  // The warehouse is opened only when a step needs it (after the table's lease is taken) and, unless its bundle
  // serves every table with one client, closed when the table's run ends: a DuckDB file has one writing process at
  // a time, and a run of another table waits for it.
  let writing: Promise<Warehouse<SqlDialect>> | undefined
  let reading: Promise<Warehouse<SqlDialect>> | undefined
  const closing = async (opened: Promise<Warehouse<SqlDialect>> | undefined) => {
    const warehouse = await opened?.catch(() => undefined)
    await warehouse?.close()
  }
  return {
    staging: overridden.staging ?? new LocalStagingStore({ root: project.staging.path }),
    state,
    openWarehouse: () => {
      writing ??= openLocalWarehouse('write').catch((error: unknown) => {
        writing = undefined
        throw error
      })
      return writing
    },
    releaseWarehouse: async () => {
      if (bundle.sharedAcrossTables) return
      const opened = writing
      writing = undefined
      await closing(opened)
    },
    openWarehouseForReading: () => {
      reading ??= openLocalWarehouse('read').catch((error: unknown) => {
        reading = undefined
        throw error
      })
      return reading
    },
    schema: project.warehouse.schema,
    openSource: (table) =>
      openSource(table, {
        baseDir: project.baseDir,
        env: process.env,
        parquetVersion: bundle.stagedParquetVersion,
      }),
    clock: () => new Date(),
    onEvent,
    checkSourceColumns: (table, columns) =>
      assertTableMatchesSource(
        project,
        project.tables.findIndex((t) => t.name === table.name),
        columns,
      ),
    close: async () => {
      await closing(writing)
      await closing(reading)
      writing = reading = undefined
      await overridden.close()
    },
  }
}

/** `run run-… of table customers (process 123, since …)` when the holder is a run with a local lease. */
async function describeHolder(
  state: LocalStateStore | undefined,
  holder: FileLockHolder,
): Promise<string | undefined> {
  const leases = (await state?.leasesOfProcess(holder.pid, new Date())) ?? []
  if (leases.length === 0) return undefined
  return leases
    .map((l) => `run ${l.owner} of table ${l.table} (process ${holder.pid}, since ${l.acquiredAt})`)
    .join(' and ')
}
