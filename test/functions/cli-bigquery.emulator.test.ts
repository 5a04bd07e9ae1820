import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BIGQUERY_ENDPOINT_VARIABLE } from '../../lib/runtime/local-deps.ts'
import { BigQueryEmulator } from '../support/bigquery-emulator/bigquery-emulator.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
/** The file the quickstart's tables read (`run`, `plan`): its newest snapshot. */
const SOURCE = join('data', 'customers_2024-03-10T1430.csv')
const BACKFILL = ['--files', 'data/customers_*.csv', '--time-from-name', 'customers_%Y-%m-%dT%H%M.csv']

let emulator: BigQueryEmulator
let duckdb: string
let bigquery: string

/** The quickstart in a folder of its own; `warehouse` replaces its DuckDB warehouse line. */
function quickstart(warehouse?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dimsync-cli-bq-'))
  cpSync(join(ROOT, 'examples', 'quickstart'), dir, {
    recursive: true,
    filter: (p) => !p.includes('.dimsync'),
  })
  if (warehouse !== undefined) {
    const config = join(dir, 'dimsync.yaml')
    writeFileSync(config, readFileSync(config, 'utf8').replace(/^warehouse: .*$/m, `warehouse: ${warehouse}`))
  }
  return dir
}

/** The real CLI in a child process; asynchronous, so the emulator in this process keeps answering it. */
function dimsync(cwd: string, ...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: {
        ...process.env,
        CI: '1',
        METADATA_SERVER_DETECTION: 'none',
        [BIGQUERY_ENDPOINT_VARIABLE]: emulator.url,
      },
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('close', (code) => resolve({ code, out, err }))
  })
}

/** Runs the same command in the DuckDB and the BigQuery quickstart (at once); both succeed; answers both outputs. */
async function both(...args: string[]): Promise<{ duckdb: string; bigquery: string }> {
  const [d, b] = await Promise.all([dimsync(duckdb, ...args), dimsync(bigquery, ...args)])
  expect(d.code, `DuckDB: dimsync ${args.join(' ')}: ${d.err}`).toBe(0)
  expect(b.code, `BigQuery: dimsync ${args.join(' ')}: ${b.err}`).toBe(0)
  return { duckdb: d.out, bigquery: b.out }
}

/** Versions of `history --format json`; batch ids end with a random part of their own, so they are left out. */
function versions(jsonLines: string): Record<string, unknown>[] {
  return jsonLines
    .trim()
    .split('\n')
    .map((line) => ({ ...JSON.parse(line), dimsync_batch_id: undefined }))
}

/** `history --format csv` without the batch id column (the quickstart's values hold no commas). */
function csvWithoutBatchIds(csv: string): string[][] {
  const rows = csv
    .trim()
    .split('\n')
    .map((line) => line.split(','))
  const drop = rows[0]!.indexOf('dimsync_batch_id')
  return rows.map((row) => row.filter((_, i) => i !== drop))
}

beforeAll(async () => {
  emulator = await BigQueryEmulator.start()
  emulator.createDataset('quickstart-project', 'quickstart', { location: 'EU' })
  duckdb = quickstart()
  bigquery = quickstart('{ type: bigquery, project: quickstart-project, dataset: quickstart, location: EU }')
})
afterAll(async () => {
  await emulator?.stop()
  for (const dir of [duckdb, bigquery]) if (dir) rmSync(dir, { recursive: true, force: true })
})

