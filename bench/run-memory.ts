/**
 * `npx tsx bench/run-memory.ts`: where `dimsync run` (the real CLI process) holds its memory, by phase. A first load
 * of a generated 10-column CSV (BENCH_MEMORY_ROWS, default 1,000,000) and, when PostgreSQL answers, of a 10-column
 * table of as many rows, then a run where 5% of the rows changed, each with the defaults and with the settings to
 * compare (SETTINGS), interleaved, BENCH_REPEAT times (default 3). The resident memory of the run's largest process
 * is sampled every 25 ms (/proc) and split at the `merging batch` line: the extract's peak and the merge's peak.
 * Also the peak of `dimsync --version` (the process before any work). Writes bench/results/run-memory.json
 * (run-memory-<rows>.json for other sizes).
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import pg from 'pg'
import { BENCH_ROOT, measureProcess, median, TMP } from './support.ts'

const ROWS = Number(process.env.BENCH_MEMORY_ROWS ?? 1_000_000)
const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 3))
const PG_URL = process.env.DIMSYNC_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test'
const SCHEMA = 'dimsync_bench_memory'
const CLI = join(BENCH_ROOT, '..', 'bin', 'dimsync.mjs')
/**
 * The defaults against earlier ones, interleaved (BENCH_MEMORY_SETTINGS picks some by name, comma-separated):
 * `previousDefaults` is the warehouse at 128MB with DuckDB's own jemalloc configuration (two arenas), the defaults
 * before 2026-11-30 22:00; `jemalloc2Arenas` and `warehouse128MB` each one of the two.
 */
const ALL_SETTINGS: Record<string, Record<string, string>> = {
  defaults: {},
  previousDefaults: { DUCKDB_JE_MALLOC_CONF: '', DIMSYNC_DUCKDB_MEMORY_LIMIT: '128MB' },
  jemalloc2Arenas: { DUCKDB_JE_MALLOC_CONF: '' },
  warehouse128MB: { DIMSYNC_DUCKDB_MEMORY_LIMIT: '128MB' },
  warehouse2Threads: { DIMSYNC_DUCKDB_THREADS: '2' },
  // Every merge on one thread, first loads included: the defaults before 2026-12-02 05:30.
  warehouse1Thread: { DIMSYNC_DUCKDB_THREADS: '1' },
  warehouse104MB: { DIMSYNC_DUCKDB_MEMORY_LIMIT: '104MB' },
  warehouse80MB: { DIMSYNC_DUCKDB_MEMORY_LIMIT: '80MB' },
  // V8's own young generation (16 MiB semi-spaces), the default before 2026-12-01 04:30.
  v8YoungGeneration16MB: { NODE_OPTIONS: '--max-semi-space-size=16' },
  mmapThreshold64KiB: { MALLOC_MMAP_THRESHOLD_: '65536' },
  mmapThreshold128KiB: { MALLOC_MMAP_THRESHOLD_: '131072' },
  mmapThreshold68KiB: { MALLOC_MMAP_THRESHOLD_: '69632' },
  // The CLI of an earlier tree (BENCH_BASELINE_DIR: `git archive <commit> lib bench bin functions test/support`).
  baselineTree: {},
}
const SETTINGS = pick(ALL_SETTINGS, process.env.BENCH_MEMORY_SETTINGS ?? 'defaults,previousDefaults')
/** Which sources run (BENCH_MEMORY_SOURCES, comma-separated: file, postgres). */
const SOURCES = new Set((process.env.BENCH_MEMORY_SOURCES ?? 'file,postgres').split(','))

function baselineCli(): string {
  const dir = process.env.BENCH_BASELINE_DIR
  if (dir === undefined) throw new Error('the baselineTree setting needs BENCH_BASELINE_DIR')
  return join(dir, 'bin', 'dimsync.mjs')
}

function pick<T>(all: Record<string, T>, names: string): Record<string, T> {
  return Object.fromEntries(
    names.split(',').map((name) => {
      if (!(name in all)) throw new Error(`unknown setting ${name}; one of ${Object.keys(all).join(', ')}`)
      return [name, all[name]!]
    }),
  )
}
/** The first load, then a snapshot where every 20th row changed (5%). */
const RUNS = [
  { name: 'first', extractedAt: '2024-01-01T00:00:00Z', expect: `${ROWS} versions inserted` },
  { name: 'changed', extractedAt: '2024-02-01T00:00:00Z', expect: `${ROWS / 20} closed` },
] as const

