import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { LocalStateStore } from '../../lib/adapters/state/local-state-store.ts'
import { cliEnvironment } from '../support/cli-process.ts'

/**
 * Two processes on one embedded warehouse: this test process plays the other run (it holds a table's lease and
 * has the DuckDB file open, as a run merging does), the CLI under test is a real child process.
 */
const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
const BACKFILL = ['--files', 'data/customers_*.csv', '--time-from-name', 'customers_%Y-%m-%dT%H%M.csv']
let work: string
let held: DuckDBInstance | undefined

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-lock-'))
  cpSync(join(ROOT, 'examples', 'quickstart'), work, {
    recursive: true,
    filter: (p) => !p.includes('.dimsync'),
  })
})
afterEach(() => {
  held?.closeSync()
  held = undefined
  rmSync(work, { recursive: true, force: true })
})

function dimsync(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: work,
      env: cliEnvironment(env),
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
    child.on('close', (code) => resolve({ code, out, err }))
  })
}

const warehousePath = () => join(work, '.dimsync', 'warehouse.duckdb')
const state = () => new LocalStateStore({ root: join(work, '.dimsync', 'state') })

/** This process becomes "the other run": the lease of `table` and the warehouse file open for writing. */
async function holdTableAndWarehouse(table: string): Promise<string> {
  const lease = await state().acquireLease(table, 'run-other', 600_000, new Date())
  held = await DuckDBInstance.create(warehousePath())
  return lease.acquiredAt
}

function releaseWarehouse(): void {
  held?.closeSync()
  held = undefined
}

describe('two processes on one DuckDB warehouse', () => {
  it('a run of a table another run holds fails with the lock message, not a DuckDB file error', async () => {
    expect((await dimsync(['backfill', '--table', 'customers', ...BACKFILL])).code).toBe(0)
    const since = await holdTableAndWarehouse('customers')
    const second = await dimsync(['run', '--table', 'customers'])
    expect(second.code).toBe(1)
    expect(second.err).toMatch(
      `dimsync: table customers is locked by run run-other since ${since} (see docs/errors.md#a-table-is-locked)\n`,
    )
    expect(second.err).not.toContain('IO Error')
  })

  it('a run of another table waits for the warehouse, then names the run that holds it', async () => {
    expect((await dimsync(['backfill', '--table', 'customers', ...BACKFILL])).code).toBe(0)
    const since = await holdTableAndWarehouse('customers')
    const started = Date.now()
    const other = await dimsync(['run', '--table', 'customers_invalidate'], {
      DIMSYNC_WAREHOUSE_WAIT_SECONDS: '1',
    })
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
    expect(other.code).toBe(1)
    expect(other.err).toContain(
      `warehouse ${warehousePath()} is in use by run run-other of table customers (process ${process.pid}, since ${since}); ` +
        'waited 1 s (DIMSYNC_WAREHOUSE_WAIT_SECONDS)',
    )
    expect(other.err).not.toContain('IO Error')
    // The waiting run gave its lease back (its staged batch is merged first by the next run).
    expect(await state().acquireLease('customers_invalidate', 'probe', 1000, new Date())).toMatchObject({
      owner: 'probe',
    })
  })

  it('a run that finds the warehouse busy goes on once the other process closes it', async () => {
    expect((await dimsync(['backfill', '--table', 'customers', ...BACKFILL])).code).toBe(0)
    await holdTableAndWarehouse('customers')
    const waiting = dimsync(['backfill', '--table', 'customers_invalidate', ...BACKFILL], {
      DIMSYNC_WAREHOUSE_WAIT_SECONDS: '60',
    })
    setTimeout(releaseWarehouse, 1500)
    const result = await waiting
    expect(result.err).not.toContain('dimsync:')
    expect(result.code).toBe(0)
    expect((await dimsync(['history', 'customers_invalidate'])).out).toContain(
      'dim_customer_invalidate: 5 versions of 4 keys',
    )
  })

  it('history during a run waits for the writer and then reads; two readers share the file', async () => {
    expect((await dimsync(['backfill', '--table', 'customers', ...BACKFILL])).code).toBe(0)
    const since = await holdTableAndWarehouse('customers')
    const busy = await dimsync(['history', 'customers'], { DIMSYNC_WAREHOUSE_WAIT_SECONDS: '1' })
    expect(busy.code).toBe(1)
    expect(busy.err).toContain(
      `warehouse ${warehousePath()} is in use by run run-other of table customers (process ${process.pid}, since ${since})`,
    )
    releaseWarehouse()
    // A reader holds the file as the history command runs: readers do not exclude each other.
    held = await DuckDBInstance.create(warehousePath(), { access_mode: 'READ_ONLY' })
    const read = await dimsync(['history', 'customers'])
    expect(read.err).toBe('')
    expect(read.out).toContain('dim_customer: 5 versions of 4 keys')
  })

  it('history before any run says so and creates no warehouse file', async () => {
    const result = await dimsync(['history', 'customers'])
    expect(result.code).toBe(1)
    expect(result.err).toBe(
      'dimsync: table customers: dimension dim_customer does not exist yet; run dimsync run first\n',
    )
    expect(existsSync(warehousePath())).toBe(false)
  })
})
