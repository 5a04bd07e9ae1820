import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { KITS, type DbScratch } from '../integration/sources/support/db-kits.ts'
import { runDimsync } from '../support/cli-process.ts'

/**
 * Change feeds that a CDC tool writes into a database table, loaded through the real CLI: a late event (older
 * change time, newer sequence) inserted between two runs is slotted into history, a table whose watermark was
 * kept by an older dimsync is read again from the start, and a fact feed with several changes of one fact loads.
 */
describe.each(KITS)('dimsync run of a $kit.label change feed (real process)', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let work: string
    const q = (name: string) => (kit.name === 'postgres' ? `"${name}"` : `\`${name}\``)

    beforeAll(async () => {
      db = await kit.create()
    })
    afterAll(async () => {
      await db.drop()
    })
    beforeEach(() => {
      work = mkdtempSync(join(tmpdir(), 'dimsync-cli-feed-'))
    })
    afterEach(() => rmSync(work, { recursive: true, force: true }))

    function dimsync(...args: string[]) {
      return runDimsync(work, args, db.env)
    }

    async function query(sql: string): Promise<Record<string, unknown>[]> {
      const warehouse = await DuckDbWarehouse.open({ path: join(work, '.dimsync', 'warehouse.duckdb') })
      try {
        return await warehouse.query(sql)
      } finally {
        await warehouse.close()
      }
    }

    const history = async () =>
      (
        await query(
          `SELECT customer_id, region, CAST(valid_from AS VARCHAR) AS f, CAST(valid_to AS VARCHAR) AS t
           FROM dim_cust ORDER BY customer_id, valid_from`,
        )
      ).map((r) => [
        Number(r.customer_id),
        r.region,
        String(r.f).slice(0, 10),
        r.t === null ? null : String(r.t).slice(0, 10),
      ])

    async function customerFeed(name: string): Promise<string> {
      const t = db.table(name)
      await db.sql(
        `CREATE TABLE ${t} (${q('Op')} ${kit.ddl.text}, seq BIGINT NOT NULL, changed_at ${kit.ddl.timestamp} NOT NULL,
          customer_id BIGINT NOT NULL, region ${kit.ddl.text})`,
      )
      await db.sql(
        `INSERT INTO ${t} VALUES ('I', 1, '2024-01-01 00:00:00', 1, 'South'), ('U', 2, '2024-03-01 00:00:00', 1, 'North')`,
      )
      return t
    }

    function customerConfig(source: string, extract: string) {
      writeFileSync(
        join(work, 'dimsync.yaml'),
        `version: 1
tables:
  - name: cust
    source: { type: ${kit.name}, url_env: DB_URL, table: ${source} }
    key: customer_id
    extract: ${extract}
    valid_from: { column: changed_at }
`,
      )
    }

    it('slots in an event inserted later with an older change time (the cursor is the sequence)', async () => {
      const t = await customerFeed('cust_feed')
      customerConfig(t, '{ mode: changes, sequence: seq }')
      const first = dimsync('run', '--extracted-at', '2024-04-01T00:00:00Z')
      expect(first.code, first.err).toBe(0)
      expect(first.out).toMatch(/^cust → dim_cust: batch \S+, 2 rows; 2 versions inserted/m)
      await db.sql(`INSERT INTO ${t} VALUES ('U', 3, '2024-02-01 00:00:00', 1, 'East')`)
      const second = dimsync('run', '--extracted-at', '2024-04-02T00:00:00Z')
      expect(second.code, second.err).toBe(0)
      // Read from the last sequence on (rows at the watermark are read again): North again, and East.
      expect(second.out).toMatch(/^cust → dim_cust: batch \S+, 2 rows; 1 versions inserted/m)
      expect(await history()).toEqual([
        [1, 'South', '2024-01-01', '2024-02-01'],
        [1, 'East', '2024-02-01', '2024-03-01'],
        [1, 'North', '2024-03-01', null],
      ])
      // Nothing new: only the event at the watermark is read again, and changes nothing.
      expect(dimsync('run', '--extracted-at', '2024-04-03T00:00:00Z').out).toMatch(
        /^cust → dim_cust: batch \S+, 1 rows; 0 versions inserted, 0 closed, 0 keys deleted, 1 unchanged/m,
      )
    }, 180_000)

    it('refuses a feed read by its change time, saying why and what to write instead', async () => {
      const t = await customerFeed('cust_by_time')
      customerConfig(t, '{ mode: changes, cursor: changed_at, sequence: seq }')
      const refused = dimsync('run')
      expect(refused.code).not.toBe(0)
      expect(refused.err).toContain(
        'tables[0].extract.cursor: a change feed read from a database by its change time "changed_at" loses late events',
      )
      customerConfig(t, '{ mode: changes }')
      const noOrder = dimsync('run')
      expect(noOrder.code).not.toBe(0)
      expect(noOrder.err).toContain(
        'tables[0].extract: a change feed read from a database needs a column that only grows in commit order',
      )
    }, 180_000)

    it('reads a feed again from the start when its watermark was kept for another cursor column', async () => {
      const t = await customerFeed('cust_legacy')
      customerConfig(t, '{ mode: changes, sequence: seq }')
      const loaded = dimsync('run', '--extracted-at', '2024-04-01T00:00:00Z')
      expect(loaded.code, loaded.err).toBe(0)
      // What an older dimsync kept for this table, whose cursor defaulted to the change time: a watermark in
      // the change time's domain that names no column.
      const watermarkFile = join(work, '.dimsync', 'state', 'cust', 'watermark.json')
      const kept = JSON.parse(readFileSync(watermarkFile, 'utf8')) as { column?: string }
      expect(kept.column).toBe('seq')
      mkdirSync(join(work, '.dimsync', 'state', 'cust'), { recursive: true })
      writeFileSync(watermarkFile, `${JSON.stringify({ cursor: '2024-03-01T00:00:00', key: [1] })}\n`)
      await db.sql(`INSERT INTO ${t} VALUES ('U', 3, '2024-02-01 00:00:00', 1, 'East')`)
      const again = dimsync('run', '--extracted-at', '2024-04-02T00:00:00Z')
      expect(again.code, again.err).toBe(0)
      // Every event read again: those already merged change nothing, the late one is slotted in.
      expect(again.out).toMatch(/^cust → dim_cust: batch \S+, 3 rows; 1 versions inserted/m)
      expect(await history()).toEqual([
        [1, 'South', '2024-01-01', '2024-02-01'],
        [1, 'East', '2024-02-01', '2024-03-01'],
        [1, 'North', '2024-03-01', null],
      ])
      expect(JSON.parse(readFileSync(watermarkFile, 'utf8'))).toEqual({
        cursor: 3,
        key: [1],
        column: 'seq',
        batchId: expect.any(String),
      })
    }, 180_000)

    it('skips the rows of ignored operations (before-images, heartbeats); an unknown one still refuses the batch', async () => {
      const t = db.table('cust_ops')
      await db.sql(
        `CREATE TABLE ${t} (${q('Op')} ${kit.ddl.text}, seq BIGINT NOT NULL, changed_at ${kit.ddl.timestamp} NOT NULL,
          customer_id BIGINT NULL, region ${kit.ddl.text})`,
      )
      // A before-image repeats the old state at the change's time; a heartbeat names no key.
      await db.sql(
        `INSERT INTO ${t} VALUES ('I', 1, '2024-01-01 00:00:00', 1, 'South'), ('B', 2, '2024-03-01 00:00:00', 1, 'South'),
          ('U', 3, '2024-03-01 00:00:00', 1, 'North'), ('HB', 4, '2024-03-02 00:00:00', NULL, NULL)`,
      )
      customerConfig(t, '{ mode: changes, sequence: seq, ops: { ignore: [B, HB] } }')
      const first = dimsync('run', '--extracted-at', '2024-04-01T00:00:00Z')
      expect(first.code, first.err).toBe(0)
      expect(first.out).toMatch(/^cust → dim_cust: batch \S+, 2 rows; 2 versions inserted/m)
      expect(await history()).toEqual([
        [1, 'South', '2024-01-01', '2024-03-01'],
        [1, 'North', '2024-03-01', null],
      ])
      await db.sql(`INSERT INTO ${t} VALUES ('X', 5, '2024-03-05 00:00:00', 1, 'East')`)
      const unknown = dimsync('run', '--extracted-at', '2024-04-02T00:00:00Z')
      expect(unknown.code).not.toBe(0)
      expect(unknown.err).toMatch(
        /events whose operation \(column Op\) is NULL or not one of I, U, D, for example key customer_id=1 with Op X; nothing was written/,
      )
      expect(await history()).toEqual([
        [1, 'South', '2024-01-01', '2024-03-01'],
        [1, 'North', '2024-03-01', null],
      ])
      // The way out: name the value; ignore applies to rows extracted from then on, so the refused batch (kept
      // staged and tried first) is discarded and the next run extracts again from the same watermark.
      customerConfig(t, '{ mode: changes, sequence: seq, ops: { ignore: [B, HB, X] } }')
      const again = dimsync('run', '--extracted-at', '2024-04-03T00:00:00Z')
      expect(again.code).not.toBe(0)
      const batch = /dimsync discard --table cust --batch (\S+)/.exec(again.err)?.[1]
      expect(batch, again.err).toBeDefined()
      const discarded = dimsync('discard', '--table', 'cust', '--batch', batch!)
      expect(discarded.code, discarded.err).toBe(0)
      const skipped = dimsync('run', '--extracted-at', '2024-04-04T00:00:00Z')
      expect(skipped.code, skipped.err).toBe(0)
      expect(await history()).toEqual([
        [1, 'South', '2024-01-01', '2024-03-01'],
        [1, 'North', '2024-03-01', null],
      ])
    }, 180_000)

    it('a truncate as the newest event (its key NULL) ends every key and leaves a watermark the next run reads after', async () => {
      const t = db.table('cust_trunc')
      await db.sql(
        `CREATE TABLE ${t} (${q('Op')} ${kit.ddl.text}, seq BIGINT NOT NULL, changed_at ${kit.ddl.timestamp} NOT NULL,
          customer_id BIGINT NULL, region ${kit.ddl.text})`,
      )
      await db.sql(
        `INSERT INTO ${t} VALUES ('I', 1, '2024-01-01 00:00:00', 1, 'South'), ('I', 2, '2024-01-01 00:00:00', 2, 'North'),
          ('T', 3, '2024-02-01 00:00:00', NULL, NULL)`,
      )
      // Before the config names T, the batch is refused for its operation (and stays staged for the next run).
      customerConfig(t, '{ mode: changes, sequence: seq }')
      const unnamed = dimsync('run', '--extracted-at', '2024-03-31T00:00:00Z')
      expect(unnamed.code).toBe(1)
      expect(unnamed.err).toMatch(
        /not one of I, U, D, for example key customer_id=NULL with Op T; nothing was written\. Say what the value means in extract\.ops/,
      )
      customerConfig(t, '{ mode: changes, sequence: seq, ops: { truncate: T } }')
      const first = dimsync('run', '--extracted-at', '2024-04-01T00:00:00Z')
      expect(first.code, first.err).toBe(0)
      const truncated = [
        [1, 'South', '2024-01-01', '2024-02-01'],
        [2, 'North', '2024-01-01', '2024-02-01'],
      ]
      expect(await history()).toEqual(truncated)
      const again = dimsync('run', '--extracted-at', '2024-04-02T00:00:00Z')
      expect(again.code, again.err).toBe(0)
      expect(await history()).toEqual(truncated)
      await db.sql(`INSERT INTO ${t} VALUES ('I', 4, '2024-03-01 00:00:00', 1, 'East')`)
      const back = dimsync('run', '--extracted-at', '2024-04-03T00:00:00Z')
      expect(back.code, back.err).toBe(0)
      expect(await history()).toEqual([
        [1, 'South', '2024-01-01', '2024-02-01'],
        [1, 'East', '2024-03-01', null],
        [2, 'North', '2024-01-01', '2024-02-01'],
      ])
    }, 180_000)

    it('loads a fact feed holding several changes of one fact, and applies the last one', async () => {
      const t = db.table('orders_cdc')
      await db.sql(
        `CREATE TABLE ${t} (${q('Op')} ${kit.ddl.text}, seq BIGINT NOT NULL, order_id BIGINT NOT NULL,
          customer_id BIGINT NOT NULL, ordered_at ${kit.ddl.timestamp} NOT NULL, amount BIGINT)`,
      )
      await db.sql(
        `INSERT INTO ${t} VALUES ('I', 1, 10, 101, '2024-02-01 10:00:00', 5), ('U', 2, 10, 101, '2024-02-01 10:00:00', 7),
          ('I', 3, 11, 101, '2024-02-02 10:00:00', 3), ('HB', 4, 0, 0, '2024-02-03 00:00:00', NULL)`,
      )
      writeFileSync(join(work, 'customers.csv'), 'customer_id,region\n101,South\n')
      writeFileSync(
        join(work, 'dimsync.yaml'),
        `version: 1
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    key: customer_id
facts:
  - name: orders
    source: { type: ${kit.name}, url_env: DB_URL, table: ${t} }
    extract: { mode: changes, sequence: seq, ops: { ignore: HB } } # HB: the CDC tool's heartbeat
    grain: order_id
    event_time: ordered_at
    measures: [amount]
    references:
      - { dimension: customers, key: customer_id, as: customer }
`,
      )
      const first = dimsync('run', '--extracted-at', '2024-01-01T00:00:00Z')
      expect(first.code, first.err).toBe(0)
      // 10's insert is followed by its update in the same batch: only the update applies.
      expect(first.out).toMatch(
        /^orders → fact_orders: batch \S+, 3 rows; 2 facts loaded, 0 to the unknown member of customers \(customer_sk\); 1 change\(s\) not newer than their fact's latest \(nothing applied\)$/m,
      )
      const facts = async () =>
        (await query('SELECT order_id, amount FROM fact_orders ORDER BY order_id')).map((r) => [
          Number(r.order_id),
          Number(r.amount),
        ])
      expect(await facts()).toEqual([
        [10, 7],
        [11, 3],
      ])
      await db.sql(
        `INSERT INTO ${t} VALUES ('D', 5, 10, 101, '2024-02-01 10:00:00', 7), ('U', 6, 11, 101, '2024-02-02 10:00:00', 4),
          ('U', 7, 11, 101, '2024-02-02 10:00:00', 6)`,
      )
      const second = dimsync('run', '--extracted-at', '2024-01-02T00:00:00Z')
      expect(second.code, second.err).toBe(0)
      // The delta reads again from its watermark (11's insert at 3, loaded); 11's update at 6 is followed by 7.
      expect(second.out).toMatch(
        /^orders → fact_orders: batch \S+, 4 rows; 1 facts loaded, 0 to the unknown member of customers \(customer_sk\); 1 delete\(s\) applied, 2 change\(s\) not newer than their fact's latest \(nothing applied\)$/m,
      )
      expect(await facts()).toEqual([[11, 6]])
      // The grain is still checked, after folding: two changes of one fact at one sequence value are refused.
      await db.sql(
        `INSERT INTO ${t} VALUES ('U', 8, 11, 101, '2024-02-02 10:00:00', 8), ('U', 8, 11, 101, '2024-02-02 10:00:00', 9)`,
      )
      const twice = dimsync('run', '--table', 'orders', '--extracted-at', '2024-01-03T00:00:00Z')
      expect(twice.code).not.toBe(0)
      expect(twice.err).toMatch(
        /fact orders: batch \S+ has 1 grain values with two changes at one seq \(grain order_id\), for example: order_id=11 \(2 facts\); nothing was written/,
      )
      expect(await facts()).toEqual([[11, 6]])
    }, 180_000)
  })
})

