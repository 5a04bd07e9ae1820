import { createHash } from 'node:crypto'
import { DuckDBInstance } from '@duckdb/node-api'
import fc from 'fast-check'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { POSTGRES_SESSION_SETUP, postgresDialect } from '../../../lib/sql/postgres/postgres-dialect.ts'
import { renderRowHash } from '../../../lib/sql/row-hash.ts'
import { PG_URL } from '../../integration/sources/support/db-services.ts'

/**
 * The row hash must give the same hex for the same row in DuckDB and BigQuery. DuckDB is executed for real; for
 * BigQuery (no emulator exists) the test builds, in Node, the exact string the BigQuery expression builds
 * according to BigQuery's documented semantics of each function it uses, and hashes it with MD5:
 * CAST(INT64/BOOL/DATE AS STRING), FORMAT_TIMESTAMP/FORMAT_DATETIME/FORMAT_TIME with %H:%M:%E6S (6 fractional
 * digits), FORMAT('%.Nf') of NUMERIC (exactly N decimals), FORMAT('%.17g') of FLOAT64 (C printf), TO_HEX (lowercase),
 * LENGTH of STRING (characters = code points), CONCAT, TO_HEX(MD5(STRING)) (MD5 of the UTF-8 bytes).
 */
interface Column {
  readonly name: string
  readonly type: string
  /** DuckDB literal of the value, or NULL. */
  readonly sql: string
  /** What the BigQuery canonical expression renders for the value (documented semantics), or null for NULL. */
  readonly bigQueryText: string | null
  /** PostgreSQL literal of the value, where DuckDB's is not PostgreSQL's. */
  readonly postgresSql?: string
}

const ROWS: Column[][] = [
  [
    { name: 'name', type: 'VARCHAR', sql: `'Ana'`, bigQueryText: 'Ana' },
    { name: 'note', type: 'VARCHAR', sql: `'e\u0301 👨‍👩‍👧 ''q'' | ; :'`, bigQueryText: "e\u0301 👨‍👩‍👧 'q' | ; :" },
    { name: 'visits', type: 'INTEGER', sql: '-42', bigQueryText: '-42' },
    { name: 'big', type: 'BIGINT', sql: '9007199254740993', bigQueryText: '9007199254740993' },
    { name: 'active', type: 'BOOLEAN', sql: 'true', bigQueryText: 'true' },
    { name: 'signup', type: 'DATE', sql: `DATE '2024-03-10'`, bigQueryText: '2024-03-10' },
    { name: 'opens', type: 'TIME', sql: `TIME '09:05:00.25'`, bigQueryText: '09:05:00.250000' },
    {
      name: 'seen',
      type: 'TIMESTAMP WITH TIME ZONE',
      sql: `TIMESTAMPTZ '2024-03-10 16:30:00.12+02'`,
      bigQueryText: '2024-03-10 14:30:00.120000',
    },
    {
      name: 'local_seen',
      type: 'TIMESTAMP',
      sql: `TIMESTAMP '2024-03-10 14:30:00'`,
      bigQueryText: '2024-03-10 14:30:00.000000',
    },
    { name: 'balance', type: 'DECIMAL(12,2)', sql: '1.5::DECIMAL(12,2)', bigQueryText: '1.50' },
    { name: 'debt', type: 'DECIMAL(12,2)', sql: '-0.5::DECIMAL(12,2)', bigQueryText: '-0.50' },
    { name: 'score', type: 'DOUBLE', sql: '0.1::DOUBLE', bigQueryText: printf17g(0.1), postgresSql: '0.1' },
    {
      name: 'ratio',
      type: 'DOUBLE',
      sql: '100.0::DOUBLE',
      bigQueryText: printf17g(100),
      postgresSql: '100.0',
    },
    { name: 'huge', type: 'DOUBLE', sql: '1e20::DOUBLE', bigQueryText: printf17g(1e20), postgresSql: '1e20' },
    {
      name: 'tiny',
      type: 'DOUBLE',
      sql: '1.5e-7::DOUBLE',
      bigQueryText: printf17g(1.5e-7),
      postgresSql: '1.5e-7',
    },
    {
      name: 'single',
      type: 'FLOAT',
      sql: '0.1::FLOAT',
      bigQueryText: printf17g(Math.fround(0.1)),
      postgresSql: '0.1',
    },
    {
      name: 'photo',
      type: 'BLOB',
      sql: `'\\x00\\xFFa'::BLOB`,
      bigQueryText: '00ff61',
      postgresSql: `'\\x00ff61'`,
    },
    { name: 'gone', type: 'VARCHAR', sql: 'NULL', bigQueryText: null },
  ],
  [
    { name: 'name', type: 'VARCHAR', sql: `''`, bigQueryText: '' },
    { name: 'visits', type: 'INTEGER', sql: 'NULL', bigQueryText: null },
    {
      name: 'score',
      type: 'DOUBLE',
      sql: `'-inf'::DOUBLE`,
      bigQueryText: '-inf',
      postgresSql: `'-Infinity'`,
    },
    // Both zeros read 0 (lib/core/staged-types.ts): DuckDB keeps no sign of zero apart from the other.
    { name: 'zero', type: 'DOUBLE', sql: '-0.0::DOUBLE', bigQueryText: '0', postgresSql: `'-0'` },
    { name: 'nan', type: 'DOUBLE', sql: `'nan'::DOUBLE`, bigQueryText: 'nan', postgresSql: `'NaN'` },
    { name: 'old', type: 'DATE', sql: `DATE '0099-01-02'`, bigQueryText: '0099-01-02' },
  ],
]

