import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { POSTGRES_SESSION_SETUP, postgresDialect } from '../../../lib/sql/postgres/postgres-dialect.ts'
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

  it('lastNonNull: the newest non-NULL value up to each row, of any type (LAST_VALUE … IGNORE NULLS elsewhere)', async () => {
    const window = 'PARTITION BY x.k ORDER BY x.at'
    const { rows } = await client.query(
      `SELECT x.k, x.at, ${postgresDialect.lastNonNull('x.v', window)} AS v, ${postgresDialect.lastNonNull('x.a', window)} AS a ` +
        `FROM (VALUES (1, 1, 'a', ARRAY[1]), (1, 2, NULL, NULL), (1, 3, 'c', ARRAY[2, 3]), (1, 4, NULL, NULL), ` +
        `(2, 1, NULL, NULL)) x(k, at, v, a) ORDER BY x.k, x.at`,
    )
    expect(rows.map((r) => [r.k, r.at, r.v, r.a])).toEqual([
      [1, 1, 'a', [1]],
      [1, 2, 'a', [1]],
      [1, 3, 'c', [2, 3]],
      [1, 4, 'c', [2, 3]],
      [2, 1, null, null],
    ])
  })

  it('selectReplacing lists every column, the replaced ones as their expressions', async () => {
    const select = postgresDialect.selectReplacing({
      alias: 's',
      columns: ['k', 'v', 'w'],
      replacements: [['v', `upper(s.v)`]],
      separator: ', ',
    })
    const { rows } = await client.query(`${select} FROM (VALUES (1, 'a', 'b')) s(k, v, w)`)
    expect(rows).toEqual([{ k: 1, v: 'A', w: 'b' }])
    expect(() =>
      postgresDialect.selectReplacing({
        alias: 's',
        columns: ['k'],
        replacements: [['v', 'x']],
        separator: ' ',
      }),
    ).toThrow(/cannot replace column v/)
  })
})
