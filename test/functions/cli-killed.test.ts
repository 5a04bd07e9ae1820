import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { ALLOCATOR_DEFAULTS } from '../../lib/runtime/allocator-environment.mjs'
import { readHistory } from '../../lib/use-cases/read-history.ts'
import { runTable } from '../../lib/use-cases/run-table.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../support/embedded-project.ts'
import { PG_URL, PgScratch, postgresReachable } from '../integration/sources/support/db-services.ts'

/**
 * `dimsync run` killed with SIGKILL at seeded points of its extract and of its merge, then run again with the same
 * command: the rerun exits 0, and the history after every snapshot is the one runs that were never killed leave.
 */
const CLI = join(import.meta.dirname, '..', '..', 'bin', 'dimsync.mjs')
const KEYS = 20_000
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

/**
 * Where a run is killed: on a step's log line, after a delay (ms); or, with `partsStaged`, as soon as `partsStaged()`
 * (polled every few milliseconds) is true.
 */
interface KillPoint {
  readonly phase: string
  readonly line: RegExp
  readonly delayMs: number
  readonly partsStaged?: () => boolean
}

/** Runs the CLI as its own process (every allocator setting given: no launcher) and kills it with SIGKILL at `kill`. */
async function dimsync(
  cwd: string,
  args: readonly string[],
  kill?: KillPoint,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; err: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...process.env, CI: '1', ...ALLOCATOR_DEFAULTS },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let err = ''
  let armed = kill !== undefined
  const polling =
    kill?.partsStaged === undefined
      ? undefined
      : setInterval(() => {
          if (!kill.partsStaged!()) return
          clearInterval(polling)
          child.kill('SIGKILL')
        }, 2)
  if (polling !== undefined) armed = false
  child.once('close', () => clearInterval(polling))
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString()
    if (armed && kill!.line.test(err)) {
      armed = false
      void sleep(kill!.delayMs).then(() => child.kill('SIGKILL'))
    }
  })
  return await new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal, err })))
}

let killed: EmbeddedProject
let clean: EmbeddedProject
afterEach(async () => {
  await Promise.all([killed.dispose(), clean.dispose()])
})

/** The versions of the dimension, without the batch ids (random per extract). */
async function history(project: EmbeddedProject): Promise<unknown[]> {
  const rows = await readHistory(await project.deps.openWarehouse(), {
    table: project.project.tables[0]!,
    schema: 'main',
  })
  await project.deps.releaseWarehouse?.()
  return rows.map((r) => ({ ...r, dimsync_batch_id: undefined }))
}

/** The killed run's record and staging are as a run that was never killed leaves them. */
async function expectNothingLeft(project: EmbeddedProject, table: string): Promise<void> {
  expect(await project.deps.staging.listBatches(table)).toEqual([])
  expect(await project.deps.staging.listUncommitted(table)).toEqual([])
  const runs = await project.deps.state.listRuns(table, 50)
  expect(runs.filter((r) => r.status === 'running')).toEqual([])
}

describe('dimsync run killed with SIGKILL (a real CLI process)', () => {
  beforeEach(async () => {
    ;[killed, clean] = await Promise.all([
      makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-killed-'),
      makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-clean-'),
    ])
  })

  it(
    'at seeded points of its extract and its merge: the same command again exits 0 and leaves the clean history',
    {
      timeout: 600_000,
    },
    async () => {
      const random = seeded(20_261_130)
      const delay = (maxMs: number) => Math.floor(random() * maxMs)
      const points: KillPoint[] = [
        { phase: 'extract', line: /locked by run-/, delayMs: delay(300) },
        { phase: 'between extract and merge', line: /extracted batch /, delayMs: 0 },
        { phase: 'merge', line: /merging batch /, delayMs: delay(200) },
        { phase: 'merge', line: /merging batch /, delayMs: delay(200) },
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
        // The last step the killed run logged: where the kill landed (a run may also have finished first).
        landed.push(
          `${point.phase}: ${stopped.signal ?? `exit ${stopped.code}`} after "${lastStep(stopped.err)}"`,
        )
        const rerun = await dimsync(killed.dir, args)
        expect(rerun, `rerun after a kill in ${point.phase}: ${rerun.err}`).toMatchObject({ code: 0 })

        await runTable(clean.deps, clean.project.tables[0]!, { extractedAt })
        await clean.deps.releaseWarehouse?.()
      }
      // On a fast machine a run may finish before a late kill point; most kills must land.
      expect(landed.filter((l) => l.includes('SIGKILL')).length, landed.join('\n')).toBeGreaterThanOrEqual(3)
      expect(await history(killed)).toEqual(await history(clean))
      await expectNothingLeft(killed, 'customers')
    },
  )
})