interface PhasePeaks {
  readonly extractMb: number
  readonly mergeMb: number
  readonly seconds: number
}

/** Runs `dimsync run` in `dir` and samples the resident memory of its process tree's largest process. */
function sampledRun(
  dir: string,
  env: NodeJS.ProcessEnv,
  run: (typeof RUNS)[number],
  cli = CLI,
): Promise<PhasePeaks> {
  if (run.name === 'first') rmSync(join(dir, '.dimsync'), { recursive: true, force: true })
  const started = process.hrtime.bigint()
  const child = spawn(process.execPath, [cli, 'run', '--extracted-at', run.extractedAt], {
    cwd: dir,
    env: { ...env, CI: '1' },
  })
  const peaks = { extract: 0, merge: 0 }
  let phase: keyof typeof peaks = 'extract'
  let output = ''
  const read = (data: Buffer) => {
    output += data.toString()
    if (output.includes('merging batch')) phase = 'merge'
  }
  child.stdout.on('data', read)
  child.stderr.on('data', read)
  const rssKb = (pid: number) => {
    try {
      return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
    } catch {
      return 0 // the process ended between listing and reading
    }
  }
  const children = (pid: number) => {
    try {
      const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()
      return text === '' ? [] : text.split(/\s+/).map(Number)
    } catch {
      return []
    }
  }
  const timer = setInterval(() => {
    const tree = [child.pid!]
    for (let i = 0; i < tree.length; i++) tree.push(...children(tree[i]!))
    peaks[phase] = Math.max(peaks[phase], ...tree.map(rssKb))
  }, 25)
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('exit', (code) => {
      clearInterval(timer)
      if (code !== 0 || !output.includes(run.expect)) {
        reject(new Error(`dimsync run in ${dir} failed (${code}):\n${output.slice(-2000)}`))
        return
      }
      resolve({
        extractMb: Math.round(peaks.extract / 1024),
        mergeMb: Math.round(peaks.merge / 1024),
        seconds: Number(process.hrtime.bigint() - started) / 1e9,
      })
    })
  })
}

async function writeCsv(path: string, changed: boolean): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    await connection.run(`COPY (
      SELECT i AS customer_id, 'name_' || i AS name, 'email_' || i || '@example.com' AS email,
        CASE WHEN ${changed} AND i % 20 = 0 THEN 'moved' ELSE 'region_' || (i % 7) END AS region, 'segment_' || (i % 13) AS segment, i % 1000 AS score,
        (i % 97) * 1.5 AS balance, DATE '2020-01-01' + CAST(i % 1000 AS INTEGER) AS signup_date,
        i % 2 = 0 AS active, 'city_' || (i % 101) AS city
      FROM range(1, ${ROWS + 1}) t(i)
    ) TO '${path}' (HEADER, DELIMITER ',')`)
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

interface PostgresTable {
  /** Every 20th row's note changed (5%), or back as created. */
  change(changed: boolean): Promise<void>
  drop(): Promise<void>
}

/** The sources benchmark's 10-column table; undefined when PostgreSQL does not answer. */
async function createPostgresTable(): Promise<PostgresTable | undefined> {
  const client = new pg.Client({ connectionString: PG_URL })
  try {
    await client.connect()
  } catch {
    return undefined
  }
  await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
  await client.query(`CREATE SCHEMA ${SCHEMA}`)
  await client.query(`CREATE TABLE ${SCHEMA}.t (
    id bigint PRIMARY KEY, name text, email varchar(200), amount numeric(12,2), score double precision,
    active boolean, created_at timestamptz, updated_at timestamp, birth date, note text)`)
  await client.query(`INSERT INTO ${SCHEMA}.t SELECT g, 'name ' || g, 'user' || g || '@example.com',
    (g % 100000) / 100.0, g * 1.5, g % 2 = 0, timestamptz '2020-01-01' + g * interval '1 second',
    timestamp '2021-01-01' + g * interval '1.000123 second', date '1970-01-01' + (g % 20000),
    ${NOTE('g')} FROM generate_series(1, ${ROWS}) g`)
  await client.query(`VACUUM ANALYZE ${SCHEMA}.t`)
  return {
    change: async (changed) => {
      await client.query(
        `UPDATE ${SCHEMA}.t SET note = ${changed ? `'changed'` : NOTE('id')} WHERE id % 20 = 0`,
      )
    },
    drop: async () => {
      await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
      await client.end()
    },
  }
}