describe(`dimsync CLI on BigQuery (the emulator at ${BIGQUERY_ENDPOINT_VARIABLE}) against DuckDB, quickstart data`, () => {
  it(
    'backfill of the two snapshots, then history (timeline, JSON, as of a date) reads the same on both warehouses',
    { timeout: 240_000 },
    async () => {
      // deletes: invalidate, the quickstart's table where Carla's absence from the second snapshot closes her.
      await both('backfill', '--table', 'customers_invalidate', ...BACKFILL)
      const [timeline, json, asOf] = await Promise.all([
        both('history', 'customers_invalidate'),
        both('history', 'customers_invalidate', '--format', 'json'),
        both('history', 'customers_invalidate', '--as-of', '2024-02-01T00:00:00Z', '--format', 'csv'),
      ])
      expect(timeline.bigquery).toBe(timeline.duckdb)
      expect(timeline.bigquery).toContain('dim_customer_invalidate: 5 versions of 4 keys')
      expect(versions(json.bigquery)).toEqual(versions(json.duckdb))
      expect(csvWithoutBatchIds(asOf.bigquery)).toEqual(csvWithoutBatchIds(asOf.duckdb))
      expect(csvWithoutBatchIds(asOf.bigquery)).toHaveLength(4)
      expect(
        emulator.rows({
          projectId: 'quickstart-project',
          datasetId: 'quickstart',
          tableId: 'dim_customer_invalidate',
        }),
      ).toHaveLength(5)
    },
  )

  it(
    'run of a third snapshot merges the same versions; plan prices a fourth with a dry run and changes nothing',
    { timeout: 240_000 },
    async () => {
      // The quickstart's tables read their newest snapshot file: it becomes a third snapshot.
      for (const dir of [duckdb, bigquery])
        writeFileSync(
          join(dir, SOURCE),
          'customer_id,name,region\n101,Ana,North\n102,Bruno,East\n104,Diego,West\n',
        )
      await both('run', '--table', 'customers_invalidate', '--extracted-at', '2024-06-01T00:00:00Z')
      const history = await both('history', 'customers_invalidate', '--format', 'json')
      expect(versions(history.bigquery)).toEqual(versions(history.duckdb))
      expect(versions(history.bigquery).map((v) => [v.customer_id, v.region, v.is_current])).toContainEqual([
        102,
        'East',
        true,
      ])

      for (const dir of [duckdb, bigquery])
        writeFileSync(
          join(dir, SOURCE),
          'customer_id,name,region\n101,Ana,South\n102,Bruno,East\n104,Diego,West\n',
        )
      const plan = await dimsync(bigquery, 'plan', '--table', 'customers_invalidate')
      expect(plan.code, plan.err).toBe(0)
      expect(plan.out).toMatch(/bytes/i)
      expect((await both('history', 'customers_invalidate', '--format', 'json')).bigquery).toBe(
        history.bigquery,
      )
    },
  )

  it(
    'a finished backfill run again applies nothing; a different snapshot at a merged time is refused on both and blocks nothing',
    { timeout: 400_000 },
    async () => {
      // The snapshot file the previous test overwrote gets its dated content back.
      for (const dir of [duckdb, bigquery])
        cpSync(join(ROOT, 'examples', 'quickstart', SOURCE), join(dir, SOURCE))
      const before = await both('history', 'customers_invalidate', '--format', 'json')
      const again = await both('backfill', '--table', 'customers_invalidate', ...BACKFILL)
      for (const out of [again.duckdb, again.bigquery])
        expect(out.match(/already applied: batch \S+ is the same snapshot as batch \S+/g)).toHaveLength(2)
      expect((await both('history', 'customers_invalidate', '--format', 'json')).bigquery).toBe(
        before.bigquery,
      )

      const refused = await Promise.all(
        [duckdb, bigquery].map((dir) =>
          dimsync(dir, 'run', '--table', 'customers_invalidate', '--extracted-at', '2024-06-01T00:00:00Z'),
        ),
      )
      for (const r of refused) {
        expect(r.code).toBe(1)
        expect(r.err).toMatch(/but a different snapshot at that extraction time is already merged/)
      }
      await both('run', '--table', 'customers_invalidate', '--extracted-at', '2024-07-01T00:00:00Z')
      const history = await both('history', 'customers_invalidate', '--format', 'json')
      expect(versions(history.bigquery)).toEqual(versions(history.duckdb))
      expect(versions(history.bigquery).map((v) => [v.customer_id, v.region, v.is_current])).toContainEqual([
        102,
        'North',
        true,
      ])
    },
  )
})
