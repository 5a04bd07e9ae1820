/**
 * `npx tsx bench/sources.ts`: extract of a 10-column table from PostgreSQL and from MariaDB/MySQL into staged
 * Parquet parts, against the server's raw stream measured in the same run:
 * - PostgreSQL: `COPY (SELECT ...) TO STDOUT` read with pg-copy-streams and thrown away;
 * - MySQL: a plain unbuffered SELECT read by mysql2 (the same driver), rows thrown away;
 * - the servers' own clients, the wire and server limit: `psql -c "\copy (SELECT * FROM t) TO /dev/null"` and
 *   `mariadb --quick --batch -e 'SELECT * FROM t' > /dev/null`;
 * and `dimsync run` of the whole table (extract, stage, merge into a new DuckDB dimension) against the client dump.
 * `stagedLoad`: the extract, then its staged parts loaded into a new DuckDB file at the warehouse's defaults, as a
 * bare copy and as the hand-written first load: the floor of target 3 for any pipeline that stages then loads.
 * Each measurement runs in a fresh child process that reports its wall time and peak RSS
 * (`process.resourceUsage().maxRSS`). Also: 1M vs 3M rows (peak RSS must not grow), 4 parallel chunks vs 1, and
 * the same extract in 10 passes (the AWS function near its time limit: a snapshot and a count per key range).
 * Creates and drops its own schema/database. Writes bench/results/sources.json.
 * BENCH_ROWS (default 1,000,000), BENCH_BIG_ROWS (3,000,000), BENCH_SERVERS=postgres,mysql, BENCH_REPEAT (3).
 * BENCH_SOURCES_SCHEMA: the schema/database created and dropped (default dimsync_bench_sources).
 * BENCH_SOURCES_TABLE=schema.t: measure an existing table of BENCH_ROWS rows (read only: nothing created or dropped).
 * The extract stages as the CLI does for its default warehouse (DuckDB: Parquet 2.0 encodings); `onePortable` stages
 * for BigQuery (Parquet 1.0 encodings, lib/core/staged-parquet.ts).
 * `two` and `oneYoung16`: the extract with two converter threads, and with V8's own young generation (16 MiB).
 * BENCH_BASELINE_DIR: a copy of an earlier tree (`git archive <commit> lib bench bin functions test/support`);
 * plan entries `baseOne` and `baseRun` measure its extract and its `dimsync run` interleaved with this tree's.
 */
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import mysql from 'mysql2'
import mysqlPromise from 'mysql2/promise'
import pg from 'pg'
import { to as copyTo } from 'pg-copy-streams'

import { MysqlSource } from '../lib/adapters/source/mysql-source.ts'
import { PostgresSource } from '../lib/adapters/source/postgres-source.ts'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../lib/adapters/state/local-state-store.ts'
import { extractPass } from '../lib/use-cases/extract-pass.ts'
import { DEFAULT_WAREHOUSE_MEMORY_LIMIT } from '../lib/runtime/local-deps.ts'
import { stagedParquetVersion } from '../lib/core/staged-parquet.ts'
import { duckDbDialect } from '../lib/sql/duckdb/duckdb-dialect.ts'
import type { StagedColumn } from '../lib/core/batch.ts'
import type { TableSpec } from '../lib/core/table-spec.ts'
import type { Source } from '../lib/ports/source.ts'
import { handWrittenFirstLoadSql } from './first-load.ts'
import { BENCH_ROOT, CHILD_ENV, measureProcess, TMP } from './support.ts'
import { tableSpec } from '../test/support/table-spec-builder.ts'

