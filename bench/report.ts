/**
 * Report benchmark (`BENCH_ONLY=report npm run bench`, results in bench/results/report.json): `dimsync report` (the
 * real CLI process, default settings) on a 1,000,000-key dimension with 10 versions per key (10,000,000
 * versions, about 860,000 distinct start instants; 1% of the keys deleted for a day and back), against
 * `dimsync history --key` on the same table (one filtered scan in the same CLI: the cost of starting the CLI and
 * reading the table once) and a bare DuckDB `SELECT COUNT(*)` of it. The report runs twice: with `deletes:
 * invalidate`, where the keys that came back are counted with one window over every key's versions, and with
 * `deletes: ignore`, where there is nothing to count. Each run is a process of its own, timed with its peak RSS;
 * the variants alternate, median of BENCH_REPEATS (default 3) of wall time, CPU time (user + system, less moved by
 * other work on the machine) and peak RSS. BENCH_KEYS scales it down.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'

import { duckDbDialect } from '../lib/sql/duckdb/duckdb-dialect.ts'
import { renderBatchLedgerDdl } from '../lib/sql/render-ddl.ts'
import { BENCH_ROOT, CHILD_ENV, median, timed, TMP } from './support.ts'

const KEYS = Number(process.env.BENCH_KEYS ?? 1_000_000)
const VERSIONS = 10
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3)
const CLI = join(BENCH_ROOT, '..', 'bin', 'dimsync.mjs')
const DIR = join(TMP, 'report')
const DAY_SECONDS = 86_400

type Variant = 'reportInvalidate' | 'reportIgnore' | 'historyKey' | 'countScan'

/** Version v of key k starts 30 days after version v-1, at a second of the day that depends on the key. */
const start = (v: string) =>
  `TIMESTAMPTZ '2020-01-01 00:00:00+00' + TO_SECONDS(CAST((${v}) * ${30 * DAY_SECONDS} + (k * 7919) % ${DAY_SECONDS} AS BIGINT))`

async function withDuckDb<T>(path: string, work: (run: (sql: string) => Promise<unknown[]>) => Promise<T>) {
  const instance = await DuckDBInstance.create(path, { memory_limit: '2GB', threads: '2' })
  const connection = await instance.connect()
  try {
    await connection.run(`SET TimeZone = 'UTC'`)
    return await work(async (sql) => (await connection.runAndReadAll(sql)).getRowObjectsJson())
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

/** The dimension as dimsync stores it and one ledger row per version wave, written directly. */
async function buildDimension(db: string): Promise<void> {
  await withDuckDb(db, async (run) => {
    // Keys k % 100 = 0 are deleted one day before their version 5 starts, and come back with it.
    await run(
      `CREATE TABLE main.dim_customer AS\n` +
        `SELECT CAST(k * ${VERSIONS} + v + 1 AS BIGINT) AS dimsync_sk, CAST(k + 1 AS BIGINT) AS customer_id,\n` +
        `  'region_' || ((k + v) % 7) AS region, ${start('v')} AS valid_from,\n` +
        `  CASE WHEN v = ${VERSIONS - 1} THEN NULL\n` +
        `    WHEN v = 4 AND k % 100 = 0 THEN ${start('v + 1')} - INTERVAL 1 DAY ELSE ${start('v + 1')} END AS valid_to,\n` +
        `  v = ${VERSIONS - 1} AS is_current, FALSE AS is_deleted, md5(CAST(k * 10 + v AS VARCHAR)) AS dimsync_row_hash,\n` +
        `  'b' || v AS dimsync_batch_id\n` +
        `FROM range(${KEYS}) a(k), range(${VERSIONS}) b(v)`,
    )
    await run(renderBatchLedgerDdl(duckDbDialect, { schema: 'main', name: '_dimsync_batches' }).sql)
    await run(
      `INSERT INTO main._dimsync_batches SELECT 'dim_customer', 'customers', 'b' || v,\n` +
        `  TIMESTAMPTZ '2020-01-02 00:00:00+00' + TO_DAYS(CAST(v * 30 AS INTEGER)), 'full', now(),\n` +
        `  ${KEYS}, ${KEYS}, CASE WHEN v = 0 THEN 0 ELSE ${KEYS} END, 0, 0, 0 FROM range(${VERSIONS}) b(v)`,
    )
    await run('CHECKPOINT')
  })
}

function project(deletes: 'invalidate' | 'ignore'): string {
  const dir = join(DIR, deletes)
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'dimsync.yaml'),
    `version: 1
warehouse: { type: duckdb, path: ../warehouse.duckdb }
staging: { type: local, path: .dimsync/staging }
state: { type: local, path: .dimsync/state }
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    target: dim_customer
    key: customer_id
    deletes: ${deletes}
`,
  )
  return dir
}

