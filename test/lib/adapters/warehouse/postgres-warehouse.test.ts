import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { DuckDBInstance } from '@duckdb/node-api'
import fc from 'fast-check'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  PostgresWarehouse,
  postgresUrlFromEnvironment,
} from '../../../../lib/adapters/warehouse/postgres-warehouse.ts'
import { duckDbDialect } from '../../../../lib/sql/duckdb/duckdb-dialect.ts'
import { FLOAT_PIECE_FUNCTION, postgresDialect } from '../../../../lib/sql/postgres/postgres-dialect.ts'
import { renderRowHash } from '../../../../lib/sql/row-hash.ts'
import { renderBatchLedgerDdl } from '../../../../lib/sql/render-ddl.ts'
import { expectFalseGuardsSkipRuns } from '../../../support/guarded-runs-scenario.ts'
import { PG_URL } from '../../../integration/sources/support/db-services.ts'

/** The awkward values of each type the staging copy must carry over unchanged (the CSV between DuckDB and PostgreSQL). */
const VALUES = `
  SELECT * FROM (VALUES
    (1, 'a,b "q" ''s''' || chr(10) || 'line', '', 1.5::DOUBLE, DATE '2024-03-10', TIMESTAMPTZ '2024-03-10 14:30:00.123456+00',
     TIMESTAMP '1969-12-31 23:59:59.000001', '\\x00\\xFF,"'::BLOB, 12.50::DECIMAL(10,2), ['x', NULL, '', 'a"b\\c', 'NULL'], true),
    (2, NULL, NULL, 'nan'::DOUBLE, DATE '0044-03-15 (BC)', 'infinity'::TIMESTAMPTZ, '-infinity'::TIMESTAMP, ''::BLOB, -0.01::DECIMAL(10,2), [], false),
    (3, 'NULL', ' ', '-inf'::DOUBLE, 'infinity'::DATE, NULL, NULL, NULL, NULL, NULL, NULL),
    (4, 'é👨‍👩‍👧', '\\N', 0.1::DOUBLE, DATE '0001-01-01', TIMESTAMPTZ '0099-06-01 00:00:00+00', TIMESTAMP '12000-01-01 00:00:00', '\\x0A'::BLOB, 0::DECIMAL(10,2), [NULL], NULL)
  ) v(id, text, empty, score, day, seen, local_seen, photo, amount, tags, flag)`

let folder: string
let part: string
let duckHash: string[]
let columns: { name: string; type: string }[]

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'dimsync-pg-stage-test-'))
  part = join(folder, 'part.parquet')
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  await connection.run(`SET TimeZone = 'UTC'`)
  await connection.run(`COPY (${VALUES}) TO '${part}' (FORMAT parquet)`)
  const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${part}')`)
  columns = described
    .getRowObjectsJson()
    .map((r) => ({ name: String(r.column_name), type: String(r.column_type) }))
  const hashes = await connection.runAndReadAll(
    `SELECT ${renderRowHash(duckDbDialect, columns, 's')} AS h FROM read_parquet('${part}') s ORDER BY s.id`,
  )
  duckHash = hashes.getRowObjectsJson().map((r) => String(r.h))
  connection.closeSync()
  instance.closeSync()
})
afterAll(() => rmSync(folder, { recursive: true, force: true }))