const PG_URL = process.env.DIMSYNC_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test'
const MYSQL_URL = process.env.DIMSYNC_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000)
const BIG_ROWS = Number(process.env.BENCH_BIG_ROWS ?? 3_000_000)
const SERVERS = (process.env.BENCH_SERVERS ?? 'postgres,mysql').split(',')
const SCHEMA = process.env.BENCH_SOURCES_SCHEMA ?? 'dimsync_bench_sources'
const EXISTING_TABLE = process.env.BENCH_SOURCES_TABLE
const BASELINE_DIR = process.env.BENCH_BASELINE_DIR
/** Passes of the multi-pass extract measured on the small table. */
const PASSES = 10
/** Plan entries that measure an extract under other settings than the CLI's. */
const EXTRA_ENV: Record<string, NodeJS.ProcessEnv> = {
  two: { BENCH_DUCKDB_THREADS: '2' },
  oneYoung16: { NODE_OPTIONS: '--max-semi-space-size=16' },
  onePortable: { BENCH_STAGED_FOR: 'bigquery' },
}
/** Each measurement is repeated (BENCH_REPEAT, default 3); the machine's noise is larger than the effects. */
const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 3))
/** Which measurements to make (BENCH_SOURCES_PLAN=cli,one,run,… ; default all). */
const PLAN = (
  process.env.BENCH_SOURCES_PLAN ?? 'cli,raw,one,stagedLoad,four,ranges,passes,big,cliBig,run,runBig'
).split(',')
const CLI = join(BENCH_ROOT, '..', 'bin', 'dimsync.mjs')
/** The baseline tree's bench folder (its own sources.ts measures its own lib). */
const BASE_BENCH = BASELINE_DIR === undefined ? undefined : join(BASELINE_DIR, 'bench')

type Server = 'postgres' | 'mysql'
/**
 * `ranges`: the extract of the AWS function with time to spare (10 key ranges, each counted, one pass);
 * `passes`: the same stopped after every range (10 passes, each with its own snapshot).
 */
type Mode = 'raw' | 'cli' | 'extract' | 'ranges' | 'passes' | 'stagedLoad'

interface ChildReport {
  readonly rows: number
  readonly seconds: number
  readonly maxRssMb: number
  /** CPU time of the measuring process (user + system), all its threads: less load-sensitive than wall time. */
  readonly cpuSeconds?: number
  /** `stagedLoad`: the staged batch copied into a new DuckDB table, and loaded by the hand-written first load. */
  readonly copySeconds?: number
  readonly handWrittenSeconds?: number
}

if (process.argv[2] === '--child') {
  // Only the measurement's own output goes to stdout.
  await child(
    process.argv[3] as Server,
    process.argv[4] as Mode,
    process.argv[5]!,
    Number(process.argv[6] ?? 1),
  )
} else {
  await parent()
}

/** One measurement: prints a ChildReport as JSON on stdout. */
async function child(server: Server, mode: Mode, table: string, chunks: number): Promise<void> {
  const started = process.hrtime.bigint()
  const cpuStarted = process.cpuUsage()
  let rows: number | undefined
  if (mode === 'raw') rows = server === 'postgres' ? await rawCopy(table) : await rawSelect(table)
  else if (mode === 'cli') rows = cliDump(server, table, chunks)
  else if (mode === 'passes' || mode === 'ranges')
    rows = await extractInPasses(server, table, mode === 'passes')
  let loads: { copySeconds: number; handWrittenSeconds: number } | undefined
  if (mode === 'stagedLoad')
    rows = await extract(server, table, chunks, async (staged) => void (loads = await loadStaged(staged)))
  else if (mode === 'extract') rows = await extract(server, table, chunks)
  const seconds =
    Number(process.hrtime.bigint() - started) / 1e9 -
    (loads ? loads.copySeconds + loads.handWrittenSeconds : 0)
  const cpu = process.cpuUsage(cpuStarted)
  const report: ChildReport = {
    rows: rows!,
    seconds,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    ...loads,
  }
  process.stdout.write(JSON.stringify(report))
}

async function rawCopy(table: string): Promise<number> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  const stream = client.query(copyTo(`COPY (SELECT * FROM ${table}) TO STDOUT WITH (FORMAT csv)`))
  for await (const piece of stream as AsyncIterable<Buffer>) void piece
  await client.end()
  return stream.rowCount
}

/**
 * The server's own client dumping the table (the wire and server limit): `psql -c "\copy (SELECT * FROM t) TO
 * /dev/null"` or `mariadb --quick --batch -e 'SELECT * FROM t' > /dev/null`. Returns `rows` (the table's size).
 */
