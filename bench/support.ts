import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { withAllocatorSettings } from '../lib/runtime/allocator-environment.mjs'
import { stagedParquetVersion } from '../lib/core/staged-parquet.ts'
import { mergeLatest } from './targets.ts'

export const BENCH_ROOT = import.meta.dirname
export const TMP = join(BENCH_ROOT, 'tmp')
/** `COPY … TO` options of a staged part as the CLI writes it for the embedded warehouse (lib/core/staged-parquet.ts). */
export const STAGED_PART_OPTIONS = `FORMAT parquet, COMPRESSION zstd, PARQUET_VERSION ${stagedParquetVersion('duckdb')}`

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

export async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; result: T }> {
  const started = process.hrtime.bigint()
  const result = await work()
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9, result }
}

/** Runs a command under GNU time and returns its wall time and peak resident memory (the whole process tree's largest). */
export function measureProcess(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): { seconds: number; peakRssMb: number; stdout: string } {
  const started = process.hrtime.bigint()
  const r = spawnSync('/usr/bin/time', ['-f', '__PEAK_KB=%M', command, ...args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.status}):\n${r.stderr}`)
  const kb = Number(/__PEAK_KB=(\d+)/.exec(r.stderr)?.[1])
  return { seconds, peakRssMb: kb / 1024, stdout: r.stdout }
}

/**
 * Merges `section` into bench/results/latest.json and updates the targets it measures (bench/targets.ts); the
 * other benchmarks' sections and targets stay as they were.
 */
export function writeResults(section: string, value: unknown): void {
  const dir = join(BENCH_ROOT, 'results')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, 'latest.json')
  let previous: unknown
  try {
    previous = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    previous = {} // first run, or a file damaged by an interrupted run
  }
  const latest = mergeLatest(previous, section, value, {
    at: new Date().toISOString(),
    node: process.version,
    loadAverage: loadavg().map((load) => Number(load.toFixed(2))),
  })
  writeFileSync(file, JSON.stringify(latest, null, 2) + '\n')
}

/**
 * The environment of measured child processes: the one bin/dimsync.mjs gives the CLI (the allocator settings,
 * see there), so a benchmark measures what a user runs.
 */
export const CHILD_ENV: NodeJS.ProcessEnv = withAllocatorSettings(process.env)