describe('PostgresWarehouse', () => {
  it('skips a run of statements whose guard is false, reading the guard once before the run, as a BigQuery script does', async () => {
    const warehouse = await PostgresWarehouse.open({ url: PG_URL })
    try {
      await expectFalseGuardsSkipRuns(warehouse)
    } finally {
      await warehouse.close()
    }
  })

  it("loads staged Parquet into the session's table with every value as DuckDB reads it (the same row hashes)", async () => {
    const warehouse = await PostgresWarehouse.open({ url: PG_URL })
    try {
      expect(await warehouse.loadStaging([part], { table: 'customers', batchId: 'b1' })).toEqual(columns)
      const rows = await warehouse.query(
        `SELECT ${renderRowHash(postgresDialect, columns, 's')} AS h FROM "__dimsync_stage" s ORDER BY s.id`,
      )
      expect(rows.map((r) => r.h)).toEqual(duckHash)
      // The staged rows' hashes read each float's text from the staging table instead of computing it in PL/pgSQL.
      const staged = renderRowHash(postgresDialect, columns, 's', { readsStagedFloatTexts: true })
      expect(staged).not.toContain(FLOAT_PIECE_FUNCTION)
      const fromStagedTexts = await warehouse.query(
        `SELECT ${staged} AS h FROM "__dimsync_stage" s ORDER BY s.id`,
      )
      expect(fromStagedTexts.map((r) => r.h)).toEqual(duckHash)
      // A second batch in the same session replaces the table.
      await warehouse.loadStaging([part, part], { table: 'customers', batchId: 'b1' })
      expect(await warehouse.query('SELECT COUNT(*) AS n FROM "__dimsync_stage"')).toEqual([{ n: 8 }])
    } finally {
      await warehouse.close()
    }
  })

  it("hashes a float whose name leaves no room for its staged text's column by computing the text (the same hash)", async () => {
    const long = 'f'.repeat(60)
    const file = join(folder, 'long-float.parquet')
    const instance = await DuckDBInstance.create(':memory:')
    const connection = await instance.connect()
    await connection.run(
      `COPY (SELECT * FROM (VALUES (1, 0.1::DOUBLE, 3.25::FLOAT), (2, NULL, 'nan'::FLOAT)) v(id, ${long}, small)) TO '${file}' (FORMAT parquet)`,
    )
    const longColumns = [
      { name: long, type: 'DOUBLE' },
      { name: 'small', type: 'FLOAT' },
    ]
    const expected = (
      await connection.runAndReadAll(
        `SELECT ${renderRowHash(duckDbDialect, longColumns, 's')} AS h FROM read_parquet('${file}') s ORDER BY s.id`,
      )
    )
      .getRowObjectsJson()
      .map((r) => String(r.h))
    connection.closeSync()
    instance.closeSync()
    const warehouse = await PostgresWarehouse.open({ url: PG_URL })
    try {
      await warehouse.loadStaging([file], { table: 'customers', batchId: 'b1' })
      const staged = renderRowHash(postgresDialect, longColumns, 's', { readsStagedFloatTexts: true })
      expect(staged, 'the long name computes its text').toContain(FLOAT_PIECE_FUNCTION)
      const rows = await warehouse.query(`SELECT ${staged} AS h FROM "__dimsync_stage" s ORDER BY s.id`)
      expect(rows.map((r) => r.h)).toEqual(expected)
    } finally {
      await warehouse.close()
    }
  })

  it("any double's staged text hashes as PostgreSQL's own %.17g does (the versions it stored before, re-hashed)", async () => {
    // Invariants 4 and 6 on PostgreSQL: a staged row read through its text and the same row stored earlier must
    // hash alike, or every merge would version an unchanged key again.
    const values = fc.sample(fc.double(), { numRuns: 400, seed: 20261207 })
    const text = (x: number) => (Number.isNaN(x) ? 'nan' : Object.is(x, -0) ? '-0.0' : String(x))
    const file = join(folder, 'doubles.parquet')
    const instance = await DuckDBInstance.create(':memory:')
    const connection = await instance.connect()
    const rows = values.map((x, i) => `(${i}, CAST('${text(x)}' AS DOUBLE), CAST('${text(x)}' AS FLOAT))`)
    await connection.run(
      `COPY (SELECT * FROM (VALUES ${rows.join(', ')}) v(id, x, r)) TO '${file}' (FORMAT parquet)`,
    )
    connection.closeSync()
    instance.closeSync()
    const doubles = [
      { name: 'x', type: 'DOUBLE' },
      { name: 'r', type: 'FLOAT' },
    ]
    const warehouse = await PostgresWarehouse.open({ url: PG_URL })
    try {
      await warehouse.loadStaging([file], { table: 'customers', batchId: 'b1' })
      const hashes = (options: { readsStagedFloatTexts?: boolean }) =>
        warehouse.query(
          `SELECT s.id, ${renderRowHash(postgresDialect, doubles, 's', options)} AS h FROM "__dimsync_stage" s ORDER BY s.id`,
        )
      expect(await hashes({ readsStagedFloatTexts: true })).toEqual(await hashes({}))
    } finally {
      await warehouse.close()
    }
  })

  it('refuses what PostgreSQL cannot store naming the table and column: a type, a text holding a NUL character', async () => {
    const write = async (name: string, select: string) => {
      const file = join(folder, name)
      const instance = await DuckDBInstance.create(':memory:')
      const connection = await instance.connect()
      await connection.run(`COPY (${select}) TO '${file}' (FORMAT parquet)`)
      connection.closeSync()
      instance.closeSync()
      return file
    }
    const unsigned = await write('unsigned.parquet', 'SELECT 1 AS id, 18446744073709551615::UBIGINT AS big')
    const nul = await write(
      'nul.parquet',
      "SELECT * FROM (VALUES (1, 'fine', 'x'), (2, 'a' || chr(0) || 'b', 'y')) v(id, note, other)",
    )
    const warehouse = await PostgresWarehouse.open({ url: PG_URL })
    try {
      await expect(warehouse.loadStaging([unsigned], { table: 'customers', batchId: 'b1' })).rejects.toThrow(
        /^table customers: column "big" has type UBIGINT, which the postgres warehouse cannot store.*; nothing was written$/,
      )
      await expect(warehouse.loadStaging([nul], { table: 'customers', batchId: 'b1' })).rejects.toThrow(
        /^table customers: column "note" holds a text with a NUL character \(U\+0000\), which PostgreSQL cannot store, for example "a\\u0000b"; nothing was written/,
      )
    } finally {
      await warehouse.close()
    }
  })

  it('refuses a database whose encoding is not UTF8, before anything is written', async () => {
    const database = `dimsync_ascii_${randomBytes(4).toString('hex')}`
    const admin = new pg.Client({ connectionString: PG_URL })
    await admin.connect()
    try {
      await admin.query(
        `CREATE DATABASE ${database} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`,
      )
      const url = new URL(PG_URL)
      url.pathname = `/${database}`
      await expect(PostgresWarehouse.open({ url: url.toString() })).rejects.toThrow(
        /database has encoding SQL_ASCII; dimsync needs a UTF8 database/,
      )
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${database}`)
      await admin.end()
    }
  })

  it('reads its URL only from the variable the config names, and names the variable when it is unset', () => {
    expect(postgresUrlFromEnvironment('DW_URL', { DW_URL: 'postgres://h/db' })).toBe('postgres://h/db')
    expect(() => postgresUrlFromEnvironment('DW_URL', {})).toThrow(
      /warehouse.url_env names the environment variable DW_URL, which is not set/,
    )
    expect(() => postgresUrlFromEnvironment('DW_URL', { DW_URL: '' })).toThrow(/DW_URL, which is not set/)
  })

  it('describes a table with the staged types it was created from, or undefined when it does not exist', async () => {
    const schema = `dimsync_test_${randomBytes(6).toString('hex')}`
    const warehouse = await PostgresWarehouse.open({ url: PG_URL })
    try {
      await warehouse.createSchemaIfMissing(schema)
      expect(await warehouse.describeTable({ schema, name: 'missing' })).toBeUndefined()
      const where = (column: string) => ({ table: 't', column })
      const definitions = columns.map(
        (c) =>
          `${postgresDialect.quoteIdentifier(c.name)} ${postgresDialect.columnType(c.type, where(c.name))}`,
      )
      await warehouse.query(`CREATE TABLE "${schema}".t (${definitions.join(', ')}, PRIMARY KEY (id))`)
      const described = await warehouse.describeTable({ schema, name: 't' })
      expect(described!.map((c) => c.name)).toEqual(columns.map((c) => c.name))
      expect(described!.map((c) => c.type)).toEqual(columns.map((c) => c.type))
      expect(described![0]).toMatchObject({ notNull: true })
    } finally {
      await warehouse.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await warehouse.close()
    }
  })

  it('creates a missing schema another installation is creating at the same moment: both go on', async () => {
    // Two runs of a first load start together (test/functions/cli-postgres-two-installations.test.ts): both see no
    // schema, and PostgreSQL's CREATE SCHEMA IF NOT EXISTS of the second waits for the first's and then fails on
    // pg_namespace's unique index. Here the other installation's creation is held open until the warehouse's waits.
    const schema = `dimsync_test_${randomBytes(6).toString('hex')}`
    await withOtherCreating(`CREATE SCHEMA "${schema}"`, schema, async (warehouse, waitedOn) => {
      await waitedOn(warehouse.createSchemaIfMissing(schema))
      expect(
        await warehouse.query(`SELECT 1 AS found FROM pg_namespace WHERE nspname = '${schema}'`),
      ).toHaveLength(1)
    })
  })

  it('creates the batch ledger another installation is creating at the same moment (another table, one schema)', async () => {
    // The advisory locks are per table; the ledger is one per schema, created by the first merge of any table.
    const schema = `dimsync_test_${randomBytes(6).toString('hex')}`
    const ledger = renderBatchLedgerDdl(postgresDialect, { schema, name: '_dimsync_batches' })
    const setup = await PostgresWarehouse.open({ url: PG_URL })
    await setup.createSchemaIfMissing(schema).finally(() => setup.close())
    await withOtherCreating(ledger.sql, schema, async (warehouse, waitedOn) => {
      await waitedOn(warehouse.runAlone(ledger))
      expect(await warehouse.describeTable({ schema, name: '_dimsync_batches' })).toBeDefined()
    })
  })
})

/**
 * Runs `creation` in another session's open transaction, then `work`, whose `waitedOn(promise)` waits until the
 * warehouse's session is blocked on that creation, commits it, and awaits `promise`. Drops `schema` after.
 */
async function withOtherCreating(
  creation: string,
  schema: string,
  work: (warehouse: PostgresWarehouse, waitedOn: (promise: Promise<void>) => Promise<void>) => Promise<void>,
): Promise<void> {
  const other = new pg.Client({ connectionString: PG_URL })
  await other.connect()
  const warehouse = await PostgresWarehouse.open({ url: PG_URL })
  try {
    const [{ pid }] = (await warehouse.query('SELECT pg_backend_pid() AS pid')) as [{ pid: number }]
    await other.query('BEGIN')
    await other.query(creation)
    await work(warehouse, async (promise) => {
      let settled: string | undefined
      const watched = promise.then(
        () => void (settled = 'done'),
        (error: unknown) => {
          settled = `failed: ${(error as Error).message}`
          throw error
        },
      )
      watched.catch(() => undefined)
      const deadline = Date.now() + 30_000
      for (;;) {
        // Inside its transaction, the other session would read the statistics of its first look every time.
        await other.query('SELECT pg_stat_clear_snapshot()')
        const { rows } = await other.query(
          `SELECT wait_event_type, query FROM pg_stat_activity WHERE pid = $1`,
          [pid],
        )
        const session = rows[0] as { wait_event_type: string | null; query: string } | undefined
        if (session?.wait_event_type === 'Lock' && session.query.startsWith('CREATE')) break
        if (settled !== undefined || Date.now() > deadline)
          throw new Error(
            `the warehouse never waited on the other session's creation (${settled ?? 'still running'}; its ` +
              `session: ${JSON.stringify(session)})`,
          )
        await sleep(20)
      }
      await other.query('COMMIT')
      await watched
    })
  } finally {
    await other.query('ROLLBACK').catch(() => undefined)
    await other.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await other.end()
    await warehouse.close()
  }
}
