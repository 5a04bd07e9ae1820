import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { ALLOCATOR_DEFAULTS } from '../../lib/runtime/allocator-environment.mjs'
import { readHistory } from '../../lib/use-cases/read-history.ts'
import { runTable } from '../../lib/use-cases/run-table.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../support/embedded-project.ts'
import { PG_URL, postgresReachable } from '../integration/sources/support/db-services.ts'

/**
 * `dimsync run` into a PostgreSQL warehouse, killed with SIGKILL while it loads the batch into PostgreSQL, inside
 * its merge transaction and just after its COMMIT, then run again with the same command (docs/invariants.md,
 * "Nothing is lost"): the server rolls back what the dead client left open, the rerun exits 0 without waiting on a
 * lock the dead session held, and the history is the one runs that were never killed leave.
 */
const CLI = join(import.meta.dirname, '..', '..', 'bin', 'dimsync.mjs')
const URL_VARIABLE = 'DIMSYNC_KILLED_PG_WAREHOUSE_URL'
/** Enough rows that the COPY into PostgreSQL and the merge take a few hundred milliseconds each. */
const KEYS = 60_000
const HEADER = 'customer_id,name,region'
const REGIONS = ['North', 'South', 'East', 'West']

/** A small deterministic generator (mulberry32): the same seed gives the same kill points and snapshots. */
function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), a | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Snapshot `n`: about a tenth of the keys change region, a few disappear, a few are new. */
function snapshot(n: number, random: () => number): string[] {
  const rows: string[] = []
  for (let k = 1; k <= KEYS + n * 100; k++) {
    if (n > 0 && random() < 0.02) continue
    const region = n > 0 && random() < 0.1 ? REGIONS[(k + n) % 4] : REGIONS[k % 4]
    rows.push(`${k},name ${k},${region}`)
  }
  return rows
}

/** Where a run is killed: `delayMs` after its log shows `line`. */
interface KillPoint {
  readonly phase: string
  readonly line: RegExp
  readonly delayMs: number
}

/** Runs the CLI as its own process and kills it with SIGKILL at `kill`. */
async function dimsync(
  cwd: string,
  args: readonly string[],
  kill?: KillPoint,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; err: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...process.env, CI: '1', [URL_VARIABLE]: PG_URL, ...ALLOCATOR_DEFAULTS },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let err = ''
  let armed = kill !== undefined
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString()
    if (armed && kill!.line.test(err)) {
      armed = false
      void sleep(kill!.delayMs).then(() => child.kill('SIGKILL'))
    }
  })
  return await new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal, err })))
}

function lastStep(stderr: string): string {
  const lines = stderr.trim().split('\n')
  return (lines.at(-1) ?? '').replace(/^\S+ /, '')
}

/** The versions of the dimension, without the batch ids (random per extract). */
async function history(project: EmbeddedProject): Promise<unknown[]> {
  const rows = await readHistory(await project.deps.openWarehouse(), {
    table: project.project.tables[0]!,
    schema: project.project.warehouse.schema,
  })
  await project.deps.releaseWarehouse?.()
  return rows.map((r) => ({ ...r, dimsync_batch_id: undefined }))
}

async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

const PG_AVAILABLE = await postgresReachable()

describe.skipIf(!PG_AVAILABLE && !process.env.DIMSYNC_REQUIRE_SERVICES)(
  'dimsync run into a PostgreSQL warehouse killed with SIGKILL (a real CLI process and server)',
  () => {
    let killed: EmbeddedProject
    let clean: EmbeddedProject
    const schemas = [`killed_${randomBytes(5).toString('hex')}`, `clean_${randomBytes(5).toString('hex')}`]

    beforeEach(async () => {
      process.env[URL_VARIABLE] = PG_URL
      const yaml = (schema: string) =>
        customersYaml('deletes: invalidate') +
        `warehouse: { type: postgres, url_env: ${URL_VARIABLE}, schema: ${schema} }\n`
      ;[killed, clean] = await Promise.all([
        makeEmbeddedProject(yaml(schemas[0]!), 'dimsync-killed-pgw-'),
        makeEmbeddedProject(yaml(schemas[1]!), 'dimsync-clean-pgw-'),
      ])
    })
    afterEach(async () => {
      await Promise.all([killed.dispose(), clean.dispose()])
      await onServer(async (client) => {
        for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      })
    })

    it(
      'in the load, in the merge and after its COMMIT: the same command again exits 0 and leaves the clean history',
      { timeout: 600_000 },
      async () => {
        const random = seeded(20_261_205)
        const delay = (maxMs: number) => Math.floor(random() * maxMs)
        const points: KillPoint[] = [
          { phase: 'first load', line: /merging batch /, delayMs: delay(400) },
          { phase: 'merge', line: /merging batch /, delayMs: delay(300) },
          { phase: 'merge', line: /merging batch /, delayMs: 100 + delay(400) },
          { phase: 'merge', line: /merging batch /, delayMs: delay(150) },
          { phase: 'after the merge committed', line: /merged batch /, delayMs: 0 },
        ]
        const landed: string[] = []
        for (const [n, point] of points.entries()) {
          const rows = snapshot(n, random)
          killed.writeCsv('customers.csv', HEADER, rows)
          clean.writeCsv('customers.csv', HEADER, rows)
          const extractedAt = new Date(Date.UTC(2024, n, 1))
          const args = ['run', '--extracted-at', extractedAt.toISOString()]

          const stopped = await dimsync(killed.dir, args, point)
          landed.push(
            `${point.phase}: ${stopped.signal ?? `exit ${stopped.code}`} after "${lastStep(stopped.err)}"`,
          )
          const rerun = await dimsync(killed.dir, args)
          expect(rerun, `rerun after a kill in ${point.phase}: ${rerun.err}`).toMatchObject({ code: 0 })

          await runTable(clean.deps, clean.project.tables[0]!, { extractedAt })
          await clean.deps.releaseWarehouse?.()
        }
        // A run may finish before a late kill point; most kills must land inside the merge.
        const inMerge = landed.filter((l) => l.includes('SIGKILL') && l.includes('merging batch'))
        expect(inMerge.length, landed.join('\n')).toBeGreaterThanOrEqual(2)
        expect(landed.filter((l) => l.includes('SIGKILL')).length, landed.join('\n')).toBeGreaterThanOrEqual(
          3,
        )

        const versions = await history(killed)
        expect(versions.length).toBeGreaterThan(KEYS)
        expect(versions).toEqual(await history(clean))
        expect(await killed.deps.staging.listBatches('customers')).toEqual([])
        expect(await killed.deps.staging.listUncommitted('customers')).toEqual([])
        const runs = await killed.deps.state.listRuns('customers', 50)
        expect(runs.filter((r) => r.status === 'running')).toEqual([])
        // The dead sessions' transactions were rolled back by the server: none is left open on the schema.
        const open = await onServer(
          async (client) =>
            (
              await client.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND query LIKE $1`,
                [`%${schemas[0]}%`],
              )
            ).rows[0].n,
        )
        expect(open).toBe(0)
      },
    )
  },
)