/** C's printf("%.17g") (what BigQuery FORMAT('%.17g') and DuckDB printf document), for finite doubles. */
function printf17g(x: number): string {
  if (Number.isNaN(x)) return 'nan'
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf'
  if (x === 0) return Object.is(x, -0) ? '-0' : '0'
  const [mantissa, expText] = x.toExponential(16).split('e') as [string, string]
  const exp = Number(expText)
  const strip = (s: string) => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s)
  if (exp < -4 || exp >= 17) {
    return `${strip(mantissa)}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`
  }
  return strip(x.toFixed(16 - exp))
}

/** The string the BigQuery row hash expression builds, per renderRowHash's rules, from documented semantics. */
function bigQueryHash(columns: readonly Column[]): string {
  const text = [...columns]
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((c) =>
      c.bigQueryText === null
        ? ''
        : `${c.name.length}:${c.name}=${[...c.bigQueryText].length}:${c.bigQueryText};`,
    )
    .join('')
  return createHash('md5').update(text, 'utf8').digest('hex')
}

let instance: DuckDBInstance

beforeAll(async () => {
  instance = await DuckDBInstance.create(':memory:')
})
afterAll(() => instance.closeSync())

async function duckDbHash(columns: readonly Column[]): Promise<string> {
  const connection = await instance.connect()
  await connection.run(`SET TimeZone = 'UTC'`)
  const select = columns.map((c) => `CAST(${c.sql} AS ${c.type}) AS "${c.name}"`).join(', ')
  await connection.run(`CREATE OR REPLACE TEMP TABLE r AS SELECT ${select}`)
  const hash = renderRowHash(duckDbDialect, columns, 'r')
  const reader = await connection.runAndReadAll(`SELECT ${hash} AS h FROM r`)
  connection.closeSync()
  return String(reader.getRowObjectsJson()[0]!.h)
}

