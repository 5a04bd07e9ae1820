import { copyFileSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { PG_URL, PgScratch, postgresReachable } from '../integration/sources/support/db-services.ts'
import { runDimsync } from '../support/cli-process.ts'

/**
 * The state store's watermark and the warehouse's batch ledger must agree before a delta is read: a warehouse
 * lost or restored from an older copy, or a state restored, stops the run before it extracts, naming both and
 * `dimsync reset-watermark`, which sets the watermark to what the warehouse holds. Through the real CLI in
 * embedded mode, for a PostgreSQL cursor and for `files: new_only`.
 */

const PG_AVAILABLE = await postgresReachable()
let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-ledger-'))
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsync(...args: string[]): { code: number | null; out: string; err: string } {
  return runDimsync(work, args, { GUARDS_PG_URL: PG_URL })
}

function config(source: string, ...lines: string[]): void {
  writeFileSync(
    join(work, 'dimsync.yaml'),
    [
      'version: 1',
      'tables:',
      '  - name: c',
      `    source: ${source}`,
      '    key: id',
      ...lines.map((l) => `    ${l}`),
      '',
    ].join('\n'),
  )
}

function runs(at: string): string {
  const run = dimsync('run', '--table', 'c', '--extracted-at', at)
  expect(run.code, run.err).toBe(0)
  return run.out
}

/** The one error line of a refused command. */
function refused(...args: string[]): string {
  const run = dimsync(...args)
  expect(run.code, run.out).toBe(1)
  const lines = run.err.split('\n').filter((line) => line.startsWith('dimsync: '))
  expect(lines).toHaveLength(1)
  return lines[0]!
}

/** Keys of table c's current versions, and its number of versions. */
function dimension(): { keys: number[]; versions: number } {
  const history = dimsync('history', 'c', '--format', 'json')
  expect(history.code, history.err).toBe(0)
  const rows = history.out
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { id: number; is_current: boolean })
  return {
    keys: rows
      .filter((r) => r.is_current)
      .map((r) => Number(r.id))
      .sort((a, b) => a - b),
    versions: rows.length,
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const WAREHOUSE = () => join(work, '.dimsync', 'warehouse.duckdb')
const WATERMARK = () => join(work, '.dimsync', 'state', 'c', 'watermark.json')

describe.skipIf(!PG_AVAILABLE)('an incremental PostgreSQL table (cursor updated_at)', () => {
  let pg: PgScratch
  let table: string
  beforeAll(async () => {
    pg = await PgScratch.create()
  })
  afterAll(async () => {
    await pg?.drop()
  })
  let tables = 0
  beforeEach(async () => {
    table = `${pg.schema}.customers_${++tables}`
    await pg.sql(
      `CREATE TABLE ${table} (id INT PRIMARY KEY, name TEXT NOT NULL, updated_at TIMESTAMPTZ NOT NULL)`,
    )
    await pg.sql(
      `INSERT INTO ${table} SELECT i, 'n' || i, TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '1 second' FROM generate_series(1, 100) i`,
    )
  })
  const add = async (id: number) =>
    pg.sql(
      `INSERT INTO ${table} (id, name, updated_at) VALUES ($1::int, $2, TIMESTAMPTZ '2024-02-01 00:00:00+00' + $1::int * INTERVAL '1 second')`,
      [id, `n${id}`],
    )
  const source = () => `{ type: postgres, url_env: GUARDS_PG_URL, table: ${table} }`

  it('a lost warehouse stops the run before it extracts; reset-watermark then reloads every row', async () => {
    config(source(), 'extract: { mode: incremental, cursor: updated_at }')
    expect(runs('2024-03-01')).toContain('100 rows; 100 versions inserted')
    unlinkSync(WAREHOUSE())
    await add(101)
    const line = refused('run', '--table', 'c', '--extracted-at', '2024-03-02')
    expect(line).toMatch(
      /^dimsync: table c: the state store's watermark is \{"cursor":"2024-01-01T00:01:40[^"]*","key":\[100\]\} \(committed by batch 20240301T000000\.000Z-\w+\), but the warehouse \(schema main\) has not merged it: its ledger holds no batch of dim_c with a watermark\. The warehouse was lost or restored from an older copy, and a delta read after that watermark would leave out every row before it; nothing was extracted\. Set the watermark back to what the warehouse holds with: dimsync reset-watermark --table c \(the next run reads again every row: a full reload\) \(see docs\/errors\.md#the-watermark-and-the-warehouse-disagree\)$/,
    )
    const reset = dimsync('reset-watermark', '--table', 'c')
    expect(reset.code, reset.err).toBe(0)
    expect(reset.out).toContain('c: watermark {"cursor"')
    expect(reset.out).toContain(
      "removed: dim_c's ledger holds no batch with a watermark, so the next run reads every row again",
    )
    expect(runs('2024-03-03')).toContain('101 rows; 101 versions inserted')
    expect(dimension()).toEqual({ keys: range(1, 101), versions: 101 })
  })

  it('a warehouse restored from an older copy, and a state restored from an older copy, are both caught', async () => {
    config(source(), 'extract: { mode: incremental, cursor: updated_at }')
    runs('2024-03-01')
    copyFileSync(WAREHOUSE(), join(work, 'warehouse.copy'))
    copyFileSync(WATERMARK(), join(work, 'watermark.copy'))
    await add(101)
    expect(runs('2024-03-02')).toContain('2 rows; 1 versions inserted')

    // The warehouse as it was before the second run: its ledger lacks the watermark's batch.
    copyFileSync(WAREHOUSE(), join(work, 'warehouse.now'))
    copyFileSync(join(work, 'warehouse.copy'), WAREHOUSE())
    await add(102)
    expect(refused('run', '--table', 'c', '--extracted-at', '2024-03-03')).toMatch(
      /^dimsync: table c: the state store's watermark is \{"cursor":"2024-02-01T00:01:41[^"]*","key":\[101\]\} \(committed by batch 20240302T000000\.000Z-\w+\), but the warehouse \(schema main\) has not merged it: its ledger's last batch of dim_c is 20240301T000000\.000Z-\w+ \(watermark \{"cursor":"2024-01-01T00:01:40[^"]*","key":\[100\]\}\)\. .* \(the next run reads again the rows after that batch\) \(see docs\/errors\.md#the-watermark-and-the-warehouse-disagree\)$/,
    )
    expect(dimsync('reset-watermark', '--table', 'c').out).toMatch(
      /set to \{"cursor":"2024-01-01T00:01:40[^"]*","key":\[100\]\}, recorded by batch 20240301T000000\.000Z-\w+ \(the last batch of dim_c in the warehouse\); the next run reads the rows after it/,
    )
    expect(runs('2024-03-04')).toContain('3 rows; 2 versions inserted, 0 closed, 0 keys deleted, 1 unchanged')
    expect(dimension()).toEqual({ keys: range(1, 102), versions: 102 })

    // The state as it was after the first run: the ledger holds a newer watermark.
    copyFileSync(join(work, 'watermark.copy'), WATERMARK())
    expect(refused('run', '--table', 'c', '--extracted-at', '2024-03-05')).toMatch(
      /^dimsync: table c: the state store's watermark is \{"cursor":"2024-01-01T00:01:40[^"]*","key":\[100\]\} \(committed by batch 20240301T000000\.000Z-\w+\), but the warehouse \(schema main\) merged more: its ledger's last batch of dim_c is 20240304T000000\.000Z-\w+ .*The state was lost or restored from an older copy, and the next delta would read again rows already merged; nothing was extracted\. Set the watermark to the ledger's last batch with: dimsync reset-watermark --table c \(see docs\/errors\.md#the-watermark-and-the-warehouse-disagree\)$/,
    )
    // A state lost altogether, likewise.
    unlinkSync(WATERMARK())
    expect(refused('run', '--table', 'c', '--extracted-at', '2024-03-05')).toContain(
      "table c: the state store holds no watermark, but the warehouse (schema main) merged more: its ledger's last batch of dim_c is 20240304T000000.000Z-",
    )
    expect(dimsync('reset-watermark', '--table', 'c').code).toBe(0)
    // The row at the watermark is read again (the cursor's last value may have more rows to come).
    expect(runs('2024-03-06')).toContain('1 rows; 0 versions inserted, 0 closed, 0 keys deleted, 1 unchanged')
    expect(dimension()).toEqual({ keys: range(1, 102), versions: 102 })
  })

  it('switching extract to full, and changing the cursor, open no version for unchanged rows', async () => {
    await pg.sql(`ALTER TABLE ${table} ADD COLUMN seq INT`)
    await pg.sql(`UPDATE ${table} SET seq = id`)
    config(source(), 'extract: { mode: incremental, cursor: updated_at }')
    runs('2024-03-01')
    // The cursor is never tracked; as the cursor changes, the column becomes tracked: current versions rehashed.
    config(source(), 'extract: { mode: incremental, cursor: seq }')
    expect(runs('2024-03-02')).toMatch(
      /100 rows; 0 versions inserted, 0 closed, 0 keys deleted, 100 unchanged, 0 late keys; config changed: tracked columns \[name, seq\] → \[name, updated_at\], extract incremental \(cursor updated_at\) → incremental \(cursor seq\)/,
    )
    await add(101)
    await pg.sql(`UPDATE ${table} SET seq = 101 WHERE id = 101`)
    expect(runs('2024-03-03')).toContain('2 rows; 1 versions inserted, 0 closed')
    config(source(), 'extract: full')
    expect(runs('2024-03-04')).toMatch(
      /101 rows; 0 versions inserted, 0 closed, 0 keys deleted, 101 unchanged, 0 late keys; config changed: tracked columns \[name, updated_at\] → \[name, seq, updated_at\], extract incremental \(cursor seq\) → full/,
    )
    expect(dimension()).toEqual({ keys: range(1, 101), versions: 101 })
  })
})

describe('files: new_only', () => {
  const drop = (name: string, rows: readonly string[], modified: number) => {
    mkdirSync(join(work, 'in'), { recursive: true })
    const path = join(work, 'in', name)
    writeFileSync(path, ['id,name', ...rows].join('\n') + '\n')
    utimesSync(path, modified, modified)
  }

  it('a lost warehouse is caught and reset-watermark reads every file again', () => {
    config("{ type: file, path: 'in/*.csv', files: new_only }")
    drop('a.csv', ['1,a', '2,b'], 1_700_000_000)
    runs('2024-03-01')
    unlinkSync(WAREHOUSE())
    drop('b.csv', ['3,c'], 1_700_000_100)
    expect(refused('run', '--table', 'c', '--extracted-at', '2024-03-02')).toContain(
      'but the warehouse (schema main) has not merged it: its ledger holds no batch of dim_c with a watermark',
    )
    expect(dimsync('reset-watermark', '--table', 'c').code).toBe(0)
    expect(runs('2024-03-03')).toContain('3 rows; 3 versions inserted')
    expect(dimension()).toEqual({ keys: [1, 2, 3], versions: 3 })
  })

  it('a state restored from an older copy is caught before the files it already merged are read again', () => {
    config("{ type: file, path: 'in/*.csv', files: new_only }")
    drop('a.csv', ['1,a'], 1_700_000_000)
    runs('2024-03-01')
    copyFileSync(WATERMARK(), join(work, 'watermark.copy'))
    drop('b.csv', ['1,b'], 1_700_000_100)
    runs('2024-03-02')
    copyFileSync(join(work, 'watermark.copy'), WATERMARK())
    expect(refused('run', '--table', 'c', '--extracted-at', '2024-03-03')).toContain(
      'but the warehouse (schema main) merged more',
    )
    expect(dimsync('reset-watermark', '--table', 'c').code).toBe(0)
    expect(runs('2024-03-04')).toContain('0 rows; 0 versions inserted')
    expect(dimension()).toEqual({ keys: [1], versions: 2 })
  })
})