function cliDump(server: Server, table: string, rows: number): number {
  const devNull = openSync('/dev/null', 'w')
  try {
    const mysqlUrl = new URL(MYSQL_URL)
    const run =
      server === 'postgres'
        ? spawnSync('psql', [PG_URL, '-X', '-q', '-c', `\\copy (SELECT * FROM ${table}) TO '/dev/null'`], {
            stdio: ['ignore', devNull, 'inherit'],
          })
        : spawnSync(
            'mariadb',
            [
              '--quick',
              '--batch',
              `--host=${mysqlUrl.hostname}`,
              `--port=${mysqlUrl.port || '3306'}`,
              `--user=${decodeURIComponent(mysqlUrl.username)}`,
              '-e',
              `SELECT * FROM ${table}`,
            ],
            { stdio: ['ignore', devNull, 'inherit'] },
          )
    if (run.status !== 0) throw new Error(`${server} client dump of ${table} failed (${run.status})`)
    return rows
  } finally {
    closeSync(devNull)
  }
}

async function rawSelect(table: string): Promise<number> {
  const connection = mysql.createConnection({
    uri: MYSQL_URL,
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
  })
  let rows = 0
  await new Promise<void>((resolve, reject) => {
    connection
      .query({ sql: `SELECT * FROM ${table}`, rowsAsArray: true })
      .on('result', () => rows++)
      .on('error', reject)
      .on('end', () => resolve())
  })
  connection.end()
  return rows
}

function benchSource(server: Server): Source {
  const env = { BENCH_URL: server === 'postgres' ? PG_URL : MYSQL_URL }
  const tuning = {
    ...(process.env.BENCH_DUCKDB_THREADS ? { duckdbThreads: Number(process.env.BENCH_DUCKDB_THREADS) } : {}),
    ...(process.env.BENCH_SPOOL_MB ? { spoolBytes: Number(process.env.BENCH_SPOOL_MB) << 20 } : {}),
    ...(process.env.BENCH_ROW_MB ? { maxRowBytes: Number(process.env.BENCH_ROW_MB) << 20 } : {}),
    // Staged as the CLI stages for its default warehouse (DuckDB), or for BigQuery (BENCH_STAGED_FOR=bigquery).
    parquetVersion: stagedParquetVersion(process.env.BENCH_STAGED_FOR === 'bigquery' ? 'bigquery' : 'duckdb'),
  }
  return server === 'postgres' ? new PostgresSource({ env, ...tuning }) : new MysqlSource({ env, ...tuning })
}

function benchSpec(server: Server, table: string, extra: { chunks?: number; sliceRows?: number }): TableSpec {
  return tableSpec({
    name: 'bench',
    source: { type: server, urlEnv: 'BENCH_URL', table, ...extra },
    target: 'dim_bench',
    key: ['id'],
  })
}

/**
 * The extract function's passes in one process (a warm container); with `stopEachRound` each pass stops after
 * one round of ranges, else the time budget never runs out.
 */