/** Child process of the count baseline: opens the file read-only at dimsync's settings and counts. */
async function countChild(db: string): Promise<void> {
  const instance = await DuckDBInstance.create(db, {
    access_mode: 'READ_ONLY',
    memory_limit: '112MB',
    threads: '1',
  })
  const connection = await instance.connect()
  const rows = (
    await connection.runAndReadAll('SELECT COUNT(*) AS n FROM main.dim_customer')
  ).getRowObjectsJson()
  console.log(JSON.stringify(rows[0]))
  connection.closeSync()
  instance.closeSync()
}

interface Measured {
  readonly seconds: number
  /** User plus system CPU time of the process tree: what the work costs, less moved by other load than wall time. */
  readonly cpuSeconds: number
  readonly peakRssMb: number
}

/** Runs a command under GNU time: wall time, CPU time and peak resident memory. */
function measureProcess(command: string, args: readonly string[], cwd: string): Measured {
  const started = process.hrtime.bigint()
  const r = spawnSync('/usr/bin/time', ['-f', '__TIME=%U %S %M', command, ...args], {
    cwd,
    env: CHILD_ENV,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.status}):\n${r.stderr}`)
  const [user, system, kb] = /__TIME=(\S+) (\S+) (\d+)/.exec(r.stderr)!.slice(1).map(Number) as [
    number,
    number,
    number,
  ]
  return { seconds, cpuSeconds: user + system, peakRssMb: kb / 1024 }
}

function measure(variant: Variant, dirs: Record<'invalidate' | 'ignore', string>, db: string): Measured {
  const cli = (dir: string, ...args: string[]) => measureProcess(process.execPath, [CLI, ...args], dir)
  switch (variant) {
    case 'reportInvalidate':
      return cli(dirs.invalidate, 'report', '--out', 'report.html')
    case 'reportIgnore':
      return cli(dirs.ignore, 'report', '--out', 'report.html')
    case 'historyKey':
      return cli(dirs.invalidate, 'history', 'customers', '--key', String(KEYS / 2), '--format', 'json')
    case 'countScan':
      return measureProcess(
        process.execPath,
        ['--import', 'tsx', join(BENCH_ROOT, 'report.ts'), 'count', db],
        join(BENCH_ROOT, '..'),
      )
  }
}

export async function runReportBenchmark(): Promise<Record<string, unknown>> {
  rmSync(DIR, { recursive: true, force: true })
  mkdirSync(DIR, { recursive: true })
  const db = join(DIR, 'warehouse.duckdb')
  console.log(`report: building ${KEYS} keys x ${VERSIONS} versions…`)
  const built = await timed(() => buildDimension(db))
  console.log(`report: built in ${built.seconds.toFixed(1)} s`)
  const dirs = { invalidate: project('invalidate'), ignore: project('ignore') }
  // The CLI compiles itself into its cache on its first start after a change: not part of any measured run.
  spawnSync(process.execPath, [CLI, '--version'], { env: CHILD_ENV })
  const variants: Variant[] = ['reportInvalidate', 'reportIgnore', 'historyKey', 'countScan']
  const runs: Record<Variant, Measured[]> = {
    reportInvalidate: [],
    reportIgnore: [],
    historyKey: [],
    countScan: [],
  }
  const loads: number[][] = []
  for (let i = 0; i < REPEATS; i++) {
    loads.push(loadavg())
    for (const variant of variants) {
      const r = measure(variant, dirs, db)
      runs[variant].push(r)
      console.log(
        `report: run ${i + 1} ${variant}: ${r.seconds.toFixed(2)} s (CPU ${r.cpuSeconds.toFixed(2)} s), peak RSS ${r.peakRssMb.toFixed(0)} MB`,
      )
    }
  }
  const page = statSync(join(dirs.invalidate, 'report.html')).size
  if (process.env.BENCH_KEEP === undefined) rmSync(DIR, { recursive: true, force: true })
  const summary = (variant: Variant) => ({
    seconds: median(runs[variant].map((r) => r.seconds)),
    cpuSeconds: median(runs[variant].map((r) => r.cpuSeconds)),
    peakRssMb: median(runs[variant].map((r) => r.peakRssMb)),
    runs: runs[variant],
  })
  const result = Object.fromEntries(variants.map((v) => [v, summary(v)])) as Record<
    Variant,
    ReturnType<typeof summary>
  >
  return {
    keys: KEYS,
    versionsPerKey: VERSIONS,
    repeats: REPEATS,
    pageBytes: page,
    ...result,
    reportToHistoryTimeRatio: result.reportInvalidate.seconds / result.historyKey.seconds,
    reportToHistoryCpuRatio: result.reportInvalidate.cpuSeconds / result.historyKey.cpuSeconds,
    loadAverageBeforeEachRound: loads,
    loadAverageAfter: loadavg(),
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === 'count') {
    await countChild(process.argv[3]!)
  } else {
    const result = await runReportBenchmark()
    mkdirSync(join(BENCH_ROOT, 'results'), { recursive: true })
    writeFileSync(join(BENCH_ROOT, 'results', 'report.json'), JSON.stringify(result, null, 2) + '\n')
    console.log(JSON.stringify(result, null, 2))
  }
}
