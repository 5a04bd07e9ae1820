/**
 * AWS DMS feed benchmark (`BENCH_ONLY=dmsFeed npm run bench`, results in bench/results/dms-feed.json): 1,000,000
 * events over 200,000 keys (a full load of every key, then 4 change files of one update per key) read and merged
 * by `dimsync run` (runTable: extract through FileSource, merge into DuckDB) as AWS DMS writes them
 * (`format: dms`: headerless CSV whose full-load file has no Op, or Parquet with a STRING timestamp) against the
 * same events as a plain file feed (CSV with a header and an Op on every row, or Parquet with a TIMESTAMP), in two
 * scenarios: `firstLoad`, the feed into a new dimension, and `intoExisting`, the feed merged into a dimension that
 * already holds BENCH_EXISTING_KEYS (default 1,000,000) keys (loaded by an earlier run of the same table with
 * `files: new_only`, not measured). Each measured run is a child process of its own, so its wall time and peak
 * RSS are its own; the variants alternate, median of BENCH_REPEATS (default 3).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'

import { parseProject } from '../lib/config/index.ts'
import { buildLocalDeps } from '../lib/runtime/local-deps.ts'
import { runTable } from '../lib/use-cases/run-table.ts'
import { BENCH_ROOT, CHILD_ENV, measureProcess, median, TMP } from './support.ts'

const KEYS = Number(process.env.BENCH_KEYS ?? 200_000)
const EXISTING_KEYS = Number(process.env.BENCH_EXISTING_KEYS ?? 1_000_000)
const CHANGE_FILES = 4
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3)
const SCRIPT = join(BENCH_ROOT, 'dms-feed.ts')
const DIR = join(TMP, 'dms-feed')

const VARIANTS = ['dmsCsv', 'plainCsv', 'dmsParquet', 'plainParquet'] as const
type Variant = (typeof VARIANTS)[number]
const SCENARIOS = ['firstLoad', 'intoExisting'] as const
type Scenario = (typeof SCENARIOS)[number]
/** A child's part: the whole feed into a new project, the existing keys' load, or the feed after it. */
type Phase = 'feed' | 'existing' | 'feedIntoExisting'

const TABLE_OPTIONS: Record<Variant, string[]> = {
  dmsCsv: [
    "    source: { type: file, path: 'data/dmsCsv/*.csv', header: false, columns: { Op: VARCHAR, dms_ts: VARCHAR, customer_id: BIGINT, region: VARCHAR } }",
    '    extract: { mode: changes, format: dms }',
    '    valid_from: { column: dms_ts }',
  ],
  plainCsv: [
    "    source: { type: file, path: 'data/plainCsv/*.csv', columns: { Op: VARCHAR, changed_at: TIMESTAMP, customer_id: BIGINT, region: VARCHAR } }",
    '    extract: { mode: changes }',
    '    valid_from: { column: changed_at }',
  ],
  dmsParquet: [
    "    source: { type: file, path: 'data/dmsParquet/*.parquet' }",
    '    extract: { mode: changes, format: dms }',
    '    valid_from: { column: dms_ts }',
  ],
  plainParquet: [
    "    source: { type: file, path: 'data/plainParquet/*.parquet' }",
    '    extract: { mode: changes }',
    '    valid_from: { column: changed_at }',
  ],
}

/**
 * The events of file `n` (0: the full load; -1: the existing keys' load, a month earlier), with the timestamp as
 * DMS's text or as a TIMESTAMP.
 */
function events(n: number, op: boolean, text: boolean, timeName: string): string {
  const time = `TIMESTAMP '2024-01-01 00:00:00' + TO_DAYS(${n === -1 ? -31 : n}) + TO_MICROSECONDS(i)`
  const ts = text ? `strftime(${time}, '%Y-%m-%d %H:%M:%S.%f')` : time
  return (
    `SELECT ${op ? `'${n <= 0 ? 'I' : 'U'}' AS Op, ` : ''}${ts} AS ${timeName}, i AS customer_id, ` +
    `'r${n}_' || i AS region FROM range(${n === -1 ? EXISTING_KEYS : KEYS}) t(i)`
  )
}

/** File `n` of a variant (-1: the existing keys' load, named to sort before the feed's). */
function fileName(variant: Variant, n: number): string {
  const dms = variant.startsWith('dms')
  const base = dms ? (n <= 0 ? `LOAD0000000${n + 1}` : `2024010${n + 1}-0000000000`) : `events-${n + 1}`
  return `${base}.${variant.endsWith('Csv') ? 'csv' : 'parquet'}`
}

