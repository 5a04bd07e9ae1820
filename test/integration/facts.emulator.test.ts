import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { BatchRejectedError } from '../../lib/core/errors.ts'
import type { FactSpec } from '../../lib/core/fact-spec.ts'
import type { Row } from '../../lib/ports/warehouse.ts'
import { ZetaSqlService } from '../support/bigquery-emulator/zetasql-service.ts'
import { FactHarness } from '../support/fact-harness.ts'
import { customerReference, ORDER_COLUMNS as ORDER, ordersFact } from '../support/fact-specs.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * The same fact loads on real DuckDB and on the BigQuery emulator (the real client; every statement run by
 * ZetaSQL's reference implementation): both must store the same surrogate keys and show the same views.
 */

const CUSTOMER: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
]
const TARIFF: StagedColumn[] = [
  { name: 'tariff_code', type: 'VARCHAR' },
  { name: 'plan', type: 'VARCHAR' },
]
const INVOICE: StagedColumn[] = [
  { name: 'invoice_id', type: 'VARCHAR' },
  { name: 'tariff_code', type: 'VARCHAR' },
  { name: 'invoiced_on', type: 'DATE' },
  { name: 'kwh', type: 'BIGINT' },
]
const JAN = '2024-01-01T00:00:00Z'
const MAR = '2024-03-01T00:00:00Z'
const customers = tableSpec({ deletes: 'invalidate' })
const tariffs = tableSpec({ name: 'tariffs', target: 'dim_tariff', key: ['tariff_code'] })
const file = { type: 'file', path: 'x.csv', format: 'csv', csv: { delimiter: ',', header: true } } as const

const orders = ordersFact({ source: file, references: [customerReference({ unknownMemberKey: -1 })] })
const invoices: FactSpec = {
  name: 'invoices',
  source: file,
  target: 'fact_invoice',
  extract: { mode: 'full' },
  grain: ['invoice_id'],
  eventTime: 'invoiced_on',
  measures: ['kwh'],
  references: [
    {
      dimension: 'tariffs',
      key: ['tariff_code'],
      surrogateKeyColumn: 'tariff_sk',
      alias: 'tariff',
      unknownMemberKey: 0,
      keepNaturalKey: true,
      inferred: false,
    },
  ],
}

interface Observed {
  readonly reports: unknown[]
  readonly orders: Row[]
  readonly ordersAsIs: Row[]
  readonly unknownMembers: Row[]
  readonly invoicesAsWas: Row[]
  readonly invoicesAsIs: Row[]
  readonly duplicate: string
}

