import { existsSync } from 'node:fs'
import { availableParallelism, totalmem } from 'node:os'

import { LocalStagingStore } from '../adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../adapters/state/local-state-store.ts'
import type { BigQueryWarehouseOptions } from '../adapters/warehouse/bigquery-warehouse.ts'
import { openWaitingForLock, type FileLockHolder } from '../adapters/warehouse/duckdb-file-lock.ts'
import { readInteger, readMemorySize } from '../config/env.ts'
import { assertTableMatchesSource } from '../config/index.ts'
import { stagedParquetVersion } from '../core/staged-parquet.ts'
import type { ProjectSpec } from '../core/table-spec.ts'
import type { StateStore } from '../ports/state-store.ts'
import { openSource, sourceMemoryLimit } from './open-source.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import type { RunEvent } from '../use-cases/run-event.ts'
import type { PipelineDeps } from '../use-cases/run-table.ts'
import { openStoreOverrides, type StoreOverrides } from './store-overrides.ts'

export interface LocalDeps extends PipelineDeps {
  /**
   * The warehouse for reading (history): a DuckDB file is opened read-only, so readers share it; while a run
   * writes it, this waits. A DuckDB file that does not exist yet is not created (it holds no dimension).
   */
  openWarehouseForReading(): Promise<Warehouse<SqlDialect>>
  close(): Promise<void>
}

/**
 * A BigQuery API endpoint to use instead of Google's (a BigQuery emulator): requests go there without Google
 * credentials.
 */
export const BIGQUERY_ENDPOINT_VARIABLE = 'DIMSYNC_BIGQUERY_ENDPOINT'

/**
 * DuckDB's memory limit for the warehouse (DIMSYNC_DUCKDB_MEMORY_LIMIT overrides it); beyond it DuckDB spills to
 * disk. 112MB: a 10M-row run peaked 267-284 MB against 301-305 MB at 128MB; not lower: at 96MB the first load of
 * 10M rows ran out of memory, at 64MB the diff of a 1M-key snapshot (bench/results/log.md).
 */
export const DEFAULT_WAREHOUSE_MEMORY_LIMIT = '112MB'
export const WAREHOUSE_MEMORY_LIMIT_VARIABLE = 'DIMSYNC_DUCKDB_MEMORY_LIMIT'

/**
 * How far the default limit grows for a merge that runs out of it: a quarter of the machine's memory, in MB
 * (DuckDB's MB are 10^6 bytes). Some statements need more than any fixed default for some shapes of rows (the diff
 * of a 1M-row snapshot where two rows in three changed).
 */
export function warehouseMemoryCeilingMb(totalBytes: number = totalmem()): number {
  return Math.floor(totalBytes / 4 / 1e6)
}

/**
 * DuckDB threads of the warehouse's merges but first loads (DIMSYNC_DUCKDB_THREADS overrides it). One: each
 * thread's buffers come on top of the memory limit, and with two the runs of a 10M-key changed snapshot peaked at
 * 381 and 415 MB against 263 and 272 MB (bench/results/log.md).
 */
export const DEFAULT_WAREHOUSE_THREADS = 1
export const WAREHOUSE_THREADS_VARIABLE = 'DIMSYNC_DUCKDB_THREADS'

/**
 * DuckDB threads of a first load (while DIMSYNC_DUCKDB_THREADS is not set): two where the machine has them. A first
 * load streams the batch once (no diff); on two threads first runs took 16-31% less time at 1M rows and 41-51% less
 * at 10M, peaking 8-16 MB higher at 1M and no higher at 10M (bench/results/log.md).
 */
export function firstLoadThreads(cpus: number = availableParallelism()): number {
  return Math.min(2, cpus)
}

