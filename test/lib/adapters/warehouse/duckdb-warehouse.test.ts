import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../../../lib/adapters/warehouse/duckdb-warehouse.ts'

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
