import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresDialect } from '../../../lib/sql/postgres/postgres-dialect.ts'
import { POSTGRES_SESSION_SETUP } from '../../../lib/sql/postgres/postgres-session.ts'
import { PG_URL } from '../../integration/sources/support/db-services.ts'

/** What the PostgreSQL dialect renders where PostgreSQL has no built-in, executed on the real server. */
let client: pg.Client
beforeAll(async () => {
  client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  for (const statement of POSTGRES_SESSION_SETUP) await client.query(statement)
})
afterAll(() => client?.end())

const where = { table: 'customers', column: 'visits' }

async function one(sql: string): Promise<unknown> {
  const { rows } = await client.query<{ v: unknown }>(`SELECT ${sql} AS v`)
  return rows[0]!.v
}

describe('the PostgreSQL dialect on the server', () => {
  it('tryCast: the converted value, or NULL where it does not convert (as DuckDB TRY_CAST)', async () => {
    expect(await one(postgresDialect.tryCast(`'12'`, 'INTEGER', where))).toBe(12)
    expect(await one(postgresDialect.tryCast(`'twelve'`, 'INTEGER', where))).toBeNull()
    expect(await one(postgresDialect.tryCast('CAST(3000000000 AS BIGINT)', 'INTEGER', where))).toBeNull()
    expect(await one(postgresDialect.tryCast(`'2024-02-30'`, 'DATE', where))).toBeNull()
    expect(await one(postgresDialect.tryCast(`'1.50'`, 'DECIMAL(10,2)', where))).toBe('1.50')
    expect(await one(postgresDialect.tryCast('NULL', 'INTEGER', where))).toBeNull()
  })

  it('raiseError aborts the statement with the message intact, markers included', async () => {
    const message = '[dimsync-check kind=null-key table=t batch=b] it\'s 100% "bad" [/dimsync-check]'
    await expect(
      client.query(`SELECT ${postgresDialect.raiseError(postgresDialect.stringLiteral(message))}`),
    ).rejects.toThrow(message)
  })

  it('firstPerGroup keeps the first row of each group in the order given', async () => {
    const sql = postgresDialect.firstPerGroup({
      select: `SELECT x.k, x.v FROM (VALUES (1, 'a', 2), (1, 'b', 3), (2, 'c', 1)) x(k, v, at) WHERE TRUE`,
      separator: '\n',
      partitionBy: 'x.k',
      orderBy: 'x.at DESC',
    })
    const { rows } = await client.query(sql)
    expect(rows).toEqual([
      { k: 1, v: 'b' },
      { k: 2, v: 'c' },
    ])
    expect(() =>
      postgresDialect.firstPerGroup({ select: 'SELECT DISTINCT k FROM t', separator: ' ', partitionBy: 'k' }),
    ).toThrow(/cannot keep the first row per group/)
  })
})