/** How long a command waits for a DuckDB warehouse file another process has open (seconds). */
export const WAREHOUSE_WAIT_VARIABLE = 'DIMSYNC_WAREHOUSE_WAIT_SECONDS'
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
  // A wrong warehouse path is refused before anything runs, although the file is opened only for a merge.
  // DuckDB (30 MB of the process's memory) is loaded here, once the config was read and found good.
  if (project.warehouse.type === 'duckdb' && project.warehouse.path !== ':memory:') {
    const { assertDuckDbFileOrNew } = await import('../adapters/warehouse/duckdb-warehouse.ts')
    await assertDuckDbFileOrNew(project.warehouse.path)
  }
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
  const opener: WarehouseOpener = { project, options, waitMs, localState }
  // The warehouse is opened only when a step needs it (after the table's lease is taken) and closed when the
  // table's run ends: a DuckDB file has one writing process at a time, and a run of another table waits for it.
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
      writing ??= openLocalWarehouse(opener, 'write').catch((error: unknown) => {
        writing = undefined
        throw error
      })
      return writing
    },
    releaseWarehouse: async () => {
      if (project.warehouse.type === 'bigquery') return
      const opened = writing
      writing = undefined
      await closing(opened)
    },
    openWarehouseForReading: () => {
      reading ??= openLocalWarehouse(opener, 'read').catch((error: unknown) => {
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
        parquetVersion: stagedParquetVersion(project.warehouse.type),
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

interface WarehouseOpener {
  readonly project: ProjectSpec
  readonly options: LocalDepsOptions
  readonly waitMs: number
  /** The local state store, whose leases name the run of a process holding the DuckDB file. */
  readonly localState?: LocalStateStore
}

async function openLocalWarehouse(
  opener: WarehouseOpener,
  access: 'read' | 'write',
): Promise<Warehouse<SqlDialect>> {
  const { project, options } = opener
  if (project.warehouse.type === 'bigquery') {
    // From a laptop the key comes from Application Default Credentials; a Secrets Manager secret is read with the
    // AWS credential chain, as on Lambda. The BigQuery and AWS client libraries are loaded only here: a DuckDB
    // run does without their memory (about 30 MB).
    const [{ openBigQueryWarehouse }, { makeSecretsManagerClient }, { secretsManagerGetter }] =
      await Promise.all([
        import('../adapters/warehouse/bigquery-credentials.ts'),
        import('../adapters/aws/aws-clients.ts'),
        import('../adapters/aws/source-secrets.ts'),
      ])
    return await openBigQueryWarehouse(project.warehouse, {
      getSecret: secretsManagerGetter(makeSecretsManagerClient({})),
      endpoint: process.env[BIGQUERY_ENDPOINT_VARIABLE],
      extra: options.bigQuery,
    })
  }
  if (project.warehouse.type === 'postgres') {
    // The URL (with its credentials) comes from the environment variable the config names, never the file.
    const { PostgresWarehouse, postgresUrlFromEnvironment } =
      await import('../adapters/warehouse/postgres-warehouse.ts')
    return await PostgresWarehouse.open({ url: postgresUrlFromEnvironment(project.warehouse.urlEnv) })
  }
  const { DuckDbWarehouse } = await import('../adapters/warehouse/duckdb-warehouse.ts')
  const { path } = project.warehouse
  const setLimit = readMemorySize(process.env, WAREHOUSE_MEMORY_LIMIT_VARIABLE)
  const memoryLimit = setLimit ?? DEFAULT_WAREHOUSE_MEMORY_LIMIT
  // A limit the user did not set is where merges start, not a wall (docs/limits.md).
  const memoryGrowth = setLimit === undefined ? { ceilingMb: warehouseMemoryCeilingMb() } : undefined
  const setThreads = readInteger(process.env, WAREHOUSE_THREADS_VARIABLE, { min: 1, max: 1024 })
  const threads = setThreads ?? DEFAULT_WAREHOUSE_THREADS
  const firstLoad = setThreads ?? firstLoadThreads()
  if (access === 'read' && path !== ':memory:' && !existsSync(path))
    return await DuckDbWarehouse.open({ path: ':memory:', memoryLimit, threads })
  return await openWaitingForLock(
    () =>
      DuckDbWarehouse.open({
        path,
        memoryLimit,
        memoryGrowth,
        threads,
        firstLoadThreads: firstLoad,
        readOnly: access === 'read',
      }),
    {
      path,
      waitMs: opener.waitMs,
      waitSetting: WAREHOUSE_WAIT_VARIABLE,
      describeHolder: (holder) => describeHolder(opener.localState, holder),
    },
  )
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
