import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { presetTableFields } from '../../lib/config/table-options.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { dimensionObjects } from '../../lib/sql/render-ddl.ts'
import { BothWarehouses, type PairedDimension } from '../support/both-warehouses.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * "A query written against a dbt snapshot or a Fivetran history table runs unchanged on dimsync's table": the
 * tools' own idioms, run on DuckDB and on the BigQuery emulator (ZetaSQL's reference implementation), give the
 * version they would give on the tool's table, and dimsync's own reads keep half-open windows.
 */

const CUSTOMER = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
]
const JAN = '2024-01-01T09:00:00Z'
const MAR = '2024-03-10T14:30:00Z'
const MAY = '2024-05-01T00:00:00Z'

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

/** `select` (columns) and `where` over the dimension, on both warehouses; the rows must agree and are returned. */
async function query(
  dimension: PairedDimension,
  select: (d: SqlDialect) => string,
  where: (d: SqlDialect) => string,
): Promise<Record<string, unknown>[]> {
  const rows = await dimension.read((d, schema) => {
    const dim = d.table(dimensionObjects(dimension.table, schema).dimension)
    return `SELECT ${select(d)} FROM ${dim} WHERE ${where(d)} ORDER BY customer_id, 2`
  })
  const plain = (list: readonly Record<string, unknown>[]) =>
    list.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === null ? null : String(v)])))
  expect(plain(rows.bigquery), 'the same rows on BigQuery').toEqual(plain(rows.duckdb))
  return plain(rows.duckdb)
}

/** An instant column as dimsync's canonical text (`YYYY-MM-DD HH:MM:SS.ffffff`), the same on both warehouses. */
const text = (d: SqlDialect, column: string) =>
  `${d.canonicalText(d.quoteIdentifier(column), 'TIMESTAMPTZ')} AS ${d.quoteIdentifier(column)}`

describe('the fivetran preset follows history mode on both warehouses', () => {
  it('_fivetran_end is one millisecond before the next start, active rows end at 9999-12-31 23:59:59.999', async () => {
    const table = tableSpec({
      ...presetTableFields('fivetran'),
      extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
      validFrom: { kind: 'column', column: 'updated_at' },
      deletes: 'invalidate',
    })
    const dimension = await both.open(table, [...CUSTOMER, { name: 'updated_at', type: 'TIMESTAMP' }])
    try {
      await dimension.load(
        [
          { customer_id: 101, region: 'South', updated_at: MAR },
          { customer_id: 102, region: 'North', updated_at: JAN },
        ],
        { extractedAt: MAY },
      )
      // Late: Ana was North from January; the South version keeps its start, North ends a millisecond before it.
      await dimension.load([{ customer_id: 101, region: 'North', updated_at: JAN }], {
        extractedAt: '2024-05-02T00:00:00Z',
      })
      const all = (d: SqlDialect) =>
        `customer_id, region, ${text(d, '_fivetran_start')}, ${text(d, '_fivetran_end')}, _fivetran_active`
      expect(await query(dimension, all, () => 'TRUE')).toEqual([
        {
          customer_id: '101',
          region: 'North',
          _fivetran_start: '2024-01-01 09:00:00.000000',
          _fivetran_end: '2024-03-10 14:29:59.999000',
          _fivetran_active: 'false',
        },
        {
          customer_id: '101',
          region: 'South',
          _fivetran_start: '2024-03-10 14:30:00.000000',
          _fivetran_end: '9999-12-31 23:59:59.999000',
          _fivetran_active: 'true',
        },
        {
          customer_id: '102',
          region: 'North',
          _fivetran_start: '2024-01-01 09:00:00.000000',
          _fivetran_end: '9999-12-31 23:59:59.999000',
          _fivetran_active: 'true',
        },
      ])
      const regions = async (where: (d: SqlDialect) => string) =>
        (await query(dimension, () => 'customer_id, region', where)).map(
          (r) => `${r.customer_id} ${r.region}`,
        )
      // Fivetran's documented queries, unchanged.
      expect(await regions(() => '_fivetran_active')).toEqual(['101 South', '102 North'])
      const between = (t: string) => (d: SqlDialect) =>
        `${d.timestampLiteral(t)} BETWEEN _fivetran_start AND _fivetran_end`
      expect(await regions(between('2024-02-01T00:00:00Z'))).toEqual(['101 North', '102 North'])
      expect(await regions(between('2024-03-10T14:29:59.999Z'))).toEqual(['101 North', '102 North'])
      expect(await regions(between(MAR))).toEqual(['101 South', '102 North'])
      // dimsync's own reads add the millisecond back: half a millisecond before South starts is still North.
      const asOf = await dimension.read((d, schema) => {
        const fn = d.table(dimensionObjects(table, schema).asOfFunction)
        return `SELECT customer_id, region FROM ${fn}(${d.timestampLiteral('2024-03-10T14:29:59.999500Z')}) ORDER BY customer_id`
      })
      for (const rows of [asOf.duckdb, asOf.bigquery])
        expect(rows.map((r) => `${String(r.customer_id)} ${String(r.region)}`)).toEqual([
          '101 North',
          '102 North',
        ])
    } finally {
      await dimension.close()
    }
  }, 180_000)
})

describe('the dbt preset writes dbt_scd_id, dbt_updated_at and dbt_is_deleted as dbt does on each warehouse', () => {
  it("dbt_scd_id = md5(key || '|' || the adapter's text of dbt_updated_at); dbt_is_deleted 'True'/'False'", async () => {
    const table = tableSpec({ ...presetTableFields('dbt'), deletes: 'new_record' })
    const dimension = await both.open(table, CUSTOMER)
    try {
      await dimension.load(
        [
          { customer_id: 101, region: 'South' },
          { customer_id: 102, region: 'North' },
        ],
        { extractedAt: JAN },
      )
      await dimension.load([{ customer_id: 101, region: 'North' }], {
        extractedAt: MAR,
        allowMassDelete: true,
      })
      const md5 = (value: string) => createHash('md5').update(value).digest('hex')
      const rows = await dimension.read((d, schema) => {
        const dim = d.table(dimensionObjects(table, schema).dimension)
        return (
          `SELECT customer_id, ${text(d, 'dbt_updated_at')}, dbt_scd_id, dbt_is_deleted, region FROM ${dim} ` +
          `WHERE dbt_valid_to IS NULL ORDER BY customer_id`
        )
      })
      // dbt-duckdb hashes its snapshot time as `now()::timestamp` casts to text, dbt-bigquery a TIMESTAMP's text.
      const time = { duckdb: (wall: string) => wall, bigquery: (wall: string) => `${wall}+00` }
      for (const side of ['duckdb', 'bigquery'] as const) {
        const at = time[side]
        expect(
          rows[side].map((r) => ({ ...r, customer_id: String(r.customer_id) })),
          side,
        ).toEqual([
          {
            customer_id: '101',
            dbt_updated_at: '2024-03-10 14:30:00.000000',
            dbt_scd_id: md5(`101|${at('2024-03-10 14:30:00')}`),
            dbt_is_deleted: 'False',
            region: 'North',
          },
          {
            // A deletion version: dbt hashes the id of the version it ends with the snapshot time.
            customer_id: '102',
            dbt_updated_at: '2024-03-10 14:30:00.000000',
            dbt_scd_id: md5(`${md5(`102|${at('2024-01-01 09:00:00')}`)}|${at('2024-03-10 14:30:00')}`),
            dbt_is_deleted: 'True',
            region: 'North',
          },
        ])
      }
    } finally {
      await dimension.close()
    }
  }, 180_000)
})