describe('row hash: same row, same hex in DuckDB and BigQuery', () => {
  it('printf17g matches C semantics on known values', () => {
    expect(printf17g(0.1)).toBe('0.10000000000000001')
    expect(printf17g(100)).toBe('100')
    expect(printf17g(1e20)).toBe('1e+20')
    expect(printf17g(Number('123456789012345678'))).toBe('1.2345678901234568e+17')
    expect(printf17g(1.5e-7)).toBe('1.4999999999999999e-07')
  })

  it.each(ROWS.map((row, i) => [i, row] as const))('row %i', async (_i, row) => {
    expect(await duckDbHash(row)).toBe(bigQueryHash(row))
  })

  it('a changed value, a NULL vs empty string, and a value moved between columns give other hashes', async () => {
    const base: Column[] = [
      { name: 'a', type: 'VARCHAR', sql: `'x'`, bigQueryText: 'x' },
      { name: 'b', type: 'VARCHAR', sql: 'NULL', bigQueryText: null },
    ]
    const moved: Column[] = [
      { name: 'a', type: 'VARCHAR', sql: 'NULL', bigQueryText: null },
      { name: 'b', type: 'VARCHAR', sql: `'x'`, bigQueryText: 'x' },
    ]
    const empty: Column[] = [base[0]!, { name: 'b', type: 'VARCHAR', sql: `''`, bigQueryText: '' }]
    const hashes = await Promise.all([base, moved, empty].map(duckDbHash))
    expect(new Set(hashes).size).toBe(3)
    expect(hashes).toEqual([base, moved, empty].map(bigQueryHash))
  })

  it('the BigQuery expression uses the documented functions for each type', () => {
    const bq = createBigQueryDialect({ project: 'p' })
    const sql = renderRowHash(bq, ROWS[0]!, 'r')
    expect(sql).toMatch(
      /^TO_HEX\(MD5\(ARRAY_TO_STRING\(ARRAY\(SELECT IFNULL\(CONCAT\(p\.t, CAST\(LENGTH\(p\.v\) AS STRING\), ':', p\.v, ';'\), ''\)/,
    )
    expect(sql).toContain("FORMAT_TIMESTAMP('%H:%M:%E6S', r.`seen`, 'UTC')")
    expect(sql).toContain("CAST(DATE(r.`seen`, 'UTC') AS STRING)")
    expect(sql).toContain("FORMAT_DATETIME('%H:%M:%E6S', r.`local_seen`)")
    expect(sql).toContain("FORMAT_TIME('%H:%M:%E6S', r.`opens`)")
    expect(sql).toContain("FORMAT('%.2f', r.`balance`)")
    expect(sql).toContain("FORMAT('%.17g', IF(r.`score` = 0, 0.0, r.`score`))")
    expect(sql).toContain('TO_HEX(r.`photo`)')
    expect(sql).toContain('CAST(r.`visits` AS STRING)')
    expect(sql).toContain("('4:name=', r.`name`)")
    // FORMAT renders NULL as 'NULL': its texts are NULL for a NULL column, like every other canonical text.
    expect(sql).toContain("IF(r.`score` IS NULL, NULL, FORMAT('%.17g', IF(r.`score` = 0, 0.0, r.`score`)))")
  })
})

/**
 * PostgreSQL, executed for real, must give DuckDB's hex for the same row: the rows above, and values whose text
 * is where the two differ most (C's %.17g of every kind of double, ties rounded to even, times with microseconds,
 * infinite and ancient dates and timestamps, JSON text).
 */
describe('row hash: same row, same hex in PostgreSQL and DuckDB', () => {
  let client: pg.Client

  beforeAll(async () => {
    client = new pg.Client({ connectionString: PG_URL })
    await client.connect()
    for (const statement of POSTGRES_SESSION_SETUP) await client.query(statement)
  })
  afterAll(() => client?.end())

  async function postgresHash(columns: readonly Column[]): Promise<string> {
    const where = { table: 'r', column: '' }
    const select = columns
      .map(
        (c) =>
          `CAST(${c.postgresSql ?? c.sql} AS ${postgresDialect.columnType(c.type, { ...where, column: c.name })}) AS "${c.name}"`,
      )
      .join(', ')
    await client.query(`DROP TABLE IF EXISTS pg_temp.r; CREATE TEMP TABLE r AS SELECT ${select}`)
    const { rows } = await client.query<{ h: string }>(
      `SELECT ${renderRowHash(postgresDialect, columns, 'r')} AS h FROM r`,
    )
    return rows[0]!.h
  }

  const double = (name: string, x: number): Column => {
    const text = Object.is(x, -0) ? '-0' : Number.isNaN(x) ? 'NaN' : String(x)
    const literal = Number.isFinite(x) || Number.isNaN(x) ? `'${text}'` : x > 0 ? `'Infinity'` : `'-Infinity'`
    return {
      name,
      type: 'DOUBLE',
      sql: `${literal}::DOUBLE`,
      bigQueryText: x === 0 ? '0' : printf17g(x),
      postgresSql: literal,
    }
  }

  const EDGES: Column[][] = [
    [
      // Ties at the 17th digit: C rounds half to even (DuckDB's printf does), JavaScript's toExponential up.
      double('tie_down', 1125899906842624.25),
      double('tie_up', 1125899906842624.75),
      double('subnormal', 5e-324),
      double('largest', 1.7976931348623157e308),
      double('smallest_normal', 2.2250738585072014e-308),
      double('above_2_53', 2 ** 60 + 2 ** 8),
      double('e17', 1e17),
      double('e16', 1e16),
      double('small', 1e-5),
      double('third', 1 / 3),
      double('inf', Infinity),
      {
        name: 'big_decimal',
        type: 'DECIMAL(38,10)',
        sql: `'-1234567890123456789012345678.0123456789'::DECIMAL(38,10)`,
        bigQueryText: null,
      },
      { name: 'zero_decimal', type: 'DECIMAL(10,0)', sql: '0::DECIMAL(10,0)', bigQueryText: null },
      { name: 'flag', type: 'BOOLEAN', sql: 'false', bigQueryText: null },
      {
        name: 'bigneg',
        type: 'BIGINT',
        sql: '-9223372036854775808',
        bigQueryText: null,
        postgresSql: '(-9223372036854775807 - 1)',
      },
    ],
    [
      {
        name: 'micro',
        type: 'TIMESTAMP WITH TIME ZONE',
        sql: `TIMESTAMPTZ '2024-03-10 23:59:59.999999-05'`,
        bigQueryText: null,
      },
      {
        name: 'micro_local',
        type: 'TIMESTAMP',
        sql: `TIMESTAMP '1969-12-31 23:59:59.000001'`,
        bigQueryText: null,
      },
      { name: 'ancient', type: 'TIMESTAMP', sql: `TIMESTAMP '0099-01-01 00:00:00.5'`, bigQueryText: null },
      {
        name: 'far',
        type: 'TIMESTAMP WITH TIME ZONE',
        sql: `TIMESTAMPTZ '12000-01-01 00:00:00+00'`,
        bigQueryText: null,
      },
      {
        name: 'forever',
        type: 'TIMESTAMP WITH TIME ZONE',
        sql: `'infinity'::TIMESTAMPTZ`,
        bigQueryText: null,
        postgresSql: `'infinity'`,
      },
      {
        name: 'never',
        type: 'TIMESTAMP',
        sql: `'-infinity'::TIMESTAMP`,
        bigQueryText: null,
        postgresSql: `'-infinity'`,
      },
      {
        name: 'last_day',
        type: 'DATE',
        sql: `'infinity'::DATE`,
        bigQueryText: null,
        postgresSql: `'infinity'`,
      },
      {
        name: 'bc_day',
        type: 'DATE',
        sql: `DATE '0044-03-15 (BC)'`,
        bigQueryText: null,
        postgresSql: `DATE '0044-03-15 BC'`,
      },
      { name: 'midnight', type: 'TIME', sql: `TIME '00:00:00'`, bigQueryText: null },
      {
        name: 'doc',
        type: 'JSON',
        sql: `'{"a":[1,2.5,"x"],"b":null}'::JSON`,
        bigQueryText: null,
        postgresSql: `'{"a":[1,2.5,"x"],"b":null}'`,
      },
      { name: 'empty_blob', type: 'BLOB', sql: `''::BLOB`, bigQueryText: null, postgresSql: `''` },
    ],
    [
      {
        name: 'tags',
        type: 'VARCHAR[]',
        sql: String.raw`['vip', 'a, b', 'it''s', 'NULL', '', NULL, ' x', 'back\slash', 'é=1']`,
        bigQueryText: null,
        postgresSql: String.raw`ARRAY['vip', 'a, b', 'it''s', 'NULL', '', NULL, ' x', 'back\slash', 'é=1']`,
      },
      {
        name: 'amounts',
        type: 'DECIMAL(10,2)[]',
        sql: '[1.5, NULL, -2]',
        bigQueryText: null,
        postgresSql: 'ARRAY[1.5, NULL, -2]',
      },
      {
        name: 'days',
        type: 'DATE[]',
        sql: `[DATE '2024-03-10']`,
        bigQueryText: null,
        postgresSql: `ARRAY[DATE '2024-03-10']`,
      },
      {
        name: 'flags',
        type: 'BOOLEAN[]',
        sql: '[true, false]',
        bigQueryText: null,
        postgresSql: 'ARRAY[true, false]',
      },
      { name: 'none', type: 'INTEGER[]', sql: '[]', bigQueryText: null, postgresSql: `'{}'` },
    ],
  ]

  it.each([...ROWS, ...EDGES].map((row, i) => [i, row] as const))('row %i', async (_i, row) => {
    expect(await postgresHash(row)).toBe(await duckDbHash(row))
  })

  it('any double hashes alike (its %.17g text)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.double(), { minLength: 1, maxLength: 8 }), async (values) => {
        const row = values.map((x, i) => double(`x${i}`, x))
        expect(await postgresHash(row)).toBe(await duckDbHash(row))
      }),
      { numRuns: 60 },
    )
  })

  it('refuses what PostgreSQL cannot store alike, naming the table and column', () => {
    const where = { table: 'customers', column: 'tags' }
    expect(() => postgresDialect.columnType('DOUBLE[]', where)).toThrow(
      /table customers: column "tags" has type DOUBLE\[\], which the postgres warehouse cannot store/,
    )
    expect(() => postgresDialect.columnType('INTEGER[][]', where)).toThrow(
      /column "tags" has type INTEGER\[\]\[\]/,
    )
    expect(() => postgresDialect.columnType('HUGEINT', where)).toThrow(/column "tags"/)
    expect(() => postgresDialect.columnType('TINYINT', { ...where, column: 'age' })).toThrow(
      /table customers: column "age" has type TINYINT, which the postgres warehouse would store as SMALLINT/,
    )
  })
})
