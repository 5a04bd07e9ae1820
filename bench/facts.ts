/**
 * Fact-load benchmark (`BENCH_ONLY=facts npm run bench`, results in bench/results/facts.json): a batch of
 * 10,000,000 facts (1% of them of keys the dimension does not have) loaded by dimsync's loadFactBatch against a
 * 1,000,000-key dimension with 10 versions per key (10,000,000 versions) on DuckDB, against a hand-written range
 * join of the same staged Parquet with the same dimension (`CREATE TABLE ... AS SELECT ... LEFT JOIN ... ON key
 * AND valid_from <= t AND t < COALESCE(valid_to, 'infinity')`: written with `valid_to IS NULL OR` it is a
 * nested-loop join that does not finish at this size). dimsync does more: the grain checks (NULL grain, NULL event time,
 * duplicate grain), the unknown member, the ledger row and the report; both resolve every fact to the same
 * surrogate key (checked). Each measured load runs in a child process of its own on a fresh copy of the
 * dimension's database, with the same DuckDB memory limit and threads, so its wall time and peak RSS are its own;
 * the two variants alternate, median of BENCH_REPEATS (default 3). BENCH_FACTS and BENCH_KEYS scale it down.
 */
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'

import { readParquetColumns } from '../lib/adapters/duckdb/parquet-schema.ts'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { DuckDbWarehouse } from '../lib/adapters/warehouse/duckdb-warehouse.ts'
import { loadFactBatch } from '../lib/use-cases/load-fact-batch.ts'
import { ordersFact } from '../test/support/fact-specs.ts'
import { tableSpec } from '../test/support/table-spec-builder.ts'
import { BENCH_ROOT, CHILD_ENV, measureProcess, median, STAGED_PART_OPTIONS, timed, TMP } from './support.ts'

const FACTS = Number(process.env.BENCH_FACTS ?? 10_000_000)
const KEYS = Number(process.env.BENCH_KEYS ?? 1_000_000)
const VERSIONS = 10
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3)
const MEMORY_LIMIT = process.env.BENCH_MEMORY_LIMIT ?? '4GB'
const THREADS = 2
const SCRIPT = join(BENCH_ROOT, 'facts.ts')
const BATCH_ID = '20240601T000000.000Z-facts1'

type Variant = 'dimsync' | 'rangeJoin'

const customers = tableSpec()
const orders = ordersFact()

/** Version v (0-9) of every key starts 30 days after the previous one; the last is open. */
const versionStart = (v: string) =>
  `TIMESTAMPTZ '2020-01-01 00:00:00+00' + TO_DAYS(CAST((${v}) * 30 AS INTEGER))`

