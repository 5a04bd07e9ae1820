import { afterEach, describe, expect, it, vi } from 'vitest'

import type { Warehouse } from '../../../lib/ports/warehouse.ts'
import { firstLoadThreads, warehouseMemoryCeilingMb } from '../../../lib/runtime/local-deps.ts'
import type { SqlDialect } from '../../../lib/sql/dialect.ts'
import { threadsInTransaction } from '../../support/warehouse-threads.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * The embedded warehouse's DuckDB settings bound a run's memory: each DuckDB thread's buffers come on top of the
 * memory limit, and with two threads the snapshot diff of 1M keys ran out of the default limit (bench/results/log.md).
 */
const opened: EmbeddedProject[] = []
afterEach(async () => {
  vi.unstubAllEnvs()
  await Promise.all(opened.splice(0).map((p) => p.dispose()))
})

async function openWarehouse(): Promise<Warehouse<SqlDialect>> {
  const project = await makeEmbeddedProject(customersYaml(), 'dimsync-warehouse-settings-')
  opened.push(project)
  return await project.deps.openWarehouse()
}

async function settings(warehouse: Warehouse<SqlDialect>) {
  const [row] = await warehouse.query(
    `SELECT current_setting('threads') AS threads, current_setting('memory_limit') AS memory_limit`,
  )
  return { threads: Number(row!.threads), memoryLimit: String(row!.memory_limit) }
}

describe('the embedded warehouse', () => {
  it('runs DuckDB on one thread within 112MB by default, whatever the number of CPUs', async () => {
    vi.stubEnv('DIMSYNC_DUCKDB_THREADS', undefined)
    vi.stubEnv('DIMSYNC_DUCKDB_MEMORY_LIMIT', undefined)
    expect(await settings(await openWarehouse())).toEqual({ threads: 1, memoryLimit: '106.8 MiB' })
  })

  // A list aggregate cannot spill: 16M numbers need more than 112MB (measured: 4M need 64-128MB).
  const needsMoreThanTheDefault = {
    label: 'collect every number',
    sql: 'CREATE TABLE numbers AS SELECT list(i) AS l FROM range(16000000) r(i)',
  }

  it('raises the default limit for a transaction that ran out of it, and keeps a limit the user set', async () => {
    vi.stubEnv('DIMSYNC_DUCKDB_THREADS', undefined)
    vi.stubEnv('DIMSYNC_DUCKDB_MEMORY_LIMIT', undefined)
    const growing = await openWarehouse()
    const raised: string[] = []
    await growing.transaction((tx) => tx.execute(needsMoreThanTheDefault), {
      commit: true,
      onMemoryRaised: (r) => raised.push(`${r.statement}: ${r.from} -> ${r.to}`),
    })
    expect(raised[0]).toBe('collect every number: 112MB -> 224MB')
    expect(await growing.query('SELECT COUNT(*) AS n FROM numbers')).toEqual([{ n: 1 }])
    expect((await settings(growing)).memoryLimit).toBe('106.8 MiB')

    vi.stubEnv('DIMSYNC_DUCKDB_MEMORY_LIMIT', '112MB')
    const fixed = await openWarehouse()
    await expect(
      fixed.transaction((tx) => tx.execute(needsMoreThanTheDefault), { commit: true }),
    ).rejects.toThrow(
      'ran out of memory (DIMSYNC_DUCKDB_MEMORY_LIMIT is 112MB); raise DIMSYNC_DUCKDB_MEMORY_LIMIT',
    )
  })

  it("lets the default limit grow up to a quarter of the machine's memory", () => {
    expect(warehouseMemoryCeilingMb(24 * 2 ** 30)).toBe(6442)
    expect(warehouseMemoryCeilingMb(4e9)).toBe(1000)
  })

  it('runs first loads on two threads where the machine has two CPUs or more, on one where it has one', async () => {
    expect(firstLoadThreads(1)).toBe(1)
    expect(firstLoadThreads(2)).toBe(2)
    expect(firstLoadThreads(16)).toBe(2)
    vi.stubEnv('DIMSYNC_DUCKDB_THREADS', undefined)
    const warehouse = await openWarehouse()
    const inFirstLoad = await threadsInTransaction(warehouse, true)
    expect(inFirstLoad).toBe(firstLoadThreads())
    expect((await settings(warehouse)).threads, 'other merges: one').toBe(1)
  })

  it('takes its thread count from DIMSYNC_DUCKDB_THREADS, for first loads too', async () => {
    vi.stubEnv('DIMSYNC_DUCKDB_THREADS', '3')
    const warehouse = await openWarehouse()
    expect((await settings(warehouse)).threads).toBe(3)
    const inFirstLoad = await threadsInTransaction(warehouse, true)
    expect(inFirstLoad).toBe(3)
  })

  it.each(['0', 'two', '1.5'])('refuses DIMSYNC_DUCKDB_THREADS=%s naming the variable', async (value) => {
    vi.stubEnv('DIMSYNC_DUCKDB_THREADS', value)
    await expect(openWarehouse()).rejects.toThrow(/DIMSYNC_DUCKDB_THREADS/)
  })
})
