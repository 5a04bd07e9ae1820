import { DuckDBInstance } from '@duckdb/node-api'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { bigQueryColumnType } from '../../../lib/sql/bigquery/bigquery-types.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { renderRowHash } from '../../../lib/sql/row-hash.ts'
import { BigQueryEmulator } from '../../support/bigquery-emulator/bigquery-emulator.ts'

/**
 * Arrays on BigQuery hash as DuckDB has always hashed lists (DuckDB's text of the list, which quotes some text
 * elements): the same values give the same hex on DuckDB and on ZetaSQL's reference implementation, so a DuckDB
 * dimension moved to BigQuery does not re-version its keys, and both warehouses detect the same changes.
 */
const PROJECT = 'acme-dw'
const bq = createBigQueryDialect({ project: PROJECT })

const COLUMNS = [
  { name: 'tags', type: 'VARCHAR[]' },
  { name: 'scores', type: 'BIGINT[]' },
  { name: 'amounts', type: 'DECIMAL(10,2)[]' },
  { name: 'flags', type: 'BOOLEAN[]' },
  { name: 'days', type: 'DATE[]' },
  { name: 'ids', type: 'UUID[]' },
] as const

interface Arrays {
  readonly tags: readonly string[]
  readonly scores: readonly bigint[]
  readonly amounts: readonly string[]
  readonly flags: readonly boolean[]
  readonly days: readonly string[]
  readonly ids: readonly string[]
}

/** Characters DuckDB's list text quotes or escapes for, white space at either end, and a few plain ones. */
const text = fc.oneof(
  fc.constantFrom('', 'NULL', 'null', 'nUlL', ' NULL', 'a b', 'x-y'),
  fc.string({
    unit: fc.constantFrom(
      ...['a', 'N', 'u', 'l', ' ', ',', "'", '"', '\\', '[', ']', '{', '}', '(', ')', ':', '=', ';', '|'],
      ...['\t', '\n', '\r', '\x0b', '\x0c', '\u00a0', 'é', '😀', '#', '/'],
    ),
    maxLength: 6,
  }),
)
const day = fc
  .date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10))
const arrays: fc.Arbitrary<Arrays> = fc.record({
  tags: fc.array(text, { maxLength: 4 }),
  scores: fc.array(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { maxLength: 3 }),
  amounts: fc.array(
    fc.bigInt({ min: -(10n ** 10n) + 1n, max: 10n ** 10n - 1n }).map((n) => {
      const digits = (n < 0n ? -n : n).toString().padStart(3, '0')
      return `${n < 0n ? '-' : ''}${digits.slice(0, -2)}.${digits.slice(-2)}`
    }),
    { maxLength: 3 },
  ),
  flags: fc.array(fc.boolean(), { maxLength: 3 }),
  days: fc.array(day, { maxLength: 2 }),
  ids: fc.array(fc.uuid(), { maxLength: 2 }),
})

const duckText = (v: string) => `'${v.replaceAll("'", "''")}'`

function duckSelect(rows: readonly Arrays[]): string {
  const values = rows.map((r, i) => {
    const list = (items: readonly string[], type: string) => `CAST([${items.join(', ')}] AS ${type})`
    return (
      `(${i}, ${list(r.tags.map(duckText), 'VARCHAR[]')}, ${list(r.scores.map(String), 'BIGINT[]')}, ` +
      `${list(r.amounts.map(duckText), 'DECIMAL(10,2)[]')}, ${list(r.flags.map(String), 'BOOLEAN[]')}, ` +
      `${list(r.days.map(duckText), 'DATE[]')}, ${list(r.ids.map(duckText), 'UUID[]')})`
    )
  })
  return `SELECT i, ${renderRowHash(duckDbDialect, COLUMNS, 's')} AS h FROM (VALUES ${values.join(', ')}) AS s(i, ${COLUMNS.map((c) => c.name).join(', ')})`
}

function bigQuerySelect(rows: readonly Arrays[]): string {
  const type = (name: string) =>
    bigQueryColumnType(COLUMNS.find((c) => c.name === name)!.type, { table: 't', column: name })
  const structs = rows.map((r, i) => {
    const list = (name: string, items: readonly string[]) => `CAST([${items.join(', ')}] AS ${type(name)})`
    const str = (v: string) => bq.stringLiteral(v)
    return (
      `STRUCT(${i} AS i, ${list('tags', r.tags.map(str))} AS tags, ${list('scores', r.scores.map(String))} AS scores, ` +
      `${list(
        'amounts',
        r.amounts.map((a) => `NUMERIC ${str(a)}`),
      )} AS amounts, ` +
      `${list('flags', r.flags.map(String))} AS flags, ${list(
        'days',
        r.days.map((d) => `DATE ${str(d)}`),
      )} AS days, ` +
      `${list('ids', r.ids.map(str))} AS ids)`
    )
  })
  return `SELECT i, ${renderRowHash(bq, COLUMNS, 's')} AS h FROM UNNEST([${structs.join(',\n')}]) AS s`
}

describe('arrays hash alike on DuckDB and BigQuery (ZetaSQL executes the BigQuery hash)', () => {
  let emulator: BigQueryEmulator
  let duck: DuckDBInstance
  beforeAll(async () => {
    emulator = await BigQueryEmulator.start()
    duck = await DuckDBInstance.create(':memory:')
  })
  afterAll(async () => {
    await emulator?.stop()
    duck?.closeSync()
  })

  async function hashes(rows: readonly Arrays[]): Promise<{ duckdb: string[]; bigquery: string[] }> {
    const connection = await duck.connect()
    try {
      const duckRows = (await connection.runAndReadAll(duckSelect(rows))).getRowObjectsJson()
      const bqRows = await emulator.query(PROJECT, bigQuerySelect(rows))
      const byIndex = (r: readonly Record<string, unknown>[]) =>
        [...r].sort((a, b) => Number(a.i) - Number(b.i)).map((x) => String(x.h))
      return { duckdb: byIndex(duckRows), bigquery: byIndex(bqRows) }
    } finally {
      connection.closeSync()
    }
  }

  it('quoted and escaped text elements, empty arrays, integers, decimals, booleans, dates, UUIDs', async () => {
    const fixed: Arrays[] = [
      {
        tags: ['vip', 'a, b', "it's", 'back\\slash', '', 'NULL', ' lead', 'trail\t', 'in ner', 'k=v', '"q"'],
        scores: [1n, -2n, 9007199254740993n],
        amounts: ['1.50', '-3.00', '0.05'],
        flags: [true, false],
        days: ['2024-03-10', '0044-03-15'],
        ids: ['0b6d1a52-3c55-4f2e-9f8a-2a1d5e0c7b01'],
      },
      { tags: [], scores: [], amounts: [], flags: [], days: [], ids: [] },
    ]
    const { duckdb, bigquery } = await hashes(fixed)
    expect(bigquery[0]).toMatch(/^[0-9a-f]{32}$/)
    expect(bigquery).toEqual(duckdb)
    expect(duckdb[0]).not.toBe(duckdb[1])
  }, 60_000)

  it('property: any arrays of these types give the same hash on both', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(arrays, { minLength: 1, maxLength: 12 }), async (rows) => {
        const { duckdb, bigquery } = await hashes(rows)
        expect(bigquery).toEqual(duckdb)
      }),
      { numRuns: 25 },
    )
  }, 300_000)
})
