import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { PG_URL, postgresReachable } from '../integration/sources/support/db-services.ts'
import { childrenOf } from '../support/processes.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
const available = process.platform === 'linux' && (await postgresReachable())

let work: string
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-launcher-'))
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function environmentOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  ms = 30_000,
): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

const ALLOCATOR_VARIABLES = [
  'DUCKDB_JE_MALLOC_CONF',
  'MALLOC_ARENA_MAX',
  'MALLOC_MMAP_THRESHOLD_',
  'NODE_OPTIONS',
] as const
type AllocatorSettings = Partial<Record<(typeof ALLOCATOR_VARIABLES)[number], string>>

/**
 * `dimsync run` through the launcher, with none of the allocator settings but `given`, of a source query that
 * sleeps: resolves once the extract runs (the worker has long been started with its environment by then).
 */
async function startSleepingRun(given: AllocatorSettings = {}) {
  const marker = `dimsync_launcher_${randomBytes(4).toString('hex')}`
  writeFileSync(
    join(work, 'dimsync.yaml'),
    [
      'version: 1',
      'tables:',
      '  - name: slow',
      `    source: { type: postgres, url_env: DB_URL, query: 'SELECT 1 AS id, pg_sleep(60) IS NULL AS ${marker}' }`,
      '    key: id',
      '',
    ].join('\n'),
  )
  const env: Record<string, string | undefined> = { ...process.env, DB_URL: PG_URL, CI: '1' }
  for (const name of ALLOCATOR_VARIABLES) delete env[name]
  Object.assign(env, given)
  const launcher = spawn(process.execPath, [CLI, 'run'], { cwd: work, env, stdio: 'ignore' })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    launcher.once('exit', (code, signal) => resolve({ code, signal })),
  )
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    await until('the extract to start', () =>
      client
        .query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()`,
          [`%AS ${marker}%`],
        )
        .then((r) => (r.rows[0].n > 0 ? true : undefined)),
    )
  } catch (error) {
    launcher.kill('SIGKILL')
    throw error
  } finally {
    await client.end()
  }
  return { launcher, exited }
}

describe.skipIf(!available)('bin/dimsync.mjs (the launcher that sets the allocator settings)', () => {
  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
    '%s to the launcher stops the worker, and the launcher ends the way the worker did',
    async (signal) => {
      // A source query that sleeps keeps the run inside its extract until it is stopped.
      const { launcher, exited } = await startSleepingRun()
      try {
        // Where Node can replace its process (process.execve) the worker is the launcher's process itself.
        const children = childrenOf(launcher.pid!)
        if (typeof process.execve === 'function') expect(children).toEqual([])
        const worker = children[0] ?? launcher.pid!
        expect(environmentOf(worker)).toContain('MALLOC_ARENA_MAX=2')

        launcher.kill(signal)
        const outcome = await exited
        // The launcher re-raises the worker's signal, so its parent sees the stop as it would without a launcher.
        expect(outcome).toEqual({ code: null, signal })
        await until('the worker to end', () => (isAlive(worker!) ? undefined : true), 10_000)
      } finally {
        if (launcher.exitCode === null && launcher.signalCode === null) launcher.kill('SIGKILL')
      }
    },
  )

  const DEFAULTS = {
    DUCKDB_JE_MALLOC_CONF: 'narenas:1',
    MALLOC_ARENA_MAX: '2',
    MALLOC_MMAP_THRESHOLD_: '65536',
    NODE_OPTIONS: '--max-semi-space-size=2',
  }
  it.each([
    ['the allocator defaults', {}, DEFAULTS],
    [
      'the DuckDB allocator settings the user gave',
      { DUCKDB_JE_MALLOC_CONF: 'narenas:2,dirty_decay_ms:0' },
      { ...DEFAULTS, DUCKDB_JE_MALLOC_CONF: 'narenas:2,dirty_decay_ms:0' },
    ],
    // A MALLOC_ARENA_MAX of the user's own is kept, and the other settings still apply.
    [
      'the glibc arenas the user set beside the other defaults',
      { MALLOC_ARENA_MAX: '4' },
      { ...DEFAULTS, MALLOC_ARENA_MAX: '4' },
    ],
    [
      'the glibc mmap threshold the user set',
      { MALLOC_MMAP_THRESHOLD_: '131072' },
      { ...DEFAULTS, MALLOC_MMAP_THRESHOLD_: '131072' },
    ],
    // Node options of the user's own stay, and V8's young generation is still set.
    [
      'the Node options the user gave, and the young generation size',
      { NODE_OPTIONS: '--enable-source-maps' },
      { ...DEFAULTS, NODE_OPTIONS: '--enable-source-maps --max-semi-space-size=2' },
    ],
    [
      'the young generation size the user gave',
      { NODE_OPTIONS: '--max-semi-space-size=8 --enable-source-maps' },
      { ...DEFAULTS, NODE_OPTIONS: '--max-semi-space-size=8 --enable-source-maps' },
    ],
  ] as const)('the worker runs with %s', async (_, given: AllocatorSettings, expected) => {
    const { launcher, exited } = await startSleepingRun(given)
    try {
      // The worker is the launcher's child, or the launcher itself where Node replaced its process (execve).
      const worker = childrenOf(launcher.pid!)[0] ?? launcher.pid!
      // jemalloc reads it once, when DuckDB loads: only the environment the worker starts with counts.
      const environ = environmentOf(worker)
      for (const name of ALLOCATOR_VARIABLES) {
        expect(environ.filter((e) => e.startsWith(`${name}=`))).toEqual([`${name}=${expected[name]}`])
      }
    } finally {
      launcher.kill('SIGTERM')
      await exited
    }
  })

  it('exits with the worker status', async () => {
    const env: Record<string, string | undefined> = { ...process.env, CI: '1' }
    delete env.MALLOC_ARENA_MAX
    const launcher = spawn(process.execPath, [CLI, 'validate', '--config', 'missing.yaml'], {
      cwd: work,
      env,
      stdio: 'ignore',
    })
    const code = await new Promise((resolve) => launcher.once('exit', (c) => resolve(c)))
    expect(code).toBe(1)
  })
})
