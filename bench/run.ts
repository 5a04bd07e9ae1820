/**
 * `npm run bench`: every benchmark, each measured against a baseline in the same run; results merged into
 * bench/results/latest.json, whose `targets` hold the figures dimsync is held to (bench/targets.ts, docs/benchmarks.md).
 * A subset: BENCH_ONLY=firstLoad,merge,backfill,endToEnd,sources,s3Extract,changeFeed,dmsFeed,facts,runMemory,report,cli.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBackfillBenchmark } from './backfill.ts'
import { runCliStartupBenchmark } from './cli-startup.ts'
import { runEndToEndBenchmark } from './end-to-end.ts'
import { runFirstLoadBenchmark } from './first-load.ts'
import { runMergeBenchmark } from './merge.ts'
import { BENCH_ROOT, writeResults } from './support.ts'

/** Benchmarks written as scripts of their own (they start servers and child processes) and the file they write. */
function script(file: string, results: string) {
  return async () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(BENCH_ROOT, file)], { stdio: 'inherit' })
    if (run.status !== 0) throw new Error(`bench/${file} failed (${run.status})`)
    return JSON.parse(readFileSync(join(BENCH_ROOT, 'results', results), 'utf8')) as unknown
  }
}

function memoryResults(rows: number): string {
  return rows === 1_000_000 ? 'run-memory.json' : `run-memory-${rows}.json`
}

const only = process.env.BENCH_ONLY?.split(',')
const benchmarks: Record<string, () => Promise<unknown>> = {
  firstLoad: runFirstLoadBenchmark,
  merge: runMergeBenchmark,
  backfill: runBackfillBenchmark,
  endToEnd: runEndToEndBenchmark,
  sources: script('sources.ts', 'sources.json'),
  s3Extract: script('s3-extract.ts', 's3-extract.json'),
  changeFeed: script('change-feed.ts', 'change-feed.json'),
  dmsFeed: script('dms-feed.ts', 'dms-feed.json'),
  facts: script('facts.ts', 'facts.json'),
  // run-memory.ts names its file after the rows it ran (BENCH_MEMORY_ROWS) when they are not 1M.
  runMemory: script('run-memory.ts', memoryResults(Number(process.env.BENCH_MEMORY_ROWS ?? 1_000_000))),
  report: script('report.ts', 'report.json'),
  cli: runCliStartupBenchmark,
}
for (const [name, run] of Object.entries(benchmarks)) {
  if (only && !only.includes(name)) continue
  console.log(`\n== ${name}`)
  const result = await run()
  if (['sources', 's3Extract', 'changeFeed', 'dmsFeed', 'facts', 'runMemory', 'report', 'cli'].includes(name))
    writeResults(name, result)
  console.log(JSON.stringify(result, null, 2))
}