/** Writes files `from`..CHANGE_FILES of every variant into its folder (data/<variant>/). */
async function prepare(from: number, clear: boolean): Promise<void> {
  if (clear) rmSync(join(DIR, 'data'), { recursive: true, force: true })
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    for (const variant of VARIANTS) {
      const folder = join(DIR, 'data', variant)
      mkdirSync(folder, { recursive: true })
      const dms = variant.startsWith('dms')
      const csv = variant.endsWith('Csv')
      for (let n = from; n <= (from === -1 ? -1 : CHANGE_FILES); n++) {
        const select = events(n, !dms || n > 0, dms, dms ? 'dms_ts' : 'changed_at')
        const options = csv ? `FORMAT csv, HEADER ${dms ? 'false' : 'true'}` : 'FORMAT parquet'
        await connection.run(`COPY (${select}) TO '${join(folder, fileName(variant, n))}' (${options})`)
      }
    }
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

/**
 * One `dimsync run` of `variant` (the child's work): `feed` in a fresh project; `existing` in a fresh project kept
 * for `feedIntoExisting`, which runs the same table again (`files: new_only`: the feed's files only).
 */
async function runChild(variant: Variant, phase: Phase): Promise<void> {
  const project = join(DIR, `project-${variant}`)
  if (phase !== 'feedIntoExisting') {
    rmSync(project, { recursive: true, force: true })
    mkdirSync(project, { recursive: true })
  }
  const newOnly = phase === 'feed' ? '' : ', files: new_only'
  const yaml = [
    'version: 1',
    'tables:',
    '  - name: customers',
    ...TABLE_OPTIONS[variant].map((line) =>
      line
        .replace("'data/", `'${join(DIR, 'data')}/`)
        .replace(/ }$/, (end) => (line.includes('source:') ? `${newOnly}${end}` : end)),
    ),
    '    key: customer_id',
    '',
  ].join('\n')
  writeFileSync(join(project, 'dimsync.yaml'), yaml)
  const spec = parseProject(yaml, join(project, 'dimsync.yaml'))
  const deps = await buildLocalDeps(spec, () => undefined)
  const started = process.hrtime.bigint()
  const extractedAt = new Date(phase === 'existing' ? '2024-01-15T00:00:00Z' : '2024-02-01T00:00:00Z')
  const result = await runTable(deps, spec.tables[0]!, { extractedAt })
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  await deps.close()
  if (phase !== 'existing') rmSync(project, { recursive: true, force: true })
  console.log(
    JSON.stringify({ seconds, rows: result.rows, inserted: result.merge.counts?.insertedVersions ?? 0 }),
  )
}

/** Runs a child of `variant` in `phase`, checks its counts, and returns its figures. */
function measuredChild(variant: Variant, phase: Phase, expectedRows: number) {
  const run = measureProcess(process.execPath, ['--import', 'tsx', SCRIPT, 'child', variant, phase], {
    cwd: join(BENCH_ROOT, '..'),
    env: CHILD_ENV,
  })
  const report = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
    seconds: number
    rows: number
    inserted: number
  }
  if (report.rows !== expectedRows || report.inserted !== expectedRows)
    throw new Error(
      `${variant} ${phase}: ${report.rows} rows, ${report.inserted} versions, expected ${expectedRows}`,
    )
  return { seconds: report.seconds, processSeconds: run.seconds, peakRssMb: run.peakRssMb }
}

export async function runDmsFeedBenchmark(): Promise<Record<string, unknown>> {
  const events = KEYS * (CHANGE_FILES + 1)
  type Run = ReturnType<typeof measuredChild>
  const runs = Object.fromEntries(
    SCENARIOS.map((scenario) => [scenario, Object.fromEntries(VARIANTS.map((v) => [v, [] as Run[]]))]),
  ) as Record<Scenario, Record<Variant, Run[]>>
  const log = (scenario: Scenario, i: number, variant: Variant, run: Run) =>
    console.log(
      `dmsFeed: ${scenario} run ${i + 1} ${variant}: run ${run.seconds.toFixed(2)} s, process ` +
        `${run.processSeconds.toFixed(2)} s, peak RSS ${run.peakRssMb.toFixed(0)} MB`,
    )
  console.log(
    `dmsFeed: ${events} events over ${KEYS} keys in 4 layouts, into a new and a ${EXISTING_KEYS}-key dimension…`,
  )
  for (let i = 0; i < REPEATS; i++) {
    await prepare(0, true)
    for (const variant of VARIANTS) {
      const run = measuredChild(variant, 'feed', events)
      runs.firstLoad[variant].push(run)
      log('firstLoad', i, variant, run)
    }
    if (EXISTING_KEYS === 0) continue
    await prepare(-1, true)
    for (const variant of VARIANTS) measuredChild(variant, 'existing', EXISTING_KEYS)
    await prepare(0, false)
    for (const variant of VARIANTS) {
      const run = measuredChild(variant, 'feedIntoExisting', events)
      runs.intoExisting[variant].push(run)
      log('intoExisting', i, variant, run)
    }
  }
  rmSync(DIR, { recursive: true, force: true })
  const summary = (scenario: Scenario) => {
    const of = (variant: Variant) => ({
      runSeconds: median(runs[scenario][variant].map((r) => r.seconds)),
      peakRssMb: median(runs[scenario][variant].map((r) => r.peakRssMb)),
      runs: runs[scenario][variant],
    })
    const result = Object.fromEntries(VARIANTS.map((v) => [v, of(v)])) as Record<
      Variant,
      ReturnType<typeof of>
    >
    return {
      ...result,
      dmsToPlainCsvTimeRatio: result.dmsCsv.runSeconds / result.plainCsv.runSeconds,
      dmsToPlainParquetTimeRatio: result.dmsParquet.runSeconds / result.plainParquet.runSeconds,
    }
  }
  return {
    keys: KEYS,
    events,
    existingKeys: EXISTING_KEYS,
    repeats: REPEATS,
    firstLoad: summary('firstLoad'),
    ...(EXISTING_KEYS === 0 ? {} : { intoExisting: summary('intoExisting') }),
    loadAverage: (await import('node:os')).loadavg(),
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === 'child') await runChild(process.argv[3] as Variant, process.argv[4] as Phase)
  else {
    const result = await runDmsFeedBenchmark()
    mkdirSync(join(BENCH_ROOT, 'results'), { recursive: true })
    writeFileSync(join(BENCH_ROOT, 'results', 'dms-feed.json'), JSON.stringify(result, null, 2) + '\n')
    console.log(JSON.stringify(result, null, 2))
  }
}
