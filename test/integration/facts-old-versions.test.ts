import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { presetTableFields } from '../../lib/config/table-options.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ZetaSqlService } from '../support/bigquery-emulator/zetasql-service.ts'
import { FactHarness } from '../support/fact-harness.ts'
import {
  BY_CHANGE_TIME,
  CUSTOMER_CHANGE_COLUMNS,
  ORDER_COLUMNS,
  order,
  ordersFact,
} from '../support/fact-specs.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * On BigQuery a fact load reads the dimension only from the versions not ended by the batch's earliest event time
 * (the open versions and later closed ones: the partitions of valid_to from that month on). Facts whose times fall
 * in old closed versions, on their boundaries, half a millisecond before a Fivetran end and in the open version
 * must point at the same versions on DuckDB (which reads every version) and on the BigQuery emulator, whatever
 * the open end (NULL, a sentinel), the end style and with system time (a correction supersedes a row: the row
 * known now counts).
 */

const DIMENSIONS: readonly (readonly [title: string, table: TableSpec])[] = [
  ['open end NULL', tableSpec(BY_CHANGE_TIME)],
  ['open end 9999-12-31', tableSpec({ ...BY_CHANGE_TIME, openEnd: '9999-12-31T23:59:59Z' })],
  [
    'fivetran preset (ends a millisecond early)',
    tableSpec({ ...BY_CHANGE_TIME, ...presetTableFields('fivetran') }),
  ],
  [
    'system time',
    tableSpec({ ...BY_CHANGE_TIME, systemTime: { systemFrom: 'system_from', systemTo: 'system_to' } }),
  ],
]
const fact = ordersFact()

/** Each order with the region of the version it points at ('Unknown': the unknown member). */
async function scenario(h: FactHarness, table: TableSpec): Promise<[number, string][]> {
  const at = (day: string) => `2024-${day}T00:00:00Z`
  await h.mergeDimension(
    table,
    CUSTOMER_CHANGE_COLUMNS,
    [
      { customer_id: 101, region: 'South', changed_at: at('01-01') },
      { customer_id: 101, region: 'North', changed_at: at('02-01') },
      { customer_id: 101, region: 'West', changed_at: at('03-01') },
      { customer_id: 101, region: 'East', changed_at: at('04-01') },
      { customer_id: 102, region: 'Coast', changed_at: at('01-01') },
    ],
    { extractedAt: at('04-02') },
  )
  // A late change splits February: on a system-time table the February row is superseded, not rewritten.
  await h.mergeDimension(
    table,
    CUSTOMER_CHANGE_COLUMNS,
    [{ customer_id: 101, region: 'Central', changed_at: at('02-15') }],
    { extractedAt: at('04-03') },
  )
  const load = async (rows: ReturnType<typeof order>[], extractedAt: string) =>
    h.loadFacts(fact, await h.stageFacts(fact, ORDER_COLUMNS, rows, { extractedAt }))
  // The batch's earliest event falls in the oldest closed version.
  await load(
    [
      order(1, 101, '2024-01-10T00:00:00Z'),
      order(2, 101, '2024-02-10T00:00:00Z'),
      order(3, 101, '2024-02-20T00:00:00Z'),
      order(5, 101, at('03-01')),
      order(6, 101, '2024-04-15T00:00:00Z'),
      order(7, 102, '2024-05-01T00:00:00Z'),
    ],
    at('05-02'),
  )
  // The earliest event half a millisecond before a version ends (Fivetran's end is already behind it).
  await load([order(4, 101, '2024-02-29T23:59:59.999500Z')], '2024-05-02T12:00:00Z')
  // The earliest event is where a version ends: that version is not read, its successor is.
  await load([order(8, 101, at('03-01')), order(9, 101, at('04-01'))], at('05-03'))
  // Only open versions can match; and a fact before its key's first version.
  await load([order(10, 101, '2024-06-01T00:00:00Z'), order(11, 102, '2024-06-01T00:00:00Z')], at('06-02'))
  await load([order(12, 102, '2023-06-01T00:00:00Z')], at('06-03'))
  const q = (name: string) => h.warehouse.dialect.quoteIdentifier(name)
  const rows = await h.query(
    `SELECT f.order_id, v.region FROM ${h.t('fact_orders')} f\n` +
      `JOIN ${h.t('dim_customer')} v ON v.${q(table.columns.surrogateKey)} = f.customer_sk` +
      (table.systemTime === undefined ? '' : ` AND v.${q(table.systemTime.systemTo)} IS NULL`) +
      `\nORDER BY f.order_id`,
  )
  return rows.map((r) => [Number(r.order_id), String(r.region)])
}

const EXPECTED: [number, string][] = [
  [1, 'South'],
  [2, 'North'],
  [3, 'Central'],
  [4, 'Central'],
  [5, 'West'],
  [6, 'East'],
  [7, 'Coast'],
  [8, 'West'],
  [9, 'East'],
  [10, 'East'],
  [11, 'Coast'],
  [12, 'Unknown'],
]

let zeta: ZetaSqlService
beforeAll(async () => {
  zeta = await ZetaSqlService.start()
})
afterAll(async () => {
  await zeta?.stop()
})

describe.each(DIMENSIONS)('facts in old and current versions, %s', (_title, table) => {
  it.each(['duckdb', 'bigquery'] as const)(
    'point at the version true at their time on %s',
    async (warehouse) => {
      const h =
        warehouse === 'duckdb' ? await FactHarness.duckdb([table]) : await FactHarness.bigquery(zeta, [table])
      try {
        expect(await scenario(h, table)).toEqual(EXPECTED)
      } finally {
        await h.dispose()
      }
    },
    120_000,
  )
})