async function scenario(h: FactHarness): Promise<Observed> {
  const reports: unknown[] = []
  const report = (r: { status: string; facts?: number; unknown?: readonly { facts: number }[] }) =>
    reports.push([r.status, r.facts, r.unknown?.map((u) => u.facts)])
  await h.mergeDimension(
    customers,
    CUSTOMER,
    [
      { customer_id: 101, region: 'South' },
      { customer_id: 102, region: 'North' },
    ],
    { extractedAt: JAN },
  )
  await h.mergeDimension(
    customers,
    CUSTOMER,
    [
      { customer_id: 101, region: 'North' },
      { customer_id: 102, region: 'North' },
    ],
    { extractedAt: MAR },
  )
  const first = await h.stageFacts(
    orders,
    ORDER,
    [
      { order_id: 1, customer_id: 101, ordered_at: '2024-02-01T00:00:00Z', amount: 10 },
      { order_id: 2, customer_id: 101, ordered_at: MAR, amount: 20 },
      { order_id: 3, customer_id: 999, ordered_at: '2024-02-01T00:00:00Z', amount: 5 },
      { order_id: 4, customer_id: 102, ordered_at: '2023-12-31T23:59:59Z', amount: 7 },
    ],
    { extractedAt: '2024-05-01T00:00:00Z' },
  )
  report(await h.loadFacts(orders, first))
  report(await h.loadFacts(orders, first))
  const second = await h.stageFacts(
    orders,
    ORDER,
    [
      { order_id: 4, customer_id: 102, ordered_at: '2024-01-01T00:00:00Z', amount: 8 },
      { order_id: 5, customer_id: null, ordered_at: '2024-02-01T00:00:00Z', amount: 1 },
    ],
    { extractedAt: '2024-05-02T00:00:00Z' },
  )
  report(await h.loadFacts(orders, second))
  const duplicate = await h.stageFacts(
    orders,
    ORDER,
    [
      { order_id: 6, customer_id: 101, ordered_at: JAN, amount: 1 },
      { order_id: 6, customer_id: 102, ordered_at: JAN, amount: 2 },
    ],
    { extractedAt: '2024-05-03T00:00:00Z' },
  )
  const refused = await h.loadFacts(orders, duplicate).then(
    () => 'loaded',
    (error: unknown) => (error instanceof BatchRejectedError ? error.message : String(error)),
  )

  await h.mergeDimension(tariffs, TARIFF, [{ tariff_code: 'HOME', plan: 'Basic' }], { extractedAt: JAN })
  const bills = await h.stageFacts(
    invoices,
    INVOICE,
    [
      { invoice_id: 'I-1', tariff_code: 'HOME', invoiced_on: '2024-02-01', kwh: 100 },
      { invoice_id: 'I-2', tariff_code: 'NIGHT', invoiced_on: '2024-02-01', kwh: 40 },
    ],
    { extractedAt: '2024-02-02T00:00:00Z' },
  )
  report(await h.loadFacts(invoices, bills))
  await h.mergeDimension(
    tariffs,
    TARIFF,
    [
      { tariff_code: 'HOME', plan: 'Green' },
      { tariff_code: 'NIGHT', plan: 'Night' },
    ],
    { extractedAt: MAR },
  )
  const q = (name: string) => h.warehouse.dialect.quoteIdentifier(name)
  return {
    reports,
    orders: await h.query(
      `SELECT order_id, customer_sk, amount FROM ${h.t('fact_orders')} ORDER BY order_id`,
    ),
    ordersAsIs: await h.query(
      `SELECT order_id, customer_region FROM ${h.t('fact_orders_as_is')} ORDER BY order_id`,
    ),
    unknownMembers: await h.query(
      `SELECT ${q('dimsync_sk')}, ${h.warehouse.dialect.castToString('customer_id')} AS k, region AS label, is_current FROM ${h.t('dim_customer')} WHERE customer_id IS NULL\n` +
        `UNION ALL SELECT ${q('dimsync_sk')}, tariff_code AS k, plan AS label, is_current FROM ${h.t('dim_tariff')} WHERE tariff_code IS NULL\n` +
        `ORDER BY 1`,
    ),
    invoicesAsWas: await h.query(
      `SELECT invoice_id, tariff_sk, tariff_plan FROM ${h.t('fact_invoice_as_was')} ORDER BY invoice_id`,
    ),
    invoicesAsIs: await h.query(
      `SELECT invoice_id, tariff_sk, tariff_plan FROM ${h.t('fact_invoice_as_is')} ORDER BY invoice_id`,
    ),
    duplicate: refused,
  }
}

let zeta: ZetaSqlService
beforeAll(async () => {
  zeta = await ZetaSqlService.start()
})
afterAll(async () => {
  await zeta?.stop()
})

async function observe(open: () => Promise<FactHarness>): Promise<Observed> {
  const h = await open()
  try {
    return await scenario(h)
  } finally {
    await h.dispose()
  }
}

describe('facts on DuckDB and on the BigQuery emulator', () => {
  it('resolve the same surrogate keys, count the same unknown facts, refuse the same duplicates, show the same views', async () => {
    const duckdb = await observe(() => FactHarness.duckdb([customers, tariffs]))
    const bigquery = await observe(() => FactHarness.bigquery(zeta, [customers, tariffs]))
    expect(duckdb.reports).toEqual([
      ['loaded', 4, [2]],
      ['already-applied', undefined, undefined],
      ['loaded', 2, [1]],
      ['loaded', 2, [1]],
    ])
    expect(duckdb.orders.map((r) => [r.order_id, r.customer_sk, r.amount])).toEqual([
      [1, 1, 10],
      [2, 3, 20],
      [3, -1, 5],
      [4, 2, 8],
      [5, -1, 1],
    ])
    expect(duckdb.ordersAsIs.map((r) => r.customer_region)).toEqual(['North', 'North', null, 'North', null])
    expect(duckdb.unknownMembers).toEqual([
      { dimsync_sk: -1, k: null, label: 'Unknown', is_current: false },
      { dimsync_sk: 0, k: null, label: 'Unknown', is_current: false },
    ])
    expect(duckdb.invoicesAsWas.map((r) => [r.invoice_id, r.tariff_sk, r.tariff_plan])).toEqual([
      ['I-1', 1, 'Basic'],
      ['I-2', 0, 'Unknown'],
    ])
    expect(duckdb.invoicesAsIs.map((r) => [r.invoice_id, r.tariff_sk, r.tariff_plan])).toEqual([
      ['I-1', 1, 'Green'],
      ['I-2', 0, 'Night'],
    ])
    expect(duckdb.duplicate).toContain(
      'has 1 grain values held by more than one fact (grain order_id), for example: order_id=6 (2 facts)',
    )
    expect(bigquery).toEqual(duckdb)
  })
})