const NOTE = (id: string) => `CASE WHEN ${id} % 3 = 0 THEN NULL ELSE 'note ' || md5(${id}::text) END`

const uptime = () => spawnSync('uptime', { encoding: 'utf8' }).stdout.trim()

const root = join(TMP, 'run-memory')
rmSync(root, { recursive: true, force: true })
const fileDir = join(root, 'file')
mkdirSync(join(fileDir, 'data'), { recursive: true })
writeFileSync(
  join(fileDir, 'dimsync.yaml'),
  'version: 1\ntables:\n  - name: customers\n    source: { type: file, path: data/customers.csv }\n    key: customer_id\n',
)
const csv = join(fileDir, 'data', 'customers.csv')
const table = SOURCES.has('postgres') ? await createPostgresTable() : undefined
const sources: Record<
  string,
  { dir: string; env: NodeJS.ProcessEnv; change: (changed: boolean) => Promise<void> }
> = {}
if (SOURCES.has('file'))
  sources.file = { dir: fileDir, env: process.env, change: (changed) => writeCsv(csv, changed) }
if (table) {
  const dir = join(root, 'postgres')
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'dimsync.yaml'),
    `version: 1\ntables:\n  - name: t\n    source: { type: postgres, url_env: BENCH_URL, table: ${SCHEMA}.t }\n    key: id\n`,
  )
  sources.postgres = { dir, env: { ...process.env, BENCH_URL: PG_URL }, change: table.change }
}
const loadBefore = uptime()
try {
  const runs: Record<string, (PhasePeaks | { failed: string })[]> = {}
  const idle: number[] = []
  for (let r = 0; r < REPEAT; r++) {
    idle.push(measureProcess(process.execPath, [CLI, '--version'], { cwd: root }).peakRssMb)
    for (const [source, { dir, env, change }] of Object.entries(sources)) {
      for (const [name, settings] of Object.entries(SETTINGS)) {
        for (const run of RUNS) {
          await change(run.name === 'changed')
          // A run out of memory with one setting must not lose the figures of the others.
          const cli = name === 'baselineTree' ? baselineCli() : CLI
          const peaks = await sampledRun(dir, { ...env, ...settings }, run, cli).catch((error: unknown) => {
            const lines = String(error instanceof Error ? error.message : error).split('\n')
            return { failed: lines.find((l) => l.startsWith('dimsync:')) ?? lines[0]! }
          })
          ;(runs[`${source} ${run.name} ${name}`] ??= []).push(peaks)
          console.log(`${source} ${run.name} ${name} run ${r + 1}: ${JSON.stringify(peaks)}`)
        }
      }
    }
  }
  const summary = Object.fromEntries(
    Object.entries(runs).map(([key, all]) => {
      const list = all.filter((p): p is PhasePeaks => !('failed' in p))
      if (list.length === 0) return [key, { runs: all }]
      return [
        key,
        {
          extractMb: median(list.map((p) => p.extractMb)),
          mergeMb: median(list.map((p) => p.mergeMb)),
          peakMb: Math.max(...list.map((p) => Math.max(p.extractMb, p.mergeMb))),
          seconds: median(list.map((p) => p.seconds)),
          runs: all,
        },
      ]
    }),
  )
  const result = {
    rows: ROWS,
    repeats: REPEAT,
    versionCommandPeakMb: Math.round(median(idle)),
    targetPeakMb: 300,
    settings: SETTINGS,
    summary,
    load: { before: loadBefore, after: uptime() },
    machine: { node: process.version, at: new Date().toISOString() },
  }
  mkdirSync(join(BENCH_ROOT, 'results'), { recursive: true })
  const name = ROWS === 1_000_000 ? 'run-memory.json' : `run-memory-${ROWS}.json`
  writeFileSync(join(BENCH_ROOT, 'results', name), JSON.stringify(result, null, 2) + '\n')
  console.log(JSON.stringify(result, null, 2))
} finally {
  await table?.drop()
  rmSync(root, { recursive: true, force: true })
}
