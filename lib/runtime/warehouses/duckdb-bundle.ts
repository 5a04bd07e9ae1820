/** The embedded DuckDB warehouse: a file on this machine (or in memory), one writing process at a time. */
import { existsSync } from 'node:fs'
import { availableParallelism, totalmem } from 'node:os'

import { openWaitingForLock } from '../../adapters/warehouse/duckdb-file-lock.ts'
import { readInteger, readMemorySize } from '../../config/env.ts'
import type { DuckDbWarehouseSpec } from '../../core/table-spec.ts'
import { storesEveryStagedType } from '../../core/warehouse-checks.ts'
import { PARQUET_READ_BY_DUCKDB } from '../../core/staged-parquet.ts'
import type { WarehouseBundle } from '../warehouse-bundle.ts'

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

export const duckDbBundle: WarehouseBundle<DuckDbWarehouseSpec> = {
  type: 'duckdb',
  stagedParquetVersion: PARQUET_READ_BY_DUCKDB,
  checks: async () => storesEveryStagedType('DuckDB'),
  // A wrong warehouse path is refused before anything runs, although the file is opened only for a merge.
  // DuckDB (30 MB of the process's memory) is loaded here, once the config was read and found good.
  async assertUsable(spec) {
    if (spec.path === ':memory:') return
    const { assertDuckDbFileOrNew } = await import('../../adapters/warehouse/duckdb-warehouse.ts')
    await assertDuckDbFileOrNew(spec.path)
  },
  async openLocal(spec, opening) {
    const { DuckDbWarehouse } = await import('../../adapters/warehouse/duckdb-warehouse.ts')
    const { path } = spec
    const setLimit = readMemorySize(process.env, WAREHOUSE_MEMORY_LIMIT_VARIABLE)
    const memoryLimit = setLimit ?? DEFAULT_WAREHOUSE_MEMORY_LIMIT
    // A limit the user did not set is where merges start, not a wall (docs/limits.md).
    const memoryGrowth = setLimit === undefined ? { ceilingMb: warehouseMemoryCeilingMb() } : undefined
    const setThreads = readInteger(process.env, WAREHOUSE_THREADS_VARIABLE, { min: 1, max: 1024 })
    const threads = setThreads ?? DEFAULT_WAREHOUSE_THREADS
    const firstLoad = setThreads ?? firstLoadThreads()
    // A DuckDB file that does not exist yet is not created for reading (it holds no dimension).
    if (opening.access === 'read' && path !== ':memory:' && !existsSync(path))
      return await DuckDbWarehouse.open({ path: ':memory:', memoryLimit, threads })
    return await openWaitingForLock(
      () =>
        DuckDbWarehouse.open({
          path,
          memoryLimit,
          memoryGrowth,
          threads,
          firstLoadThreads: firstLoad,
          readOnly: opening.access === 'read',
          ...(opening.onCheckpointRecovered !== undefined
            ? { onCheckpointRecovered: opening.onCheckpointRecovered }
            : {}),
        }),
      {
        path,
        waitMs: opening.waitMs,
        waitSetting: opening.waitSetting,
        describeHolder: opening.describeHolder,
      },
    )
  },
  sharedAcrossTables: false,
  // Tests and local runs of the functions: the file DIMSYNC_DUCKDB_PATH names, whatever the config's warehouse.
  lambda: {
    async open({ settings }) {
      const { DuckDbWarehouse } = await import('../../adapters/warehouse/duckdb-warehouse.ts')
      return await DuckDbWarehouse.open({ path: settings.duckdbPath! })
    },
  },
  deployProblem: () =>
    `warehouse.type: "duckdb" cannot be deployed to AWS: a function's disk lasts one invocation; ` +
    'set warehouse: { type: bigquery, ... } (DuckDB is for dimsync run on one machine)',
}