const PG_AVAILABLE = await postgresReachable()
/** Rows of the PostgreSQL table: about 45 MB of CSV, so the extract stages several parts (cut at 6 MiB). */
const PG_ROWS = 150_000
const PG_URL_VARIABLE = 'DIMSYNC_KILLED_TEST_PG_URL'

/** Part files of batches that have no manifest in the project's staging folder (an extract cut short). */
function uncommittedParts(project: EmbeddedProject, table: string): number {
  const folder = join(project.dir, '.dimsync', 'staging', table)
  if (!existsSync(folder)) return 0
  return readdirSync(folder)
    .filter((batch) => !existsSync(join(folder, batch, '_manifest.json')))
    .flatMap((batch) => readdirSync(join(folder, batch)).filter((name) => name.endsWith('.parquet'))).length
}

describe.skipIf(!PG_AVAILABLE)(
  'dimsync run of a PostgreSQL table killed with SIGKILL in the middle of its parts',
  () => {
    let pg: PgScratch
    beforeEach(async () => {
      process.env[PG_URL_VARIABLE] = PG_URL
      pg = await PgScratch.create()
      await pg.sql(`CREATE TABLE ${pg.schema}.c (id bigint PRIMARY KEY, region text, pad text)`)
      await pg.sql(
        `INSERT INTO ${pg.schema}.c SELECT g, 'r' || (g % 4), repeat('p', 300) FROM generate_series(1, ${PG_ROWS}) g`,
      )
      const yaml = [
        'version: 1',
        'tables:',
        '  - name: c',
        `    source: { type: postgres, url_env: ${PG_URL_VARIABLE}, table: ${pg.schema}.c }`,
        '    key: id',
        '    deletes: invalidate',
        '',
      ].join('\n')
      ;[killed, clean] = await Promise.all([
        makeEmbeddedProject(yaml, 'dimsync-killed-pg-'),
        makeEmbeddedProject(yaml, 'dimsync-clean-pg-'),
      ])
    })
    afterEach(async () => {
      await pg.drop()
    })

    it(
      'while the extract stages parts, at the manifest and in the merge: the same command again exits 0 and leaves the clean history',
      { timeout: 600_000 },
      async () => {
        const random = seeded(20_261_204)
        const delay = (maxMs: number) => Math.floor(random() * maxMs)
        const staged = (parts: number) => ({
          line: /^$/,
          delayMs: 0,
          partsStaged: () => uncommittedParts(killed, 'c') >= parts,
        })
        const points: KillPoint[] = [
          { phase: 'extract, 1 part staged', ...staged(1) },
          { phase: 'extract, 3 parts staged', ...staged(3) },
          { phase: 'extract, 5 parts staged', ...staged(5) },
          { phase: 'between extract and merge', line: /extracted batch /, delayMs: 0 },
          { phase: 'merge', line: /merging batch /, delayMs: delay(300) },
        ]
        const landed: string[] = []
        for (const [n, point] of points.entries()) {
          // Each snapshot changes some regions and deletes a few keys.
          if (n > 0) {
            await pg.sql(`UPDATE ${pg.schema}.c SET region = 'moved ${n}' WHERE id % 7 = ${n}`)
            await pg.sql(`DELETE FROM ${pg.schema}.c WHERE id % 1000 = ${n}`)
          }
          const extractedAt = new Date(Date.UTC(2024, n, 1))
          const args = ['run', '--extracted-at', extractedAt.toISOString()]
          const stopped = await dimsync(killed.dir, args, point)
          const parts = uncommittedParts(killed, 'c')
          landed.push(
            `${point.phase}: ${stopped.signal ?? `exit ${stopped.code}`} after "${lastStep(stopped.err)}"` +
              (parts > 0 ? `, ${parts} parts staged without a manifest` : ''),
          )
          const rerun = await dimsync(killed.dir, args)
          expect(rerun, `rerun after a kill in ${point.phase}: ${rerun.err}`).toMatchObject({ code: 0 })
          await runTable(clean.deps, clean.project.tables[0]!, { extractedAt })
          await clean.deps.releaseWarehouse?.()
        }
        expect(landed.filter((l) => l.includes('SIGKILL')).length, landed.join('\n')).toBeGreaterThanOrEqual(
          3,
        )
        // At least one kill landed between two parts of the extract.
        expect(
          landed.some((l) => l.includes('SIGKILL') && l.includes('parts staged without a manifest')),
          landed.join('\n'),
        ).toBe(true)
        expect(await history(killed)).toEqual(await history(clean))
        await expectNothingLeft(killed, 'c')
      },
    )
  },
)

function lastStep(stderr: string): string {
  const lines = stderr.trim().split('\n')
  return (lines.at(-1) ?? '').replace(/^\S+ /, '')
}
