/**
 * CLI start-up benchmark (`BENCH_ONLY=cli npm run bench`): `dimsync --version` against `node -e 0` (the least a
 * Node process costs), and `dimsync validate` on a copy of the quickstart against the same work in a bare Node
 * process (bench/cli-validate-work.ts, compiled as the CLI is): what the launcher, the compiled cache's check and
 * the command line add. Each is a process of its own with the user's environment (the launcher adds the allocator
 * settings itself); the four alternate, median of BENCH_CLI_REPEATS (default 15) wall times, and the two short ones
 * (tens of milliseconds, moved by any other work on the machine) three times as many.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'

import { ALLOCATOR_DEFAULTS } from '../lib/runtime/allocator-environment.mjs'
import { bundleOptions } from '../bin/compile-cache.mjs'
import { BENCH_ROOT, median, TMP } from './support.ts'

const REPEATS = Number(process.env.BENCH_CLI_REPEATS ?? 15)
const ROOT = join(BENCH_ROOT, '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
const DIR = join(TMP, 'cli-startup')

type Variant = 'node' | 'version' | 'validate' | 'validateWork'

/** The environment a user's shell gives: none of the allocator settings the launcher adds. */
function userEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const name of Object.keys(ALLOCATOR_DEFAULTS)) delete env[name]
  return env
}

/** Wall time of one process, in seconds; a failure stops the benchmark (a broken command is not fast). */
function timeProcess(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): number {
  const started = process.hrtime.bigint()
  const r = spawnSync(process.execPath, args, { cwd, env, encoding: 'utf8' })
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} failed (${r.status}):\n${r.stderr}`)
  return seconds
}

export async function runCliStartupBenchmark(): Promise<Record<string, unknown>> {
  rmSync(DIR, { recursive: true, force: true })
  const project = join(DIR, 'quickstart')
  cpSync(join(ROOT, 'examples', 'quickstart'), project, { recursive: true })
  rmSync(join(project, '.dimsync'), { recursive: true, force: true })
  const work = join(DIR, 'work')
  const esbuild = await import('esbuild')
  try {
    await esbuild.build(bundleOptions(join(BENCH_ROOT, 'cli-validate-work.ts'), work))
  } finally {
    await esbuild.stop()
  }
  mkdirSync(work, { recursive: true })
  writeFileSync(join(work, 'package.json'), '{"type":"module"}\n')
  const env = userEnvironment()
  const commands: Record<Variant, readonly string[]> = {
    node: ['-e', '0'],
    version: [CLI, '--version'],
    validate: [CLI, 'validate'],
    validateWork: [join(work, 'bench', 'cli-validate-work.js')],
  }
  // The first start after a change of the CLI's sources compiles them into its cache: not part of any run.
  for (const args of Object.values(commands)) timeProcess(args, project, env)
  const runs: Record<Variant, number[]> = { node: [], version: [], validate: [], validateWork: [] }
  const loads: number[] = []
  const measure = (variant: Variant) => runs[variant].push(timeProcess(commands[variant], project, env))
  for (let i = 0; i < REPEATS; i++) {
    loads.push(loadavg()[0]!)
    for (let short = 0; short < 3; short++) {
      measure('node')
      measure('version')
    }
    measure('validate')
    measure('validateWork')
  }
  rmSync(DIR, { recursive: true, force: true })
  const seconds = Object.fromEntries(
    Object.entries(runs).map(([variant, times]) => [variant, median(times)]),
  ) as Record<Variant, number>
  const result = {
    repeats: REPEATS,
    nodeSeconds: seconds.node,
    versionSeconds: seconds.version,
    versionRatioToNode: seconds.version / seconds.node,
    targetVersionRatioToNode: 1.5,
    validateSeconds: seconds.validate,
    validateWorkSeconds: seconds.validateWork,
    validateRatioToWork: seconds.validate / seconds.validateWork,
    targetValidateRatioToWork: 1.5,
    loadAverage: { min: Math.min(...loads), max: Math.max(...loads) },
    runs,
  }
  console.log(
    `cli: --version ${(seconds.version * 1000).toFixed(0)} ms against node -e 0 ${(seconds.node * 1000).toFixed(0)} ms ` +
      `(${result.versionRatioToNode.toFixed(2)}x); validate ${(seconds.validate * 1000).toFixed(0)} ms against its work ` +
      `${(seconds.validateWork * 1000).toFixed(0)} ms (${result.validateRatioToWork.toFixed(2)}x); load ${result.loadAverage.min.toFixed(1)}-${result.loadAverage.max.toFixed(1)}`,
  )
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runCliStartupBenchmark(), null, 2))
}
