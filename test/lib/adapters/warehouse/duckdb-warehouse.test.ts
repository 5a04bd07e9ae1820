import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { expectFalseGuardsSkipRuns } from '../../../support/guarded-runs-scenario.ts'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-duckdb-warehouse-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function writeParquet(path: string): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  await connection.run(`COPY (SELECT 1 AS id, 'a' AS name) TO '${path}' (FORMAT parquet)`)
  connection.closeSync()
  instance.closeSync()
}

describe('DuckDbWarehouse.open: warehouse.path', () => {
  it('refuses a file that is not a DuckDB database (DuckDB would open it as an in-memory view), and leaves it as it was', async () => {
    const csv = join(dir, 'customers.csv')
    await writeFile(csv, 'customer_id,name\n101,Ana\n')
    await expect(DuckDbWarehouse.open({ path: csv })).rejects.toThrow(
      `warehouse.path ${csv} is not a DuckDB database (it starts with "customer_id,name"); ` +
        'point warehouse.path at a DuckDB database file, or at a path that does not exist yet',
    )
    expect(await readFile(csv, 'utf8')).toBe('customer_id,name\n101,Ana\n')

    const parquet = join(dir, 'customers.parquet')
    await writeParquet(parquet)
    await expect(DuckDbWarehouse.open({ path: parquet })).rejects.toThrow(
      `warehouse.path ${parquet} is not a DuckDB database (it starts with "PAR1`,
    )
    const empty = join(dir, 'empty.duckdb')
    await writeFile(empty, '')
    await expect(DuckDbWarehouse.open({ path: empty })).rejects.toThrow(
      `warehouse.path ${empty} is not a DuckDB database (it is empty)`,
    )
    const folder = join(dir, 'folder')
    await mkdir(folder)
    await expect(DuckDbWarehouse.open({ path: folder })).rejects.toThrow(
      `warehouse.path ${folder} is a folder, not a DuckDB database file`,
    )
  })

  it('creates a new database at a new path and opens it again', async () => {
    const path = join(dir, 'nested', 'warehouse.duckdb')
    const first = await DuckDbWarehouse.open({ path })
    await first.transaction(
      (tx) => tx.execute({ label: 'create', sql: 'CREATE TABLE t AS SELECT 42 AS n' }),
      {
        commit: true,
      },
    )
    await first.close()
    const again = await DuckDbWarehouse.open({ path })
    expect(await again.query('SELECT n FROM t')).toEqual([{ n: 42 }])
    await again.close()
  })
})

describe('DuckDbWarehouse.query: dates and times as DuckDB writes them', () => {
  it('infinite dates and the year 1 BC read as DuckDB casts them to text, not as other dates', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: join(dir, 'warehouse.duckdb') })
    const sql =
      "SELECT 'infinity'::DATE AS a, '-infinity'::DATE AS b, '0001-01-01 (BC)'::DATE AS c, " +
      "'0001-06-30 (BC) 10:00:00'::TIMESTAMP AS d, '-infinity'::TIMESTAMP AS e, '4713-01-01 (BC)'::DATE AS f, " +
      "'2024-03-10'::DATE AS g, '2024-03-10 14:30:00'::TIMESTAMPTZ AS h, '0001-01-01 (BC) 00:00:00+00'::TIMESTAMPTZ AS i"
    const [row] = await warehouse.query(sql)
    const [text] = await warehouse.query(
      `SELECT ${['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((c) => `CAST(${c} AS VARCHAR) AS ${c}`).join(', ')} FROM (${sql})`,
    )
    expect(row).toEqual(text)
    expect(row).toEqual({
      a: 'infinity',
      b: '-infinity',
      c: '0001-01-01 (BC)',
      d: '0001-06-30 (BC) 10:00:00',
      e: '-infinity',
      f: '4713-01-01 (BC)',
      g: '2024-03-10',
      h: '2024-03-10 14:30:00+00',
      i: '0001-01-01 (BC) 00:00:00+00',
    })
    await warehouse.close()
  })
})

/** Digits of a number's shortest text, without its sign, point, exponent and trailing zeros. */
function significantDigits(value: number): number {
  return value.toExponential().replace(/e.*$/, '').replace(/[-.]/g, '').replace(/0+$/, '').length || 1
}

