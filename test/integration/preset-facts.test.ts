import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { presetTableFields } from '../../lib/config/table-options.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { ColumnPreset } from '../../lib/core/metadata-columns.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { ZetaSqlService } from '../support/bigquery-emulator/zetasql-service.ts'
import { FactHarness } from '../support/fact-harness.ts'
import { customerReference, ORDER_COLUMNS, order, ordersFact } from '../support/fact-specs.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * Facts against dimensions of the dbt and fivetran presets, on DuckDB and the BigQuery emulator: inferred members
 * (inserted, started earlier by an older fact, completed by an even older event) carry dbt's ids, and a fact half
 * a millisecond before a version ends joins that version although Fivetran's _fivetran_end is already behind it.
 */

const CUSTOMER: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
]
const customers = (preset: ColumnPreset): TableSpec =>
  tableSpec({
    ...presetTableFields(preset),
    extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
    validFrom: { kind: 'column', column: 'changed_at' },
  })
const fact = ordersFact({ references: [customerReference({ inferred: true })] })

/** What the facts and versions of `preset` come to: each order's version, and every version (key, start, end). */
async function scenario(h: FactHarness, table: TableSpec) {
  const d = h.warehouse.dialect
  await h.mergeDimension(
    table,
    CUSTOMER,
    [
      { customer_id: 101, region: 'South', changed_at: '2024-01-01T00:00:00Z' },
      { customer_id: 101, region: 'North', changed_at: '2024-03-01T00:00:00Z' },
    ],
    { extractedAt: '2024-03-02T00:00:00Z' },
  )
  const load = async (rows: ReturnType<typeof order>[], extractedAt: string) =>
    h.loadFacts(fact, await h.stageFacts(fact, ORDER_COLUMNS, rows, { extractedAt }))
  await load(
    [
      order(1, 101, '2024-02-29T23:59:59.999500Z'),
      order(2, 101, '2024-03-01T00:00:00Z'),
      order(3, 555, '2024-02-20T00:00:00Z'),
    ],
    '2024-03-10T00:00:00Z',
  )
  await load([order(4, 555, '2024-02-10T00:00:00Z')], '2024-03-11T00:00:00Z')
  const n = table.columns
  const q = (name: string) => d.quoteIdentifier(name)
  const time = (column: string) => d.canonicalText(q(column), 'TIMESTAMPTZ')
  const dbt =
    table.dbtIds === undefined
      ? ''
      : `, dbt_scd_id, ${time('dbt_updated_at')} AS updated_at, ${adapterText(d, q('dbt_updated_at'))} AS updated_text`
  const read = async () =>
    (
      await h.query(
        `SELECT ${q(n.surrogateKey)} AS sk, customer_id, region, ${time(n.validFrom)} AS start, ${time(n.validTo)} AS ends${dbt} ` +
          `FROM ${h.t('dim_customer')} ORDER BY 1`,
      )
    ).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === null ? null : String(v)])))
  // Eve's placeholder, started at her older fact: before her first event completes it.
  const inferred = await read()
  await h.mergeDimension(
    table,
    CUSTOMER,
    [{ customer_id: 555, region: 'East', changed_at: '2024-02-01T00:00:00Z' }],
    { extractedAt: '2024-03-12T00:00:00Z' },
  )
  const facts = await h.query(`SELECT order_id, customer_sk FROM ${h.t('fact_orders')} ORDER BY order_id`)
  return {
    inferred,
    versions: await read(),
    facts: facts.map((r) => [Number(r.order_id), Number(r.customer_sk)]),
  }
}

let zeta: ZetaSqlService
beforeAll(async () => {
  zeta = await ZetaSqlService.start()
})
afterAll(async () => {
  await zeta?.stop()
})

describe.each(['duckdb', 'bigquery'] as const)('facts against preset dimensions (%s)', (warehouse) => {
  const run = async (preset: ColumnPreset) => {
    const table = customers(preset)
    const h =
      warehouse === 'duckdb' ? await FactHarness.duckdb([table]) : await FactHarness.bigquery(zeta, [table])
    try {
      return await scenario(h, table)
    } finally {
      await h.dispose()
    }
  }

  it('facts point at the same versions as with the dimsync preset; dbt ids and Fivetran ends on every version', async () => {
    const reference = await run('dimsync')
    // Ana South (1), Ana North (2), Eve inferred then completed (3); the unknown member is 0.
    expect(reference.facts).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 3],
    ])
    const dbt = await run('dbt')
    expect(dbt.facts).toEqual(reference.facts)
    const md5 = (text: string) => createHash('md5').update(text).digest('hex')
    expect(dbt.inferred.find((v) => v.customer_id === '555')!.start).toBe('2024-02-10 00:00:00.000000')
    for (const v of [...dbt.inferred, ...dbt.versions]) {
      expect(v.updated_at, `dbt_updated_at of ${v.sk}`).toBe(v.start)
      // dbt's snapshot_hash_arguments: the adapter's cast of its snapshot time, `2024-03-01 00:00:00(+00)`.
      expect(v.updated_text).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?(\+00)?$/)
      expect(v.dbt_scd_id, `dbt_scd_id of ${v.sk}`).toBe(md5(`${v.customer_id ?? ''}|${v.updated_text}`))
    }
    // Eve's start moved twice (an older fact, then her older first event): her id follows it.
    expect(dbt.versions.find((v) => v.customer_id === '555')!.start).toBe('2024-02-01 00:00:00.000000')
    expect(dbt.versions.map(({ dbt_scd_id: _id, updated_at: _at, updated_text: _text, ...v }) => v)).toEqual(
      reference.versions,
    )

    const fivetran = await run('fivetran')
    expect(fivetran.facts).toEqual(reference.facts)
    expect(fivetran.versions.map((v) => [v.sk, v.start, v.ends])).toEqual([
      // The unknown member: its window is its start (a millisecond before year 1 is no instant).
      ['0', '0001-01-01 00:00:00.000000', '0001-01-01 00:00:00.000000'],
      ['1', '2024-01-01 00:00:00.000000', '2024-02-29 23:59:59.999000'],
      ['2', '2024-03-01 00:00:00.000000', '9999-12-31 23:59:59.999000'],
      ['3', '2024-02-01 00:00:00.000000', '9999-12-31 23:59:59.999000'],
    ])
  }, 180_000)
})

/** The text dbt's adapter hashes for a snapshot time: dbt-duckdb's `now()::timestamp`, dbt-bigquery's TIMESTAMP. */
function adapterText(d: SqlDialect, column: string): string {
  return d.name === 'duckdb' ? `CAST(CAST(${column} AS TIMESTAMP) AS VARCHAR)` : `CAST(${column} AS STRING)`
}
