/**
 * Where a merge's time goes: one dimsync merge on the benchmark data with every statement timed and profiled by
 * DuckDB's query profiler (JSON, one file per statement), written to bench/profiles/<merge>/ with a summary.md
 * (statements by time, each with its three most expensive operators). A development aid, checked in so that the
 * next change can see where time goes:
 *   npx tsx bench/profile-merge.ts first-load   (a 1,000,000-key full extract into an empty dimension)
 *   npx tsx bench/profile-merge.ts change       (5% changed, 1% new, 0.5% deleted keys on a 1,000,000-key dimension)
 *   npx tsx bench/profile-merge.ts change-depth10  (the same batch on the dimension with 10 versions per key)
 */
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { DuckDbWarehouse } from '../lib/adapters/warehouse/duckdb-warehouse.ts'
import { DEFAULT_WAREHOUSE_MEMORY_LIMIT } from '../lib/runtime/local-deps.ts'
import { duckDbDialect } from '../lib/sql/duckdb/duckdb-dialect.ts'
import { mergeBatch } from '../lib/use-cases/merge-batch.ts'
import { stageFirstLoad } from './first-load.ts'
import { benchTable, prepareMergeBenchmark } from './merge.ts'
import { BENCH_ROOT, TMP } from './support.ts'

const which = process.argv[2] ?? 'first-load'
const MEMORY_LIMIT = process.env.DIMSYNC_DUCKDB_MEMORY_LIMIT ?? DEFAULT_WAREHOUSE_MEMORY_LIMIT
const out = join(BENCH_ROOT, 'profiles', which)
rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
mkdirSync(TMP, { recursive: true })

const work = join(TMP, 'profile.duckdb')
for (const f of [work, `${work}.wal`]) rmSync(f, { force: true })
let staging: LocalStagingStore
let batchId: string
if (which === 'first-load') {
  staging = new LocalStagingStore({ root: join(TMP, 'first-load-staging') })
  await stageFirstLoad(staging, Number(process.env.BENCH_KEYS ?? 1_000_000))
  batchId = 'first-load'
} else if (which === 'change' || which === 'change-depth10') {
  const prepared = await prepareMergeBenchmark()
  staging = prepared.staging
  batchId = prepared.batchId
  copyFileSync(which === 'change' ? prepared.base1 : prepared.base10, work)
} else throw new Error(`unknown merge ${which}: first-load, change or change-depth10`)

const warehouse = await DuckDbWarehouse.open({ path: work, memoryLimit: MEMORY_LIMIT })
const statements: { label: string; ms: number; file: string; rssBeforeMb: number; rssPeakMb: number }[] = []
/** The process's resident memory now (VmRSS), sampled while each statement runs (DuckDB runs it off the JS thread). */
const residentMb = () =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 1024
const profiled = async (label: string, run: () => Promise<void>) => {
  const file = `${String(statements.length + 1).padStart(2, '0')}-${label.replace(/[^a-z0-9]+/gi, '-')}.json`
  await warehouse.query(`SET profiling_output = ${duckDbDialect.stringLiteral(join(out, file))}`)
  const rssBeforeMb = residentMb()
  let rssPeakMb = rssBeforeMb
  const sampler = setInterval(() => (rssPeakMb = Math.max(rssPeakMb, residentMb())), 10)
  const t = performance.now()
  try {
    await run()
  } finally {
    clearInterval(sampler)
  }
  rssPeakMb = Math.max(rssPeakMb, residentMb())
  statements.push({ label, ms: performance.now() - t, file, rssBeforeMb, rssPeakMb })
}
await warehouse.query(`SET enable_profiling = 'json'`)
await warehouse.query(`SET profiling_mode = 'detailed'`)
const originalTransaction = warehouse.transaction.bind(warehouse)
warehouse.transaction = (fn, options) =>
  originalTransaction(
    (tx) => fn({ query: tx.query, execute: (s) => profiled(s.label, () => tx.execute(s)) }),
    options,
  )
const originalLoad = warehouse.loadStaging.bind(warehouse)
let columns: Awaited<ReturnType<typeof originalLoad>> = []
warehouse.loadStaging = async (paths) => {
  await profiled('load staged parts', async () => void (columns = await originalLoad(paths)))
  return columns
}
const t = performance.now()
await mergeBatch({ warehouse, staging }, { table: benchTable, schema: 'main', batchId, now: new Date() })
const total = performance.now() - t
await warehouse.close()

interface ProfileNode {
  operator_name?: string
  operator_timing?: number
  extra_info?: Record<string, unknown>
  children?: ProfileNode[]
}
function operators(node: ProfileNode, acc: { name: string; seconds: number }[] = []) {
  if (node.operator_name) acc.push({ name: node.operator_name.trim(), seconds: node.operator_timing ?? 0 })
  for (const child of node.children ?? []) operators(child, acc)
  return acc
}
const lines = [
  `# Profile: ${which} merge`,
  '',
  `\`npx tsx bench/profile-merge.ts ${which}\`, DuckDB memory limit ${MEMORY_LIMIT}, ${new Date().toISOString()}.`,
  `mergeBatch took ${(total / 1000).toFixed(2)} s; its statements (the rest is reading the manifest, verifying`,
  'checksums, DDL and queries outside the transaction):',
  '',
  'Resident memory of this process (which also prepared the data) before each statement and its peak during it.',
  '',
  '| ms | statement | top operators (s) | RSS before → peak (MB) | profile |',
  '| --: | --- | --- | --: | --- |',
]
for (const s of [...statements].sort((a, b) => b.ms - a.ms)) {
  let top: string
  try {
    const ops = operators(JSON.parse(readFileSync(join(out, s.file), 'utf8')) as ProfileNode)
    top = ops
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, 3)
      .map((o) => `${o.name} ${o.seconds.toFixed(2)}`)
      .join(', ')
  } catch {
    top = '(no profile)'
  }
  lines.push(
    `| ${s.ms.toFixed(0)} | ${s.label} | ${top} | ${s.rssBeforeMb.toFixed(0)} → ${s.rssPeakMb.toFixed(0)} | ${s.file} |`,
  )
}
writeFileSync(join(out, 'summary.md'), lines.join('\n') + '\n')
console.log(lines.join('\n'))
for (const f of [work, `${work}.wal`]) rmSync(f, { force: true })