describe('DuckDbWarehouse.query: FLOAT (REAL) values as DuckDB writes them', () => {
  it('a FLOAT reads as the number of its shortest text (0.1, not 0.10000000149011612), in lists and structs too', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: ':memory:' })
    try {
      const [row] = await warehouse.query(
        "SELECT 0.1::FLOAT AS a, 3.4028235e38::FLOAT AS b, 16777217::FLOAT AS c, 1e-45::FLOAT AS d, 'NaN'::FLOAT AS e, " +
          "'-inf'::FLOAT AS f, NULL::FLOAT AS g, [0.1::FLOAT, NULL] AS h, {'x': 1.0000001::FLOAT} AS i, 0.1::DOUBLE AS j",
      )
      expect(row).toEqual({
        a: 0.1,
        b: 3.4028235e38,
        c: 16777216,
        d: 1e-45,
        e: 'NaN',
        f: '-Infinity',
        g: null,
        h: [0.1, null],
        i: { x: 1.0000001 },
        j: 0.1,
      })
    } finally {
      await warehouse.close()
    }
  })

  it('any finite FLOAT reads as the same float as DuckDB casts it to text as, in no more digits', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: ':memory:' })
    try {
      await fc.assert(
        fc.asyncProperty(fc.float({ noNaN: true, noDefaultInfinity: true }), async (value) => {
          // The float's exact value as a double literal: DuckDB's cast gives back the same float.
          const literal = Object.is(value, -0) ? '-0.0' : String(value)
          const [row] = await warehouse.query(
            `SELECT x, CAST(x AS VARCHAR) AS text FROM (SELECT CAST(${literal} AS FLOAT) AS x)`,
          )
          const read = row!.x as number
          expect(Math.fround(read)).toBe(Math.fround(Number(row!.text)))
          expect(significantDigits(read)).toBeLessThanOrEqual(significantDigits(Number(row!.text)))
        }),
        { numRuns: 300 },
      )
    } finally {
      await warehouse.close()
    }
  })
})

describe('DuckDbWarehouse errors', () => {
  it('a failed statement is one line naming the statement; the full DuckDB message stays the cause', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: ':memory:' })
    try {
      const error = await warehouse
        .transaction(
          (tx) =>
            tx.execute({ label: 'build events', sql: 'SELECT CAST(x AS TIMESTAMPTZ) FROM (SELECT 1 AS y)' }),
          {
            commit: true,
          },
        )
        .then(
          () => undefined,
          (e: unknown) => e as Error,
        )
      expect(error?.message).toBe(
        'warehouse statement "build events" failed: Binder Error: Referenced column "x" not found in FROM clause!',
      )
      expect(((error?.cause as Error).cause as Error).message).toContain('LINE 1:')
    } finally {
      await warehouse.close()
    }
  })
})

describe('DuckDbWarehouse guarded statements', () => {
  it('skips a run of statements whose guard is false, reading the guard once before the run, as a BigQuery script does', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: ':memory:' })
    try {
      await expectFalseGuardsSkipRuns(warehouse)
    } finally {
      await warehouse.close()
    }
  })
})

describe('DuckDbWarehouse.describeTable', () => {
  it("reads a table's columns in order with their types and NOT NULL, in a file database whose name is a schema's", async () => {
    // A database file named main.duckdb is the catalog "main": a two-part name main.t would be ambiguous.
    const warehouse = await DuckDbWarehouse.open({ path: join(dir, 'main.duckdb') })
    await warehouse.query('CREATE SCHEMA history')
    await warehouse.query(
      'CREATE TABLE history.dim (id BIGINT NOT NULL, "Name ""quoted""" VARCHAR, amount DECIMAL(18,3), tags VARCHAR[], changed_at TIMESTAMPTZ)',
    )
    await warehouse.query('CREATE TABLE main.dim (other INTEGER)')
    expect(await warehouse.describeTable({ schema: 'history', name: 'dim' })).toEqual([
      { name: 'id', type: 'BIGINT', notNull: true },
      { name: 'Name "quoted"', type: 'VARCHAR' },
      { name: 'amount', type: 'DECIMAL(18,3)' },
      { name: 'tags', type: 'VARCHAR[]' },
      { name: 'changed_at', type: 'TIMESTAMP WITH TIME ZONE' },
    ])
    expect(await warehouse.describeTable({ name: 'dim' })).toEqual([{ name: 'other', type: 'INTEGER' }])
    await warehouse.query('CREATE TABLE history."dim ""x"".y" (id BIGINT NOT NULL)')
    await warehouse.query(`CREATE TABLE history."o'brien" (id BIGINT)`)
    expect(await warehouse.describeTable({ schema: 'history', name: 'dim "x".y' })).toEqual([
      { name: 'id', type: 'BIGINT', notNull: true },
    ])
    expect(await warehouse.describeTable({ schema: 'history', name: "o'brien" })).toEqual([
      { name: 'id', type: 'BIGINT' },
    ])
    expect(await warehouse.describeTable({ schema: 'history', name: 'dim "y"' })).toBeUndefined()
    await warehouse.close()
  })

  it('is undefined for a missing table or schema, and for a temporary table of that name; a transaction open around it goes on', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: ':memory:' })
    await warehouse.query('CREATE TEMP TABLE dim (id BIGINT)')
    const described = await warehouse.transaction(
      async (tx) => {
        await tx.execute({ label: 'create', sql: 'CREATE TABLE kept (id BIGINT)' })
        const missing = await warehouse.describeTable({ schema: 'main', name: 'nothing' })
        const noSchema = await warehouse.describeTable({ schema: 'nowhere', name: 'dim' })
        const temporary = await warehouse.describeTable({ schema: 'main', name: 'dim' })
        return [missing, noSchema, temporary]
      },
      { commit: true },
    )
    expect(described).toEqual([undefined, undefined, undefined])
    expect(await warehouse.describeTable({ name: 'kept' })).toEqual([{ name: 'id', type: 'BIGINT' }])
    await warehouse.close()
  })
})
