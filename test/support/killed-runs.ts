import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { expect } from 'vitest'

import { readHistory } from '../../lib/use-cases/read-history.ts'
import { runTable } from '../../lib/use-cases/run-table.ts'
import { CLI, cliEnvironment } from './cli-process.ts'
import type { EmbeddedProject } from './embedded-project.ts'

/** `dimsync run` killed with SIGKILL at chosen points of its work (test/functions/cli-killed*.test.ts). */

export const CUSTOMERS_HEADER = 'customer_id,name,region'
const REGIONS = ['North', 'South', 'East', 'West']

/** A small deterministic generator (mulberry32): the same seed gives the same kill points and snapshots. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), a | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Customers snapshot `n` of `keys` keys: about a tenth change region, a few disappear, a few are new. */
export function customersSnapshot(n: number, keys: number, random: () => number): string[] {
  const rows: string[] = []
  for (let k = 1; k <= keys + n * 100; k++) {
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
export interface KillPoint {
  readonly phase: string
  readonly line: RegExp
  readonly delayMs: number
  readonly partsStaged?: () => boolean
}

export interface Stopped {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly err: string
}

/**
 * Runs the CLI as its own process (every allocator setting given: no launcher), with `env` added to the test's, and
 * kills it with SIGKILL at `kill`.
 */
export async function dimsyncKilledAt(
  cwd: string,
  args: readonly string[],
  kill?: KillPoint,
  env: NodeJS.ProcessEnv = {},
): Promise<Stopped> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: cliEnvironment(env),
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

/** What a stopped run did last: its last log line without the time. */
export function lastStep(stderr: string): string {
  const lines = stderr.trim().split('\n')
  return (lines.at(-1) ?? '').replace(/^\S+ /, '')
}

/** The versions of the project's first table's dimension, without the batch ids (random per extract). */
export async function historyOf(project: EmbeddedProject): Promise<unknown[]> {
  const rows = await readHistory(await project.deps.openWarehouse(), {
    table: project.project.tables[0]!,
    schema: project.project.warehouse.schema,
  })
  await project.deps.releaseWarehouse?.()
  return rows.map((r) => ({ ...r, dimsync_batch_id: undefined }))
}

/** The killed run's record and staging are as a run that was never killed leaves them. */
export async function expectNothingLeft(project: EmbeddedProject, table: string): Promise<void> {
  expect(await project.deps.staging.listBatches(table)).toEqual([])
  expect(await project.deps.staging.listUncommitted(table)).toEqual([])
  const runs = await project.deps.state.listRuns(table, 50)
  expect(runs.filter((r) => r.status === 'running')).toEqual([])
}

/** The files beside a DuckDB warehouse file that carry its name (its log, copies made before a checkpoint). */
export function filesBeside(warehouse: string): string[] {
  return readdirSync(dirname(warehouse)).filter(
    (name) => name.startsWith(basename(warehouse)) && name !== basename(warehouse),
  )
}

export interface KillEachOptions {
  /** The project whose runs are killed, and the project whose runs are not (the same config and sources). */
  readonly killed: EmbeddedProject
  readonly clean: EmbeddedProject
  readonly points: readonly KillPoint[]
  /** Runs the CLI in the killed project (`dimsyncKilledAt` with the project's environment). */
  readonly dimsync: (cwd: string, args: readonly string[], kill?: KillPoint) => Promise<Stopped>
  /** Changes the sources before run `n` (one run per kill point, extracted a month apart). */
  readonly before: (n: number) => Promise<void> | void
  /** What to add to a kill's line of the report once the run stopped. */
  readonly after?: () => string
}

/**
 * For each kill point: change the sources, run `dimsync run` in the killed project and kill it there, run the same
 * command again (it must exit 0), and run the clean project without a kill. Answers where each kill landed: the
 * last step the killed run logged (a run may also have finished first).
 */
export async function killEachAndRerun(options: KillEachOptions): Promise<string[]> {
  const { killed, clean, points, dimsync } = options
  const landed: string[] = []
  for (const [n, point] of points.entries()) {
    await options.before(n)
    const extractedAt = new Date(Date.UTC(2024, n, 1))
    const args = ['run', '--extracted-at', extractedAt.toISOString()]
    const stopped = await dimsync(killed.dir, args, point)
    landed.push(
      `${point.phase}: ${stopped.signal ?? `exit ${stopped.code}`} after "${lastStep(stopped.err)}"` +
        (options.after?.() ?? ''),
    )
    const rerun = await dimsync(killed.dir, args)
    expect(rerun, `rerun after a kill in ${point.phase}: ${rerun.err}`).toMatchObject({ code: 0 })
    await runTable(clean.deps, clean.project.tables[0]!, { extractedAt })
    await clean.deps.releaseWarehouse?.()
  }
  return landed
}

/** `killEachAndRerun`'s `before` for a CSV source: both projects' customers.csv get snapshot `n`. */
export function writeCustomersSnapshots(
  projects: readonly EmbeddedProject[],
  keys: number,
  random: () => number,
): (n: number) => void {
  return (n) => {
    const rows = customersSnapshot(n, keys, random)
    for (const project of projects) project.writeCsv('customers.csv', CUSTOMERS_HEADER, rows)
  }
}
