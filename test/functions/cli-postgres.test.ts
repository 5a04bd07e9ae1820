import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PG_URL, dropPostgresSchemas } from '../integration/sources/support/db-services.ts'
import { cliEnvironment } from '../support/cli-process.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
/** The file the quickstart's tables read (`run`): its newest snapshot. */
const SOURCE = join('data', 'customers_2024-03-10T1430.csv')
const BACKFILL = ['--files', 'data/customers_*.csv', '--time-from-name', 'customers_%Y-%m-%dT%H%M.csv']
/** The variable the postgres quickstart's config names; the URL is only ever in the environment. */
const URL_VARIABLE = 'QUICKSTART_WAREHOUSE_URL'
const SCHEMA = `quickstart_${randomBytes(6).toString('hex')}`

let duckdb: string
let postgres: string

/** The quickstart in a folder of its own; `warehouse` replaces its DuckDB warehouse line. */
function quickstart(warehouse?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dimsync-cli-pg-'))
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

function dimsync(
  cwd: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = { [URL_VARIABLE]: PG_URL },
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: cliEnvironment(env) })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('close', (code) => resolve({ code, out, err }))
  })
}

/** Runs the same command in the DuckDB and the PostgreSQL quickstart; both succeed; answers both outputs. */
async function both(...args: string[]): Promise<{ duckdb: string; postgres: string }> {
  const [d, p] = await Promise.all([dimsync(duckdb, args), dimsync(postgres, args)])
  expect(d.code, `DuckDB: dimsync ${args.join(' ')}: ${d.err}`).toBe(0)
  expect(p.code, `PostgreSQL: dimsync ${args.join(' ')}: ${p.err}`).toBe(0)
  return { duckdb: d.out, postgres: p.out }
}

/** Versions of `history --format json`; batch ids end with a random part of their own, so they are left out. */
function versions(jsonLines: string): Record<string, unknown>[] {
  return jsonLines
    .trim()
    .split('\n')
    .map((line) => ({ ...JSON.parse(line), dimsync_batch_id: undefined }))
}

beforeAll(() => {
  duckdb = quickstart()
  postgres = quickstart(`{ type: postgres, url_env: ${URL_VARIABLE}, schema: ${SCHEMA} }`)
})
afterAll(async () => {
  for (const dir of [duckdb, postgres]) if (dir) rmSync(dir, { recursive: true, force: true })
  await dropPostgresSchemas(SCHEMA)
})