async function withDuckDb<T>(path: string, work: (run: (sql: string) => Promise<unknown>) => Promise<T>) {
  const instance = await DuckDBInstance.create(path, { memory_limit: MEMORY_LIMIT, threads: String(THREADS) })
  const connection = await instance.connect()
  try {
    await connection.run(`SET TimeZone = 'UTC'`)
    return await work(async (sql) => (await connection.runAndReadAll(sql)).getRowObjectsJson())
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

/** The dimension as dimsync stores it (its column names and types), written directly: 10 versions per key. */
async function buildDimension(db: string): Promise<void> {
  await withDuckDb(db, async (run) => {
    await run(
      `CREATE TABLE main.dim_customer AS\n` +
        `SELECT CAST(k * ${VERSIONS} + v + 1 AS BIGINT) AS dimsync_sk, CAST(k + 1 AS BIGINT) AS customer_id,\n` +
        `  'region_' || ((k + v) % 7) AS region, ${versionStart('v')} AS valid_from,\n` +
        `  CASE WHEN v = ${VERSIONS - 1} THEN NULL ELSE ${versionStart('v + 1')} END AS valid_to,\n` +
        `  v = ${VERSIONS - 1} AS is_current, FALSE AS is_deleted, md5(CAST(k * 10 + v AS VARCHAR)) AS dimsync_row_hash,\n` +
        `  'bench' AS dimsync_batch_id\n` +
        `FROM range(${KEYS}) a(k), range(${VERSIONS}) b(v)`,
    )
    // The measured loads run on copies of the file: nothing may be left in the write-ahead log.
    await run('CHECKPOINT')
  })
}

/** One staged batch of facts: order i of customer (i * 7919 mod 1.01 × keys) + 1 at a time within the versions. */
async function stageFacts(staging: LocalStagingStore): Promise<string> {
  await staging.deleteBatch(orders.name, BATCH_ID).catch(() => undefined)
  const writer = await staging.beginBatch(orders.name, BATCH_ID)
  const part = join(writer.scratchDir, 'part.parquet')
  const span = VERSIONS * 30 * 86_400
  await withDuckDb(':memory:', async (run) => {
    await run(
      `COPY (SELECT CAST(i AS BIGINT) AS order_id,\n` +
        `  CAST((i * 7919) % ${Math.floor(KEYS * 1.01)} + 1 AS BIGINT) AS customer_id,\n` +
        `  TIMESTAMPTZ '2020-01-01 00:00:00+00' + TO_SECONDS(CAST((i * 104729) % ${span} AS BIGINT)) AS ordered_at,\n` +
        `  CAST(i % 1000 AS DECIMAL(10,2)) AS amount\n` +
        `FROM range(1, ${FACTS + 1}) r(i)) TO '${part}' (${STAGED_PART_OPTIONS})`,
    )
  })
  const columns = await readParquetColumns([part])
  await writer.addPart(part, FACTS)
  await writer.commit({
    table: orders.name,
    batchId: BATCH_ID,
    extractedAt: '2024-06-01T00:00:00Z',
    mode: 'incremental',
    rowCount: FACTS,
    columns,
    sourceDescription: 'generated',
  })
  return join(staging.root, orders.name, BATCH_ID)
}

interface ChildResult {
  readonly seconds: number
  readonly facts: number
  readonly unknown: number
  readonly skSum: string
}

/** Child process: one load of the staged batch into `db`; prints seconds and what was stored. */
async function loadChild(variant: Variant, db: string, stagingRoot: string): Promise<void> {
  const checksum = `SELECT COUNT(*) AS facts, SUM(CASE WHEN customer_sk = 0 THEN 1 ELSE 0 END) AS unknown, CAST(SUM(customer_sk) AS VARCHAR) AS sk_sum FROM main.fact_orders`
  if (variant === 'dimsync') {
    const staging = new LocalStagingStore({ root: stagingRoot })
    const warehouse = await DuckDbWarehouse.open({ path: db, memoryLimit: MEMORY_LIMIT, threads: THREADS })
    try {
      const { seconds, result } = await timed(() =>
        loadFactBatch(
          { warehouse, staging },
          { fact: orders, dimensions: [customers], schema: 'main', batchId: BATCH_ID, now: new Date() },
        ),
      )
      if (result.status !== 'loaded') throw new Error(`dimsync: batch ${result.status}`)
      const [row] = await warehouse.query(checksum)
      print(seconds, row!)
    } finally {
      await warehouse.close()
    }
    return
  }
  const staging = new LocalStagingStore({ root: stagingRoot })
  const batch = await staging.openBatch(orders.name, BATCH_ID)
  try {
    await withDuckDb(db, async (run) => {
      const parts = batch.partPaths.map((p) => `'${p}'`).join(', ')
      const { seconds } = await timed(() =>
        run(
          `CREATE TABLE main.fact_orders AS\n` +
            `SELECT f.order_id, f.customer_id, f.ordered_at, f.amount, COALESCE(d.dimsync_sk, 0) AS customer_sk\n` +
            `FROM read_parquet([${parts}]) f\n` +
            `LEFT JOIN main.dim_customer d ON d.customer_id = f.customer_id AND d.valid_from <= f.ordered_at\n` +
            `  AND f.ordered_at < COALESCE(d.valid_to, TIMESTAMPTZ 'infinity')`,
        ),
      )
      const [row] = (await run(checksum)) as Record<string, unknown>[]
      print(seconds, row!)
    })
  } finally {
    await batch.release()
  }
}

function print(seconds: number, row: Record<string, unknown>): void {
  const out: ChildResult = {
    seconds,
    facts: Number(row.facts),
    unknown: Number(row.unknown),
    skSum: String(row.sk_sum),
  }
  console.log(JSON.stringify(out))
}

function measure(variant: Variant, db: string, stagingRoot: string) {
  const run = measureProcess(
    process.execPath,
    ['--import', 'tsx', SCRIPT, 'load', variant, db, stagingRoot],
    {
      cwd: join(BENCH_ROOT, '..'),
      env: CHILD_ENV,
    },
  )
  const child = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as ChildResult
  if (child.facts !== FACTS) throw new Error(`${variant}: ${child.facts} facts stored, expected ${FACTS}`)
  return { loadSeconds: child.seconds, processSeconds: run.seconds, peakRssMb: run.peakRssMb, child }
}

export async function runFactsBenchmark(): Promise<Record<string, unknown>> {
  mkdirSync(TMP, { recursive: true })
  const stagingRoot = join(TMP, 'facts-staging')
  rmSync(stagingRoot, { recursive: true, force: true })
  const staging = new LocalStagingStore({ root: stagingRoot })
  const base = join(TMP, 'facts-base.duckdb')
  const work = join(TMP, 'facts-work.duckdb')
  for (const f of [base, `${base}.wal`]) rmSync(f, { force: true })
  console.log(`facts: building ${KEYS} keys x ${VERSIONS} versions and staging ${FACTS} facts…`)
  const prepared = await timed(async () => {
    await buildDimension(base)
    await stageFacts(staging)
  })
  console.log(`facts: prepared in ${prepared.seconds.toFixed(1)} s`)
  const runs: Record<Variant, ReturnType<typeof measure>[]> = { dimsync: [], rangeJoin: [] }
  const loads: number[][] = []
  for (let i = 0; i < REPEATS; i++) {
    loads.push(loadavg())
    for (const variant of ['dimsync', 'rangeJoin'] as const) {
      for (const f of [work, `${work}.wal`]) rmSync(f, { force: true })
      copyFileSync(base, work)
      const r = measure(variant, work, stagingRoot)
      runs[variant].push(r)
      console.log(
        `facts: run ${i + 1} ${variant}: load ${r.loadSeconds.toFixed(2)} s, process ${r.processSeconds.toFixed(2)} s, ` +
          `peak RSS ${r.peakRssMb.toFixed(0)} MB, unknown ${r.child.unknown}`,
      )
    }
  }
  const [first] = runs.dimsync
  for (const r of [...runs.dimsync, ...runs.rangeJoin])
    if (r.child.skSum !== first!.child.skSum || r.child.unknown !== first!.child.unknown)
      throw new Error(
        `the two variants resolved different surrogate keys: ${JSON.stringify(r.child)} vs ${JSON.stringify(first!.child)}`,
      )
  if (process.env.BENCH_KEEP === undefined) {
    for (const f of [work, `${work}.wal`, base, `${base}.wal`]) if (existsSync(f)) rmSync(f)
    rmSync(stagingRoot, { recursive: true, force: true })
  }
  const summary = (variant: Variant) => ({
    loadSeconds: median(runs[variant].map((r) => r.loadSeconds)),
    processSeconds: median(runs[variant].map((r) => r.processSeconds)),
    peakRssMb: median(runs[variant].map((r) => r.peakRssMb)),
    runs: runs[variant].map((r) => ({
      loadSeconds: r.loadSeconds,
      processSeconds: r.processSeconds,
      peakRssMb: r.peakRssMb,
    })),
  })
  const dimsync = summary('dimsync')
  const rangeJoin = summary('rangeJoin')
  return {
    facts: FACTS,
    keys: KEYS,
    versionsPerKey: VERSIONS,
    unknownFacts: first!.child.unknown,
    memoryLimit: MEMORY_LIMIT,
    threads: THREADS,
    repeats: REPEATS,
    dimsyncLoadFactBatch: dimsync,
    handWrittenRangeJoin: rangeJoin,
    dimsyncToRangeJoinTimeRatio: dimsync.loadSeconds / rangeJoin.loadSeconds,
    dimsyncToRangeJoinPeakRssRatio: dimsync.peakRssMb / rangeJoin.peakRssMb,
    loadAverageBeforeEachRound: loads,
    loadAverageAfter: loadavg(),
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === 'load') {
    const [variant, db, stagingRoot] = process.argv.slice(3) as [Variant, string, string]
    await loadChild(variant, db, stagingRoot)
  } else {
    const result = await runFactsBenchmark()
    mkdirSync(join(BENCH_ROOT, 'results'), { recursive: true })
    writeFileSync(join(BENCH_ROOT, 'results', 'facts.json'), JSON.stringify(result, null, 2) + '\n')
    console.log(JSON.stringify(result, null, 2))
  }
}
