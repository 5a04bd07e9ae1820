import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { KITS, type DbScratch } from '../integration/sources/support/db-kits.ts'
import { runDimsync } from '../support/cli-process.ts'

/**
 * Two source columns whose names differ only in case (`Name` and `name`) are one column in a warehouse, which
 * compares names without case: such a source is refused, from any source, as two columns of one name are.
 */
let work: string
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-case-'))
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsync(env: Record<string, string>, ...args: string[]) {
  return runDimsync(work, args, env)
}

function config(source: string, extra = '') {
  writeFileSync(
    join(work, 'dimsync.yaml'),
    `version: 1
tables:
  - name: mixedcase
    source: ${source}
    key: id
${extra}`,
  )
}

const warehouseFile = () => join(work, '.dimsync', 'warehouse.duckdb')

/**
 * The tables a run left in the warehouse: none when it wrote nothing (a run reads the warehouse's ledger before it
 * extracts, which may create the empty file).
 */
async function warehouseTables(): Promise<string[]> {
  if (!existsSync(warehouseFile())) return []
  const rows = await stored('SELECT table_name FROM information_schema.tables ORDER BY table_name')
  return rows.map((r) => String(r.table_name))
}

async function stored(sql: string): Promise<Record<string, unknown>[]> {
  const warehouse = await DuckDbWarehouse.open({ path: warehouseFile() })
  try {
    return await warehouse.query(sql)
  } finally {
    await warehouse.close()
  }
}

const postgres = KITS.find(({ kit }) => kit.name === 'postgres')!
const mysql = KITS.find(({ kit }) => kit.name === 'mysql')!

describe.skipIf(!postgres.available)('a PostgreSQL table with columns "Name" and name (real process)', () => {
  let db: DbScratch
  const source = () => `{ type: postgres, url_env: DB_URL, table: ${db.table('mixed')} }`

  beforeAll(async () => {
    db = await postgres.kit.create()
    await db.sql(`CREATE TABLE ${db.table('mixed')} (id BIGINT PRIMARY KEY, "Name" text, name text)`)
    await db.sql(`INSERT INTO ${db.table('mixed')} VALUES (1, 'Upper', 'lower')`)
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('is refused naming the table and both columns, and nothing is written', async () => {
    config(source())
    const refused = dimsync(db.env, 'run')
    expect(refused.code).not.toBe(0)
    expect(refused.err).toContain(`dimsync: table mixedcase: ${db.table('mixed')} (PostgreSQL at `)
    expect(refused.err).toMatch(
      /\) has columns Name and name, whose names differ only in case: a warehouse compares column names without case, so both would be stored in one column; rename one \(in a query source: AS <another name>\) or list one in exclude/,
    )
    expect(await warehouseTables()).toEqual([])
  }, 120_000)

  it('loads when one of them is excluded, each value in its own column', async () => {
    config(source(), '    exclude: [Name]\n')
    const loaded = dimsync(db.env, 'run')
    expect(loaded.code, loaded.err).toBe(0)
    expect(await stored('SELECT id, name FROM dim_mixedcase')).toEqual([{ id: 1, name: 'lower' }])
  }, 120_000)
})

describe.skipIf(!mysql.available)(
  'a MariaDB/MySQL query returning columns Name and name (real process)',
  () => {
    let db: DbScratch

    beforeAll(async () => {
      db = await mysql.kit.create()
      await db.sql(`CREATE TABLE ${db.table('mixed')} (id BIGINT PRIMARY KEY, a VARCHAR(20), b VARCHAR(20))`)
    })
    afterAll(async () => {
      await db?.drop()
    })

    it('is refused by the server, which compares column names without case; nothing is written', async () => {
      // A MySQL table cannot hold both names; a query source is read as a derived table, which cannot either.
      config(
        `{ type: mysql, url_env: DB_URL, query: 'SELECT id, a AS \`Name\`, b AS \`name\` FROM ${db.table('mixed')}' }`,
      )
      const refused = dimsync(db.env, 'run')
      expect(refused.code).not.toBe(0)
      expect(refused.err).toContain('dimsync: table mixedcase: MySQL at ')
      expect(refused.err).toContain("Duplicate column name 'name'")
      expect(await warehouseTables()).toEqual([])
    }, 120_000)
  },
)

describe('a file with columns Name and name (real process)', () => {
  it('a CSV file is refused', () => {
    writeFileSync(join(work, 'mixed.csv'), 'id,Name,name\n1,Upper,lower\n')
    config('{ type: file, path: mixed.csv }')
    const refused = dimsync({}, 'run')
    expect(refused.code).not.toBe(0)
    expect(refused.err).toContain(
      'mixedcase: mixed.csv: columns 2 and 3 of the header are both named "name" (names are compared without case)',
    )
  }, 120_000)

  it('a Parquet file is refused (DuckDB would read the second one as name_1)', async () => {
    // DuckDB renames a name that differs from an earlier one only in case when it writes, so the file is written
    // with a placeholder name of the same length, which is then replaced in the file's footer.
    const path = join(work, 'mixed.parquet')
    const instance = await DuckDBInstance.create(':memory:')
    const connection = await instance.connect()
    await connection.run(
      `COPY (SELECT 1 AS id, 'Upper' AS "Name", 'lower' AS "nAmX") TO '${path}' (FORMAT parquet)`,
    )
    connection.closeSync()
    instance.closeSync()
    const bytes = readFileSync(path)
    const placeholder = Buffer.from('nAmX')
    let patched = 0
    for (let at = bytes.indexOf(placeholder); at >= 0; at = bytes.indexOf(placeholder, at + 1)) {
      Buffer.from('name').copy(bytes, at)
      patched++
    }
    expect(patched).toBeGreaterThan(0)
    writeFileSync(path, bytes)

    config('{ type: file, path: mixed.parquet }')
    const refused = dimsync({}, 'run')
    expect(refused.code).not.toBe(0)
    expect(refused.err).toContain(
      'dimsync: mixedcase: mixed.parquet has columns Name and name, whose names differ only in case: a warehouse ' +
        'compares column names without case, so both would be stored in one column; give every column its own name',
    )
    expect(await warehouseTables()).toEqual([])
  }, 120_000)
})
