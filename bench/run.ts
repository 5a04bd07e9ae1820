/**
 * `npm run bench`: every benchmark, each measured against a baseline in the same run; results merged into
 * bench/results/latest.json. BENCH_ONLY=merge,endToEnd runs a subset.
 */
import { runEndToEndBenchmark } from './end-to-end.ts'
import { runMergeBenchmark } from './merge.ts'

const only = process.env.BENCH_ONLY?.split(',')
const benchmarks: Record<string, () => Promise<unknown>> = {
  merge: runMergeBenchmark,
  endToEnd: runEndToEndBenchmark,
}
for (const [name, run] of Object.entries(benchmarks)) {
  if (only && !only.includes(name)) continue
  console.log(`\n== ${name}`)
  console.log(JSON.stringify(await run(), null, 2))
}