describe('dimsync CLI on PostgreSQL against DuckDB, quickstart data', () => {
  it('without the URL variable, refuses naming it, and writes nothing', async () => {
    const env = cliEnvironment()
    delete env[URL_VARIABLE]
    const r = await new Promise<{ code: number | null; err: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, 'run', '--table', 'customers'], { cwd: postgres, env })
      let err = ''
      child.stderr.on('data', (d: Buffer) => (err += d.toString()))
      child.on('close', (code) => resolve({ code, err }))
    })
    expect(r.code).not.toBe(0)
    expect(r.err).toContain(`environment variable ${URL_VARIABLE}, which is not set`)
    const admin = new pg.Client({ connectionString: PG_URL })
    await admin.connect()
    const { rows } = await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [SCHEMA])
    await admin.end()
    expect(rows).toEqual([])
  })

  it('backfill of the two snapshots, then history (timeline, JSON, as of a date) prints the same on both', async () => {
    for (const table of ['customers', 'customers_invalidate'])
      await both('backfill', '--table', table, ...BACKFILL)
    for (const table of ['customers', 'customers_invalidate']) {
      const [timeline, json, asOf] = await Promise.all([
        both('history', table),
        both('history', table, '--format', 'json'),
        both('history', table, '--as-of', '2024-02-01T00:00:00Z'),
      ])
      expect(timeline.postgres).toBe(timeline.duckdb)
      expect(versions(json.postgres)).toEqual(versions(json.duckdb))
      expect(asOf.postgres).toBe(asOf.duckdb)
    }
    const timeline = await both('history', 'customers_invalidate')
    expect(timeline.postgres).toContain('dim_customer_invalidate: 5 versions of 4 keys')
  })

  it('run of a third snapshot merges the same versions on both', async () => {
    for (const dir of [duckdb, postgres])
      writeFileSync(
        join(dir, SOURCE),
        'customer_id,name,region\n101,Ana,North\n102,Bruno,East\n104,Diego,West\n',
      )
    await both('run', '--table', 'customers_invalidate', '--extracted-at', '2024-06-01T00:00:00Z')
    const history = await both('history', 'customers_invalidate', '--format', 'json')
    expect(versions(history.postgres)).toEqual(versions(history.duckdb))
    expect(versions(history.postgres).map((v) => [v.customer_id, v.region, v.is_current])).toContainEqual([
      102,
      'East',
      true,
    ])
    const timeline = await both('history', 'customers_invalidate')
    expect(timeline.postgres).toBe(timeline.duckdb)
  })

  it('facts resolve to the same versions on both (the version true at each event, or the unknown member)', async () => {
    for (const dir of [duckdb, postgres]) {
      const config = join(dir, 'dimsync.yaml')
      writeFileSync(
        config,
        readFileSync(config, 'utf8') +
          '\nfacts:\n  - name: orders\n    source: { type: file, path: orders.csv }\n    grain: order_id\n' +
          '    event_time: ordered_at\n    measures: [amount]\n' +
          '    references:\n      - { dimension: customers, key: customer_id, as: customer }\n',
      )
      writeFileSync(
        join(dir, 'orders.csv'),
        'order_id,customer_id,ordered_at,amount\n' +
          // 101 in South (its first version), in North (after the move), before any version, an unknown key
          '1,101,2024-02-01T10:00:00Z,5\n2,101,2024-04-01T10:00:00Z,6\n3,102,2023-01-01T00:00:00Z,7\n4,999,2024-02-01T00:00:00Z,8\n',
      )
    }
    const run = await both('run', '--table', 'orders', '--extracted-at', '2024-06-02T00:00:00Z')
    const line = (out: string) => out.replace(/batch \S+/, 'batch B')
    expect(line(run.postgres)).toBe(line(run.duckdb))
    expect(line(run.postgres)).toContain(
      '4 rows; 4 facts loaded, 2 to the unknown member of customers (customer_sk)',
    )
    const facts = 'SELECT order_id, customer_sk, amount FROM fact_orders ORDER BY order_id'
    const instance = await DuckDBInstance.create(join(duckdb, '.dimsync', 'warehouse.duckdb'), {
      access_mode: 'READ_ONLY',
    })
    const connection = await instance.connect()
    const onDuckDb = (await connection.runAndReadAll(facts))
      .getRowObjectsJson()
      .map((r) => Object.values(r).map(Number))
    connection.closeSync()
    instance.closeSync()
    const admin = new pg.Client({ connectionString: PG_URL })
    await admin.connect()
    const { rows } = await admin.query(facts.replace('fact_orders', `"${SCHEMA}".fact_orders`))
    await admin.end()
    expect(rows.map((r) => Object.values(r).map(Number))).toEqual(onDuckDb)
    expect(onDuckDb.map(([order, sk]) => [order, sk === 0 ? 'unknown' : 'a version'])).toEqual([
      [1, 'a version'],
      [2, 'a version'],
      [3, 'unknown'],
      [4, 'unknown'],
    ])
    expect(onDuckDb[0]![1]).not.toBe(onDuckDb[1]![1])
  })

  it("partial updates (a NULL keeps the key's value) fold the same on both", async () => {
    for (const dir of [duckdb, postgres]) {
      const config = join(dir, 'dimsync.yaml')
      writeFileSync(
        config,
        readFileSync(config, 'utf8').replace(
          /^tables:\n/m,
          'tables:\n  - name: partial\n    source: { type: file, path: partial.csv }\n    key: customer_id\n' +
            '    ignore_null_updates: all\n',
        ),
      )
      writeFileSync(join(dir, 'partial.csv'), 'customer_id,name,region\n101,Ana,South\n102,Bruno,North\n')
    }
    await both('run', '--table', 'partial', '--extracted-at', '2024-01-01T00:00:00Z')
    for (const dir of [duckdb, postgres])
      writeFileSync(join(dir, 'partial.csv'), 'customer_id,name,region\n101,,North\n102,Bruno B,\n')
    await both('run', '--table', 'partial', '--extracted-at', '2024-02-01T00:00:00Z')
    const history = await both('history', 'partial', '--format', 'json')
    expect(versions(history.postgres)).toEqual(versions(history.duckdb))
    expect(
      versions(history.postgres)
        .filter((v) => v.is_current)
        .map((v) => [v.name, v.region]),
    ).toEqual([
      ['Ana', 'North'],
      ['Bruno B', 'North'],
    ])
  })
})