async function extractInPasses(server: Server, table: string, stopEachRound: boolean): Promise<number> {
  const root = await mkdtemp(join(TMP, 'sources-'))
  try {
    const deps = {
      staging: new LocalStagingStore({ root: join(root, 'staging') }),
      state: new LocalStateStore({ root: join(root, 'state') }),
      openSource: () => benchSource(server),
    }
    const spec = benchSpec(server, table, { sliceRows: Math.ceil(ROWS / PASSES) })
    const request = {
      batchId: 'b1',
      extractedAt: new Date(),
      timeLeftMs: () => (stopEachRound ? 0 : Number.MAX_SAFE_INTEGER),
    }
    let pass = await extractPass(deps, spec, request)
    while (!pass.complete) pass = await extractPass(deps, spec, { ...request, resume: true })
    return pass.manifest.rowCount
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

async function extract(
  server: Server,
  table: string,
  chunks: number,
  thenLoad?: (staged: { parts: string[]; columns: readonly StagedColumn[] }) => Promise<void>,
): Promise<number> {
  const root = await mkdtemp(join(TMP, 'sources-'))
  try {
    const staging = new LocalStagingStore({ root })
    const source = benchSource(server)
    const spec = benchSpec(server, table, { chunks })
    const writer = await staging.beginBatch('bench', 'b1')
    const result = await source.extract({
      table: spec,
      batchId: 'b1',
      extractedAt: new Date(),
      writer,
      onProgress: () => undefined,
    })
    const manifest = await writer.commit({
      table: 'bench',
      batchId: 'b1',
      extractedAt: new Date().toISOString(),
      mode: 'full',
      rowCount: result.rows,
      columns: result.columns,
      sourceDescription: result.sourceDescription,
    })
    if (thenLoad !== undefined) {
      const parts = manifest.parts.map((part) => join(root, 'bench', 'b1', part.name))
      await thenLoad({ parts, columns: result.columns })
    }
    return result.rows
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

/**
 * What any pipeline that stages its extract then loads it pays after the wire, at the warehouse's defaults (its
 * memory limit, one thread), each into a new DuckDB file: the staged parts copied into a table as they are, and the
 * hand-written first load of bench/first-load.ts (surrogate keys in key order, the row hash, the metadata columns)
 * that target 1 compares the merge with.
 */
async function loadStaged(staged: {
  parts: string[]
  columns: readonly StagedColumn[]
}): Promise<{ copySeconds: number; handWrittenSeconds: number }> {
  const files = staged.parts.map((p) => duckDbDialect.stringLiteral(p)).join(', ')
  const timedLoad = async (sql: string) => {
    const path = join(TMP, 'sources-staged-load.duckdb')
    rmSync(path, { force: true })
    rmSync(`${path}.wal`, { force: true })
    const instance = await DuckDBInstance.create(path, {
      memory_limit: DEFAULT_WAREHOUSE_MEMORY_LIMIT,
      threads: '1',
    })
    const connection = await instance.connect()
    try {
      const started = performance.now()
      await connection.run(sql)
      return (performance.now() - started) / 1000
    } finally {
      connection.closeSync()
      instance.closeSync()
      rmSync(path, { force: true })
    }
  }
  const copySeconds = await timedLoad(`CREATE TABLE copied AS SELECT * FROM read_parquet([${files}])`)
  const handWrittenSeconds = await timedLoad(
    handWrittenFirstLoadSql('dim_bench', staged.parts, 'id', staged.columns),
  )
  return { copySeconds, handWrittenSeconds }
}

/**
 * The floor of target 3 for a pipeline that stages then loads (medians of the repeats): the server's own client
 * dump plus a bare copy of the staged parts (no keys, no hash), and this extract plus the hand-written first load.
 */
function stagedLoadFloor(reports: readonly ChildReport[], clientDump: ChildReport) {
  const middle = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  const extractSeconds = middle(reports.map((r) => r.seconds))
  const copySeconds = middle(reports.map((r) => r.copySeconds!))
  const handWrittenSeconds = middle(reports.map((r) => r.handWrittenSeconds!))
  const ratio = (seconds: number) => Number((seconds / clientDump.seconds).toFixed(2))
  return {
    extractSeconds,
    copySeconds,
    handWrittenSeconds,
    clientDumpAndCopyRatioToClientDump: ratio(clientDump.seconds + copySeconds),
    extractAndHandWrittenRatioToClientDump: ratio(extractSeconds + handWrittenSeconds),
  }
}

/**
 * `dimsync run` (the real CLI process) of the whole table into a new DuckDB dimension: extract, stage, merge. Wall
 * time and peak RSS (GNU time).
 */
function dimsyncRun(server: Server, table: string, rows: number, cli = CLI): ChildReport {
  const dir = join(TMP, `sources-run-${server}`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'dimsync.yaml'),
    `version: 1\ntables:\n  - name: bench\n    source: { type: ${server}, url_env: BENCH_URL, table: ${table} }\n    key: id\n`,
  )
  try {
    const env = { ...CHILD_ENV, CI: '1', BENCH_URL: server === 'postgres' ? PG_URL : MYSQL_URL }
    const run = measureProcess(process.execPath, [cli, 'run'], { cwd: dir, env })
    if (!run.stdout.includes(`${rows} versions inserted`)) throw new Error(`unexpected run: ${run.stdout}`)
    return { rows, seconds: run.seconds, maxRssMb: run.peakRssMb }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function measure(
  server: Server,
  mode: Mode,
  table: string,
  chunks = 1,
  benchDir = BENCH_ROOT,
  env: NodeJS.ProcessEnv = {},
): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', join(benchDir, 'sources.ts'), '--child', server, mode, table, String(chunks)],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...CHILD_ENV, ...env } },
    )
    let out = ''
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()))
    proc.on('error', reject)
    proc.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${server} ${mode} ${table} exited with ${code}`))
      else resolve(JSON.parse(out) as ChildReport)
    })
  })
}

/** Ten columns: bigint key, two strings, numeric, double, boolean, timestamptz/TIMESTAMP, timestamp, date, nullable text. */
async function setupPostgres(): Promise<{ small: string; big: string; drop: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
  await client.query(`CREATE SCHEMA ${SCHEMA}`)
  for (const [name, rows] of [
    ['t_small', ROWS],
    ['t_big', BIG_ROWS],
  ] as const) {
    await client.query(`CREATE TABLE ${SCHEMA}.${name} (
      id bigint PRIMARY KEY, name text, email varchar(200), amount numeric(12,2), score double precision,
      active boolean, created_at timestamptz, updated_at timestamp, birth date, note text)`)
    await client.query(`INSERT INTO ${SCHEMA}.${name} SELECT g, 'name ' || g, 'user' || g || '@example.com',
      (g % 100000) / 100.0, g * 1.5, g % 2 = 0, timestamptz '2020-01-01' + g * interval '1 second',
      timestamp '2021-01-01' + g * interval '1.000123 second', date '1970-01-01' + (g % 20000),
      CASE WHEN g % 3 = 0 THEN NULL ELSE 'note ' || md5(g::text) END FROM generate_series(1, ${rows}) g`)
    await client.query(`VACUUM ANALYZE ${SCHEMA}.${name}`)
  }
  return {
    small: `${SCHEMA}.t_small`,
    big: `${SCHEMA}.t_big`,
    drop: async () => {
      await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
      await client.end()
    },
  }
}

async function setupMysql(): Promise<{ small: string; big: string; drop: () => Promise<void> }> {
  const connection = await mysqlPromise.createConnection({ uri: MYSQL_URL })
  await connection.query(`DROP DATABASE IF EXISTS ${SCHEMA}`)
  await connection.query(`CREATE DATABASE ${SCHEMA}`)
  for (const [name, rows] of [
    ['t_small', ROWS],
    ['t_big', BIG_ROWS],
  ] as const) {
    await connection.query(`CREATE TABLE ${SCHEMA}.${name} (
      id BIGINT PRIMARY KEY, name TEXT, email VARCHAR(200), amount DECIMAL(12,2), score DOUBLE, active BOOLEAN,
      created_at TIMESTAMP(6) NULL, updated_at DATETIME(6), birth DATE, note TEXT)`)
    // Rows in blocks of 100,000 from a digits cross join (works on MySQL 8 and MariaDB).
    await connection.query(`CREATE TEMPORARY TABLE IF NOT EXISTS ${SCHEMA}.digits (d INT)`)
    await connection.query(`TRUNCATE ${SCHEMA}.digits`)
    await connection.query(`INSERT INTO ${SCHEMA}.digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)`)
    for (let base = 0; base < rows; base += 100_000) {
      await connection.query(`INSERT INTO ${SCHEMA}.${name}
        SELECT g, CONCAT('name ', g), CONCAT('user', g, '@example.com'), (g % 100000) / 100, g * 1.5, g % 2 = 0,
          TIMESTAMP('2020-01-01') + INTERVAL g SECOND, TIMESTAMP('2021-01-01') + INTERVAL g * 1000123 MICROSECOND,
          DATE('1970-01-01') + INTERVAL (g % 20000) DAY, IF(g % 3 = 0, NULL, CONCAT('note ', MD5(g)))
        FROM (SELECT ${base} + 1 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d AS g
              FROM ${SCHEMA}.digits a, ${SCHEMA}.digits b, ${SCHEMA}.digits c, ${SCHEMA}.digits e, ${SCHEMA}.digits f) s
        WHERE g <= ${rows}`)
    }
    await connection.query(`ANALYZE TABLE ${SCHEMA}.${name}`)
  }
  return {
    small: `${SCHEMA}.t_small`,
    big: `${SCHEMA}.t_big`,
    drop: async () => {
      await connection.query(`DROP DATABASE IF EXISTS ${SCHEMA}`)
      await connection.end()
    },
  }
}

async function parent(): Promise<void> {
  await mkdir(TMP, { recursive: true })
  const results: Record<string, unknown> = { rows: ROWS, bigRows: BIG_ROWS, columns: 10, repeats: REPEAT }
  for (const server of SERVERS as Server[]) {
    console.log(`\n== ${server}: creating ${ROWS} and ${BIG_ROWS} rows`)
    const tables =
      EXISTING_TABLE !== undefined
        ? { small: EXISTING_TABLE, big: EXISTING_TABLE, drop: async () => undefined }
        : server === 'postgres'
          ? await setupPostgres()
          : await setupMysql()
    try {
      // Warm the server's cache so that the first measurement is not the only one reading from disk.
      await measure(server, 'raw', tables.small)
      // Every measurement REPEAT times, interleaved so that a noisy moment hits all of them alike; the median
      // run by time is reported, with the highest peak RSS of the repeats.
      const runs: Record<string, ChildReport[]> = {}
      const plan: [string, Mode | 'run', string, number, string?][] = [
        ['cli', 'cli', tables.small, ROWS],
        ['baseOne', 'extract', tables.small, 1, BASE_BENCH],
        ['baseRun', 'run', tables.small, ROWS, BASE_BENCH],
        ['raw', 'raw', tables.small, 1],
        ['one', 'extract', tables.small, 1],
        ['stagedLoad', 'stagedLoad', tables.small, 1],
        // The same extract with two DuckDB threads converting (BENCH_SOURCES_PLAN=…,two).
        ['two', 'extract', tables.small, 1],
        // The same extract with V8's own young generation (16 MiB semi-spaces; the CLI starts with 2 MiB ones).
        ['oneYoung16', 'extract', tables.small, 1],
        // The same extract staged for a BigQuery warehouse (Parquet 1.0 encodings, lib/core/staged-parquet.ts).
        ['onePortable', 'extract', tables.small, 1],
        ['four', 'extract', tables.small, 4],
        ['ranges', 'ranges', tables.small, 1],
        ['passes', 'passes', tables.small, 1],
        ['big', 'extract', tables.big, 1],
        ['cliBig', 'cli', tables.big, BIG_ROWS],
        ['run', 'run', tables.small, ROWS],
        ['runBig', 'run', tables.big, BIG_ROWS],
      ]
      for (let r = 0; r < REPEAT; r++) {
        for (const [name, mode, table, chunks, benchDir] of plan) {
          if (!PLAN.includes(name)) continue
          if (name.startsWith('base') && benchDir === undefined) continue
          const report =
            mode === 'run'
              ? dimsyncRun(server, table, chunks, join(benchDir ?? BENCH_ROOT, '..', 'bin', 'dimsync.mjs'))
              : await measure(server, mode, table, chunks, benchDir, EXTRA_ENV[name] ?? {})
          ;(runs[name] ??= []).push(report)
          console.log(
            `${server} ${name} run ${r + 1}: ${report.seconds.toFixed(2)} s, ${report.maxRssMb.toFixed(0)} MB` +
              (report.cpuSeconds === undefined ? '' : `, CPU ${report.cpuSeconds.toFixed(2)} s`),
          )
        }
      }
      const median = (name: string): ChildReport => {
        if (runs[name] === undefined) return { rows: 0, seconds: Number.NaN, maxRssMb: Number.NaN }
        const sorted = [...runs[name]!].sort((a, b) => a.seconds - b.seconds)
        const middle = sorted[Math.floor(sorted.length / 2)]!
        return { ...middle, maxRssMb: Math.max(...sorted.map((run) => run.maxRssMb)) }
      }
      const [cli, baseOne, baseRun, raw, one, two, four, ranges, passes, big, cliBig, run, runBig] = [
        'cli',
        'baseOne',
        'baseRun',
        'raw',
        'one',
        'two',
        'four',
        'ranges',
        'passes',
        'big',
        'cliBig',
        'run',
        'runBig',
      ].map(median) as [
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
        ChildReport,
      ]
      const rate = (r: ChildReport) => Math.round(r.rows / r.seconds)
      const young16 = median('oneYoung16')
      const portable = median('onePortable')
      const summary = {
        clientDump: {
          command:
            server === 'postgres'
              ? 'psql -c "\\copy (SELECT * FROM t) TO /dev/null"'
              : "mariadb --quick --batch -e 'SELECT * FROM t' > /dev/null",
          ...cli,
          rowsPerSecond: rate(cli),
        },
        extractShareOfClientDump: Number((rate(one) / rate(cli)).toFixed(3)),
        ...(BASELINE_DIR !== undefined
          ? {
              baselineTree: BASELINE_DIR,
              baseExtract: { ...baseOne, shareOfClientDump: Number((rate(baseOne) / rate(cli)).toFixed(3)) },
              baseRun: { ...baseRun, ratioToClientDump: Number((baseRun.seconds / cli.seconds).toFixed(2)) },
            }
          : {}),
        targetExtractShareOfClientDump: 0.6,
        clientDumpBig: { ...cliBig, rowsPerSecond: rate(cliBig) },
        extractBigShareOfClientDump: Number((rate(big) / rate(cliBig)).toFixed(3)),
        dimsyncRun: { ...run, ratioToClientDump: Number((run.seconds / cli.seconds).toFixed(2)) },
        targetRunRatioToClientDump: 3,
        ...(runs.stagedLoad === undefined ? {} : { stagedLoadFloor: stagedLoadFloor(runs.stagedLoad, cli) }),
        dimsyncRunBig: { ...runBig, ratioToClientDump: Number((runBig.seconds / cliBig.seconds).toFixed(2)) },
        baseline:
          server === 'postgres'
            ? 'COPY (SELECT *) TO STDOUT, pg-copy-streams'
            : 'unbuffered SELECT *, mysql2',
        raw: { ...raw, rowsPerSecond: rate(raw) },
        extract: { ...one, rowsPerSecond: rate(one) },
        ...(PLAN.includes('two')
          ? { extractTwoThreads: { ...two, shareOfClientDump: Number((rate(two) / rate(cli)).toFixed(3)) } }
          : {}),
        ...(runs.oneYoung16 === undefined
          ? {}
          : {
              extractYoungGeneration16MB: {
                ...young16,
                shareOfClientDump: Number((rate(young16) / rate(cli)).toFixed(3)),
              },
            }),
        ...(runs.onePortable === undefined
          ? {}
          : {
              extractStagedForBigQuery: {
                ...portable,
                shareOfClientDump: Number((rate(portable) / rate(cli)).toFixed(3)),
              },
            }),
        extractShareOfRaw: Number((rate(one) / rate(raw)).toFixed(3)),
        chunks4: {
          ...four,
          rowsPerSecond: rate(four),
          speedupVsOne: Number((one.seconds / four.seconds).toFixed(2)),
        },
        big: { ...big, rowsPerSecond: rate(big), rssGrowthMb: Math.round(big.maxRssMb - one.maxRssMb) },
        ranges: {
          ranges: PASSES,
          ...ranges,
          rowsPerSecond: rate(ranges),
          slowdownVsOneRange: Number((ranges.seconds / one.seconds).toFixed(2)),
        },
        passes: {
          passes: PASSES,
          ...passes,
          rowsPerSecond: rate(passes),
          slowdownVsOnePass: Number((passes.seconds / one.seconds).toFixed(2)),
        },
      }
      results[server] = { ...summary, runs, loadAverage: loadavg() }
      console.log(JSON.stringify(summary, null, 2))
    } finally {
      await tables.drop()
    }
  }
  results.machine = { node: process.version, at: new Date().toISOString() }
  const dir = join(BENCH_ROOT, 'results')
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'sources.json'), JSON.stringify(results, null, 2) + '\n')
  console.log(`\nwrote ${join(dir, 'sources.json')}`)
}
