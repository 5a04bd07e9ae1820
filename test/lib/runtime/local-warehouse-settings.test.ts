import { afterEach, describe, expect, it, vi } from 'vitest'

import type { Warehouse } from '../../../lib/ports/warehouse.ts'
import type { SqlDialect } from '../../../lib/sql/dialect.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * The embedded warehouse's DuckDB settings bound a run's memory: each DuckDB thread's buffers come on top of the
 * memory limit, and with two threads the snapshot diff of 1M keys ran out of the default limit (docs/benchmarks.md).
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

  it('takes its thread count from DIMSYNC_DUCKDB_THREADS', async () => {
    vi.stubEnv('DIMSYNC_DUCKDB_THREADS', '3')
    expect((await settings(await openWarehouse())).threads).toBe(3)
  })

  it.each(['0', 'two', '1.5'])('refuses DIMSYNC_DUCKDB_THREADS=%s naming the variable', async (value) => {
    vi.stubEnv('DIMSYNC_DUCKDB_THREADS', value)
    await expect(openWarehouse()).rejects.toThrow(/DIMSYNC_DUCKDB_THREADS/)
  })
})
