/**
 * End-to-end benchmark: `dimsync run` (the real CLI process) on a generated CSV of 1,000,000, 3,000,000 and
 * 10,000,000 rows, first load into an empty dimension and a second run with 5% changed rows: wall time, rows/s
 * and the peak resident memory of the process (GNU time), which must stay flat as the input grows.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { BENCH_ROOT, measureProcess, TMP, writeResults } from './support.ts'

const SIZES = (process.env.BENCH_E2E_ROWS ?? '1000000,3000000,10000000').split(',').map(Number)
const CLI = join(BENCH_ROOT, '..', 'bin', 'dimsync.mjs')

async function writeCsv(path: string, rows: number, changedEvery: number): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    await connection.run(`COPY (
      SELECT i AS customer_id, 'name_' || i AS name, 'email_' || i || '@example.com' AS email,
        CASE WHEN ${changedEvery} > 0 AND i % ${changedEvery} = 0 THEN 'moved' ELSE 'region_' || (i % 7) END AS region,
        'segment_' || (i % 13) AS segment, i % 1000 AS score, (i % 97) * 1.5 AS balance,
        DATE '2020-01-01' + CAST(i % 1000 AS INTEGER) AS signup_date, i % 2 = 0 AS active, 'city_' || (i % 101) AS city
      FROM range(1, ${rows + 1}) t(i)
    ) TO '${path}' (HEADER, DELIMITER ',')`)
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

/**
 * One `dimsync run`: wall time, rows/s and peak RSS, or why it failed (a run out of memory at one size must not
 * lose the figures of the others).
 */
function measuredRun(
  dir: string,
  env: NodeJS.ProcessEnv,
  rows: number,
  extractedAt: string,
): { seconds: number; rowsPerSecond: number; peakRssMb: number; summary: string } | { failed: string } {
  try {
    const run = measureProcess(process.execPath, [CLI, 'run', '--extracted-at', extractedAt], {
      cwd: dir,
      env,
    })
    return {
      seconds: run.seconds,
      rowsPerSecond: rows / run.seconds,
      peakRssMb: run.peakRssMb,
      summary: run.stdout.trim(),
    }
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).split('\n')
    return { failed: reason.find((line) => line.startsWith('dimsync:')) ?? reason[0]! }
  }
}

export async function runEndToEndBenchmark(): Promise<Record<string, unknown>> {
  const results: Record<string, unknown>[] = []
  for (const rows of SIZES) {
    const dir = join(TMP, `e2e-${rows}`)
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(join(dir, 'data'), { recursive: true })
    writeFileSync(
      join(dir, 'dimsync.yaml'),
      `version: 1\ntables:\n  - name: customers\n    source: { type: file, path: data/customers.csv }\n    key: customer_id\n    deletes: invalidate\n`,
    )
    const csv = join(dir, 'data', 'customers.csv')
    console.log(`end-to-end: ${rows} rows…`)
    await writeCsv(csv, rows, 0)
    const env = { ...process.env, CI: '1' }
    const first = measuredRun(dir, env, rows, '2024-01-01T00:00:00Z')
    await writeCsv(csv, rows, 20)
    const second = 'failed' in first ? first : measuredRun(dir, env, rows, '2024-02-01T00:00:00Z')
    const entry = { rows, firstLoad: first, changedRun: second }
    console.log(entry)
    results.push(entry)
    rmSync(dir, { recursive: true, force: true })
  }
  // A failed run has no peak: NaN, so the growth figure says it is missing.
  const peak = (r: Record<string, unknown>) =>
    Math.max(
      (r.firstLoad as { peakRssMb?: number }).peakRssMb ?? Number.NaN,
      (r.changedRun as { peakRssMb?: number }).peakRssMb ?? Number.NaN,
    )
  const result = {
    runs: results,
    targetPeakRssMb: 300,
    targetPeakRssGrowthLargestVsSmallest: 1.1,
    peakRssGrowthLargestVsSmallest: results.length > 1 ? peak(results.at(-1)!) / peak(results[0]!) : 1,
  }
  writeResults('endToEnd', result)
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runEndToEndBenchmark(), null, 2))
}