describe('a change feed file with ignored operations (real process)', () => {
  let work: string
  beforeEach(() => {
    work = mkdtempSync(join(tmpdir(), 'dimsync-cli-feed-file-'))
  })
  afterEach(() => rmSync(work, { recursive: true, force: true }))

  it('skips the rows of ignored operations; the others are merged', async () => {
    writeFileSync(
      join(work, 'changes.csv'),
      'op,seq,changed_at,customer_id,region\n' +
        'c,1,2024-01-01T00:00:00Z,1,South\n' +
        'before,2,2024-03-01T00:00:00Z,1,South\n' +
        'u,3,2024-03-01T00:00:00Z,1,North\n' +
        'hb,4,2024-03-02T00:00:00Z,,\n',
    )
    writeFileSync(
      join(work, 'dimsync.yaml'),
      `version: 1
tables:
  - name: cust
    source: { type: file, path: changes.csv }
    key: customer_id
    extract: { mode: changes, operation: op, sequence: seq, ops: { insert: c, update: u, delete: d, ignore: [before, hb] } }
    valid_from: { column: changed_at }
`,
    )
    const r = runDimsync(work, ['run', '--extracted-at', '2024-04-01T00:00:00Z'])
    expect(r.code, r.err).toBe(0)
    expect(r.out).toMatch(/^cust → dim_cust: batch \S+, 2 rows; 2 versions inserted/m)
    const warehouse = await DuckDbWarehouse.open({ path: join(work, '.dimsync', 'warehouse.duckdb') })
    try {
      const rows = await warehouse.query(
        'SELECT customer_id, region, CAST(valid_from AS VARCHAR) AS f FROM dim_cust ORDER BY valid_from',
      )
      expect(rows.map((row) => [Number(row.customer_id), row.region, String(row.f).slice(0, 10)])).toEqual([
        [1, 'South', '2024-01-01'],
        [1, 'North', '2024-03-01'],
      ])
    } finally {
      await warehouse.close()
    }
  }, 120_000)
})
