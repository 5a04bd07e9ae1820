/**
 * AWS DMS feed benchmark (`BENCH_ONLY=dmsFeed npm run bench`, results in bench/results/dms-feed.json): 1,000,000
 * events over 200,000 keys (a full load of every key, then 4 change files of one update per key) read and merged
 * by `dimsync run` (runTable: extract through FileSource, merge into DuckDB) as AWS DMS writes them
 * (`format: dms`: headerless CSV whose full-load file has no Op, or Parquet with a STRING timestamp) against the
 * same events as a plain file feed (CSV with a header and an Op on every row, or Parquet with a TIMESTAMP). Each
 * run is a fresh project in a child process of its own, so its wall time and peak RSS are its own; the variants
 * alternate, median of BENCH_REPEATS (default 3).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'

import { parseProject } from '../lib/config/index.ts'
import { buildLocalDeps } from '../lib/runtime/local-deps.ts'
import { runTable } from '../lib/use-cases/run-table.ts'
import { BENCH_ROOT, CHILD_ENV, measureProcess, median, TMP } from './support.ts'

const KEYS = Number(process.env.BENCH_KEYS ?? 200_000)
const CHANGE_FILES = 4
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3)
const SCRIPT = join(BENCH_ROOT, 'dms-feed.ts')
const DIR = join(TMP, 'dms-feed')

const VARIANTS = ['dmsCsv', 'plainCsv', 'dmsParquet', 'plainParquet'] as const
type Variant = (typeof VARIANTS)[number]

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

/** The events of file `n` (0: the full load), with the timestamp as DMS's text or as a TIMESTAMP. */
function events(n: number, op: boolean, text: boolean, timeName: string): string {
  const time = `TIMESTAMP '2024-01-01 00:00:00' + TO_DAYS(${n}) + TO_MICROSECONDS(i)`
  const ts = text ? `strftime(${time}, '%Y-%m-%d %H:%M:%S.%f')` : time
  return (
    `SELECT ${op ? `'${n === 0 ? 'I' : 'U'}' AS Op, ` : ''}${ts} AS ${timeName}, i AS customer_id, ` +
    `'r${n}_' || i AS region FROM range(${KEYS}) t(i)`
  )
}

async function prepare(): Promise<void> {
  rmSync(join(DIR, 'data'), { recursive: true, force: true })
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    for (const variant of VARIANTS) {
      const folder = join(DIR, 'data', variant)
      mkdirSync(folder, { recursive: true })
      const dms = variant.startsWith('dms')
      const csv = variant.endsWith('Csv')
      for (let n = 0; n <= CHANGE_FILES; n++) {
        const name = dms ? (n === 0 ? `LOAD00000001` : `2024010${n + 1}-0000000000`) : `events-${n}`
        const select = events(n, !dms || n > 0, dms, dms ? 'dms_ts' : 'changed_at')
        const options = csv ? `FORMAT csv, HEADER ${dms ? 'false' : 'true'}` : 'FORMAT parquet'
        await connection.run(
          `COPY (${select}) TO '${join(folder, `${name}.${csv ? 'csv' : 'parquet'}`)}' (${options})`,
        )
      }
    }
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

/** One `dimsync run` of `variant` in a fresh project (the child's work). */
async function runChild(variant: Variant): Promise<void> {
  const project = join(DIR, `project-${variant}`)
  rmSync(project, { recursive: true, force: true })
  mkdirSync(project, { recursive: true })
  const yaml = [
    'version: 1',
    'tables:',
    '  - name: customers',
    ...TABLE_OPTIONS[variant].map((line) => line.replace("'data/", `'${join(DIR, 'data')}/`)),
    '    key: customer_id',
    '',
  ].join('\n')
  writeFileSync(join(project, 'dimsync.yaml'), yaml)
  const spec = parseProject(yaml, join(project, 'dimsync.yaml'))
  const deps = await buildLocalDeps(spec, () => undefined)
  const started = process.hrtime.bigint()
  const result = await runTable(deps, spec.tables[0]!, { extractedAt: new Date('2024-02-01T00:00:00Z') })
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  await deps.close()
  rmSync(project, { recursive: true, force: true })
  console.log(
    JSON.stringify({ seconds, rows: result.rows, inserted: result.merge.counts?.insertedVersions ?? 0 }),
  )
}

export async function runDmsFeedBenchmark(): Promise<Record<string, unknown>> {
  console.log(`dmsFeed: writing ${KEYS * (CHANGE_FILES + 1)} events over ${KEYS} keys in 4 layouts…`)
  await prepare()
  const runs: Record<Variant, { seconds: number; processSeconds: number; peakRssMb: number }[]> = {
    dmsCsv: [],
    plainCsv: [],
    dmsParquet: [],
    plainParquet: [],
  }
  for (let i = 0; i < REPEATS; i++) {
    for (const variant of VARIANTS) {
      const run = measureProcess(process.execPath, ['--import', 'tsx', SCRIPT, 'child', variant], {
        cwd: join(BENCH_ROOT, '..'),
        env: CHILD_ENV,
      })
      const report = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
        seconds: number
        rows: number
        inserted: number
      }
      const expected = KEYS * (CHANGE_FILES + 1)
      if (report.rows !== expected || report.inserted !== expected)
        throw new Error(`${variant}: ${report.rows} rows, ${report.inserted} versions, expected ${expected}`)
      runs[variant].push({ seconds: report.seconds, processSeconds: run.seconds, peakRssMb: run.peakRssMb })
      console.log(
        `dmsFeed: run ${i + 1} ${variant}: run ${report.seconds.toFixed(2)} s, process ${run.seconds.toFixed(2)} s, ` +
          `peak RSS ${run.peakRssMb.toFixed(0)} MB`,
      )
    }
  }
  rmSync(DIR, { recursive: true, force: true })
  const summary = (variant: Variant) => ({
    runSeconds: median(runs[variant].map((r) => r.seconds)),
    peakRssMb: median(runs[variant].map((r) => r.peakRssMb)),
    runs: runs[variant],
  })
  const result = Object.fromEntries(VARIANTS.map((v) => [v, summary(v)])) as Record<
    Variant,
    ReturnType<typeof summary>
  >
  return {
    keys: KEYS,
    events: KEYS * (CHANGE_FILES + 1),
    repeats: REPEATS,
    ...result,
    dmsToPlainCsvTimeRatio: result.dmsCsv.runSeconds / result.plainCsv.runSeconds,
    dmsToPlainParquetTimeRatio: result.dmsParquet.runSeconds / result.plainParquet.runSeconds,
    loadAverage: (await import('node:os')).loadavg(),
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === 'child') await runChild(process.argv[3] as Variant)
  else {
    const result = await runDmsFeedBenchmark()
    mkdirSync(join(BENCH_ROOT, 'results'), { recursive: true })
    writeFileSync(join(BENCH_ROOT, 'results', 'dms-feed.json'), JSON.stringify(result, null, 2) + '\n')
    console.log(JSON.stringify(result, null, 2))
  }
}
