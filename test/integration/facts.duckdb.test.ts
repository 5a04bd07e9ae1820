import { afterEach, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { BatchRejectedError } from '../../lib/core/errors.ts'
import type { FactSpec } from '../../lib/core/fact-spec.ts'
import { repointFacts } from '../../lib/use-cases/repoint-facts.ts'
import { FactHarness } from '../support/fact-harness.ts'
import { customerReference, order, ordersFact } from '../support/fact-specs.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const CUSTOMER: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
]
const ORDER: StagedColumn[] = [
  { name: 'order_id', type: 'BIGINT' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'ordered_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'amount', type: 'DECIMAL(10,2)' },
]
const JAN = '2024-01-01T00:00:00Z'
const MAR = '2024-03-01T00:00:00Z'
const customers = tableSpec({ deletes: 'invalidate' })

let h: FactHarness | undefined
afterEach(async () => {
  await h?.dispose()
  h = undefined
})

/** Ana (101) moves from South to North on 1 March; Bruno (102) exists from 1 January. */
async function customersWithHistory(): Promise<FactHarness> {
  h = await FactHarness.duckdb([customers])
  await h.mergeDimension(
    customers,
    CUSTOMER,
    [
      { customer_id: 101, name: 'Ana', region: 'South' },
      { customer_id: 102, name: 'Bruno', region: 'North' },
    ],
    { extractedAt: JAN },
  )
  await h.mergeDimension(
    customers,
    CUSTOMER,
    [
      { customer_id: 101, name: 'Ana', region: 'North' },
      { customer_id: 102, name: 'Bruno', region: 'North' },
    ],
    { extractedAt: MAR },
  )
  return h
}

async function facts(harness: FactHarness): Promise<unknown[][]> {
  const rows = await harness.query(
    `SELECT order_id, customer_sk, CAST(amount AS VARCHAR) AS amount FROM fact_orders ORDER BY order_id`,
  )
  return rows.map((r) => [r.order_id, r.customer_sk, r.amount])
}

describe('facts keyed to the version true at their event time, on DuckDB', () => {
  it('an order whose customer is missing lands on the unknown member and keeps its measure', async () => {
    const h = await customersWithHistory()
    const fact = ordersFact()
    const batch = await h.stageFacts(
      fact,
      ORDER,
      [
        order(1, 101, '2024-02-01T00:00:00Z', 10),
        order(2, 101, '2024-04-01T00:00:00Z', 20),
        order(3, 999, '2024-02-01T00:00:00Z', 5),
        order(4, 102, '2023-12-01T00:00:00Z', 7),
        order(5, 101, MAR, 30),
        order(6, null, '2024-02-01T00:00:00Z', 1),
      ],
      { extractedAt: '2024-05-01T00:00:00Z' },
    )
    const result = await h.loadFacts(fact, batch)
    expect(result).toMatchObject({
      status: 'loaded',
      facts: 6,
      unknown: [{ dimension: 'customers', column: 'customer_sk', facts: 3 }],
    })
    // sk 1: Ana in the South (January), 3: Ana in the North (from 1 March, inclusive), 0: unknown.
    expect(await facts(h)).toEqual([
      [1, 1, '10.00'],
      [2, 3, '20.00'],
      [3, 0, '5.00'],
      [4, 0, '7.00'],
      [5, 3, '30.00'],
      [6, 0, '1.00'],
    ])
    const unknown = await h.query(
      `SELECT dimsync_sk, customer_id, name, region, is_current, is_deleted FROM dim_customer WHERE dimsync_sk = 0`,
    )
    expect(unknown).toEqual([
      {
        dimsync_sk: 0,
        customer_id: null,
        name: 'Unknown',
        region: 'Unknown',
        is_current: false,
        is_deleted: false,
      },
    ])
    // An inner join to the dimension keeps every fact and every amount.
    const joined = await h.query(
      `SELECT COUNT(*) AS n, CAST(SUM(f.amount) AS VARCHAR) AS total FROM fact_orders f JOIN dim_customer d ON d.dimsync_sk = f.customer_sk`,
    )
    expect(joined).toEqual([{ n: 6, total: '73.00' }])
    // Without a stored natural key, the as-is view finds the current version through the version pointed at.
    const regions = async (view: string) =>
      (await h.query(`SELECT order_id, customer_region FROM ${view} ORDER BY order_id`)).map(
        (r) => r.customer_region,
      )
    expect(await regions('fact_orders_as_was')).toEqual([
      'South',
      'North',
      'Unknown',
      'Unknown',
      'North',
      'Unknown',
    ])
    expect(await regions('fact_orders_as_is')).toEqual(['North', 'North', null, null, 'North', null])
  })

  it('a re-delivered batch changes nothing; an incremental batch appends and replaces facts of the same grain', async () => {
    const h = await customersWithHistory()
    const fact = ordersFact()
    const first = await h.stageFacts(
      fact,
      ORDER,
      [order(1, 101, '2024-02-01T00:00:00Z', 10), order(2, 999, '2024-02-01T00:00:00Z', 5)],
      { extractedAt: '2024-05-01T00:00:00Z' },
    )
    await h.loadFacts(fact, first)
    expect(await h.loadFacts(fact, first)).toMatchObject({ status: 'already-applied' })
    expect(await facts(h)).toEqual([
      [1, 1, '10.00'],
      [2, 0, '5.00'],
    ])
    const again = await h.stageFacts(
      fact,
      ORDER,
      [order(1, 101, '2024-02-01T00:00:00Z', 10), order(2, 999, '2024-02-01T00:00:00Z', 5)],
      { extractedAt: '2024-05-02T00:00:00Z' },
    )
    await h.loadFacts(fact, again)
    expect(await facts(h)).toEqual([
      [1, 1, '10.00'],
      [2, 0, '5.00'],
    ])
    const next = await h.stageFacts(
      fact,
      ORDER,
      [order(1, 101, '2024-04-01T00:00:00Z', 11), order(3, 102, '2024-04-01T00:00:00Z', 8)],
      { extractedAt: '2024-05-03T00:00:00Z' },
    )
    expect(await h.loadFacts(fact, next)).toMatchObject({ facts: 2, unknown: [{ facts: 0 }] })
    expect(await facts(h)).toEqual([
      [1, 3, '11.00'],
      [2, 0, '5.00'],
      [3, 2, '8.00'],
    ])
    // One unknown member, however many loads needed it.
    expect(await h.query(`SELECT COUNT(*) AS n FROM dim_customer WHERE customer_id IS NULL`)).toEqual([
      { n: 1 },
    ])
  })

  it('a full extract of facts replaces the fact table', async () => {
    const h = await customersWithHistory()
    const fact = ordersFact({ extract: { mode: 'full' } })
    const one = await h.stageFacts(fact, ORDER, [order(1, 101, '2024-02-01T00:00:00Z'), order(2, 102, JAN)], {
      extractedAt: '2024-05-01T00:00:00Z',
    })
    await h.loadFacts(fact, one)
    const two = await h.stageFacts(fact, ORDER, [order(2, 102, JAN, 12)], {
      extractedAt: '2024-05-02T00:00:00Z',
    })
    await h.loadFacts(fact, two)
    expect(await facts(h)).toEqual([[2, 2, '12.00']])
  })

  it('the dimension keeps merging around its unknown member: never current, never deleted by absence, numbering goes on', async () => {
    const h = await customersWithHistory()
    const fact = ordersFact({ references: [customerReference({ unknownMemberKey: -1 })] })
    await h.loadFacts(
      fact,
      await h.stageFacts(fact, ORDER, [order(1, 999, '2024-02-01T00:00:00Z')], {
        extractedAt: '2024-05-01T00:00:00Z',
      }),
    )
    const merged = await h.mergeDimension(
      customers,
      CUSTOMER,
      [{ customer_id: 101, name: 'Ana', region: 'East' }],
      { extractedAt: '2024-06-01T00:00:00Z' },
    )
    expect(merged.counts).toMatchObject({ insertedVersions: 1, closedVersions: 2 })
    const rows = await h.query(
      `SELECT dimsync_sk, customer_id, region, is_current FROM dim_customer ORDER BY dimsync_sk`,
    )
    expect(rows.map((r) => [r.dimsync_sk, r.customer_id, r.region, r.is_current])).toEqual([
      [-1, null, 'Unknown', false],
      [1, 101, 'South', false],
      [2, 102, 'North', false],
      [3, 101, 'North', false],
      [4, 101, 'East', true],
    ])
    expect(await facts(h)).toEqual([[1, -1, '10.00']])
    expect(await h.query(`SELECT COUNT(*) AS n FROM dim_customer_current`)).toEqual([{ n: 1 }])
  })

  it('refuses a batch with duplicate grain (with examples), a NULL grain or a NULL event time; nothing is written', async () => {
    const h = await customersWithHistory()
    const fact = ordersFact()
    const refused = async (rows: ReturnType<typeof order>[]) => {
      const batch = await h.stageFacts(fact, ORDER, rows, { extractedAt: '2024-05-01T00:00:00Z' })
      return h.loadFacts(fact, batch).then(
        () => undefined,
        (error: unknown) => error,
      )
    }
    const duplicate = await refused([
      order(1, 101, JAN),
      order(1, 102, JAN),
      order(2, 101, JAN),
      order(3, 101, JAN),
      order(3, 101, MAR),
      order(3, 101, MAR),
    ])
    expect(duplicate).toBeInstanceOf(BatchRejectedError)
    expect((duplicate as Error).message).toContain(
      'has 2 grain values held by more than one fact (grain order_id), for example: order_id=1 (2 facts); order_id=3 (3 facts)',
    )
    const nullGrain = await refused([order(1, 101, JAN), { ...order(2, 101, JAN), order_id: null } as never])
    expect((nullGrain as Error).message).toContain('has 1 facts with a NULL grain column (order_id)')
    const nullTime = await refused([order(1, 101, null), order(2, 101, null)])
    expect((nullTime as Error).message).toContain('has 2 facts with a NULL event time (ordered_at)')
    // Even the fact table's creation rolled back with the refused batch, and no batch is recorded.
    expect(await h.warehouse.describeTable({ schema: 'main', name: 'fact_orders' })).toBeUndefined()
    expect(await h.query(`SELECT COUNT(*) AS n FROM _dimsync_batches WHERE target = 'fact_orders'`)).toEqual([
      { n: 0 },
    ])
  })

  it('refuses reference columns whose type cannot match the dimension key, and a dimension not loaded yet', async () => {
    const h = await customersWithHistory()
    const fact = ordersFact()
    const textKey = ORDER.map((c) => (c.name === 'customer_id' ? { ...c, type: 'VARCHAR' } : c))
    const batch = await h.batches.stage(
      fact.name,
      textKey,
      [{ ...order(1, null, JAN), customer_id: 'C-101' }],
      {
        extractedAt: '2024-05-01T00:00:00Z',
        mode: 'incremental',
      },
    )
    await expect(h.loadFacts(fact, batch)).rejects.toThrow(
      'fact orders: reference to customers: column "customer_id" (VARCHAR) cannot match key column "customer_id" (BIGINT) of dim_customer',
    )
    const products = tableSpec({ name: 'products', target: 'dim_product', key: ['product_id'] })
    h.dimensions.push(products)
    const withProduct = ordersFact({
      references: [
        customerReference(),
        customerReference({ dimension: 'products', surrogateKeyColumn: 'product_sk' }),
      ],
    })
    const second = await h.stageFacts(withProduct, ORDER, [order(1, 101, JAN)], {
      extractedAt: '2024-05-01T00:00:00Z',
    })
    await expect(h.loadFacts(withProduct, second)).rejects.toThrow(
      'fact orders: reference to products: dimension dim_product does not exist yet; load the dimension before its facts',
    )
  })
})

describe('facts read as they were and as they are (type 7), on DuckDB', () => {
  const TARIFF: StagedColumn[] = [
    { name: 'tariff_code', type: 'VARCHAR' },
    { name: 'price', type: 'DECIMAL(6,3)' },
  ]
  const INVOICE: StagedColumn[] = [
    { name: 'invoice_id', type: 'VARCHAR' },
    { name: 'tariff_code', type: 'VARCHAR' },
    { name: 'invoiced_on', type: 'DATE' },
    { name: 'kwh', type: 'INTEGER' },
  ]
  const tariffs = tableSpec({ name: 'tariffs', target: 'dim_tariff', key: ['tariff_code'] })
  const invoices: FactSpec = {
    name: 'invoices',
    source: { type: 'file', path: 'invoices.csv', format: 'csv', csv: { delimiter: ',', header: true } },
    target: 'fact_invoice',
    extract: { mode: 'incremental', cursor: 'invoiced_on', lookbackMinutes: 0 },
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

  it('an invoice keeps the old tariff version as was; the as-is view shows the new one', async () => {
    h = await FactHarness.duckdb([tariffs])
    await h.mergeDimension(tariffs, TARIFF, [{ tariff_code: 'HOME', price: '0.200' }], { extractedAt: JAN })
    const batch = await h.stageFacts(
      invoices,
      INVOICE,
      [
        { invoice_id: 'I-1', tariff_code: 'HOME', invoiced_on: '2024-02-01', kwh: 100 },
        { invoice_id: 'I-2', tariff_code: 'NIGHT', invoiced_on: '2024-02-01', kwh: 40 },
      ],
      { extractedAt: '2024-02-02T00:00:00Z' },
    )
    await h.loadFacts(invoices, batch)
    await h.mergeDimension(
      tariffs,
      TARIFF,
      [
        { tariff_code: 'HOME', price: '0.250' },
        { tariff_code: 'NIGHT', price: '0.100' },
      ],
      { extractedAt: MAR },
    )
    const read = async (view: string) =>
      (
        await h!.query(
          `SELECT invoice_id, tariff_code, tariff_sk, CAST(tariff_price AS VARCHAR) AS price FROM ${view} ORDER BY invoice_id`,
        )
      ).map((r) => [r.invoice_id, r.tariff_code, r.tariff_sk, r.price])
    expect(await read('fact_invoice_as_was')).toEqual([
      ['I-1', 'HOME', 1, '0.200'],
      ['I-2', 'NIGHT', 0, null],
    ])
    // The stored natural key finds the current version, even of a tariff unknown when the invoice was loaded.
    expect(await read('fact_invoice_as_is')).toEqual([
      ['I-1', 'HOME', 1, '0.250'],
      ['I-2', 'NIGHT', 0, '0.100'],
    ])
  })
})

describe('re-pointing facts after late dimension changes, on DuckDB', () => {
  const CHANGES: StagedColumn[] = [
    { name: 'customer_id', type: 'BIGINT' },
    { name: 'region', type: 'VARCHAR' },
    { name: 'changed_at', type: 'TIMESTAMP WITH TIME ZONE' },
  ]
  const changing = tableSpec({
    extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
    validFrom: { kind: 'column', column: 'changed_at' },
  })
  const change = (customer_id: number, region: string, changed_at: string) => ({
    customer_id,
    region,
    changed_at,
  })

  it('a late event splitting a window and a key arriving late move exactly the facts they concern', async () => {
    h = await FactHarness.duckdb([changing])
    await h.mergeDimension(
      changing,
      CHANGES,
      [change(101, 'South', JAN), change(101, 'West', '2024-04-01T00:00:00Z')],
      {
        extractedAt: '2024-04-02T00:00:00Z',
        mode: 'incremental',
      },
    )
    const kept = ordersFact({ references: [customerReference({ keepNaturalKey: true })] })
    const batch = await h.stageFacts(
      kept,
      ORDER,
      [
        order(1, 101, '2024-01-15T00:00:00Z'),
        order(2, 101, '2024-02-15T00:00:00Z'),
        order(3, 102, '2024-02-15T00:00:00Z'),
        order(4, 102, '2023-06-01T00:00:00Z'),
      ],
      { extractedAt: '2024-04-03T00:00:00Z' },
    )
    await h.loadFacts(kept, batch)
    expect(await facts(h)).toEqual([
      [1, 1, '10.00'],
      [2, 1, '10.00'],
      [3, 0, '10.00'],
      [4, 0, '10.00'],
    ])
    // Late: Ana was in the North from 1 February (splits her South window); Bruno existed from 1 January.
    const late = await h.mergeDimension(
      changing,
      CHANGES,
      [change(101, 'North', '2024-02-01T00:00:00Z'), change(102, 'East', JAN)],
      { extractedAt: '2024-04-04T00:00:00Z', mode: 'incremental' },
    )
    expect(late.counts?.lateKeys).toBeGreaterThan(0)
    const skOf = async (key: number, from: string) =>
      (
        await h!.query(
          `SELECT dimsync_sk FROM dim_customer WHERE customer_id = ${key} AND valid_from = '${from}'`,
        )
      )[0]!.dimsync_sk
    const north = await skOf(101, '2024-02-01 00:00:00+00')
    const bruno = await skOf(102, '2024-01-01 00:00:00+00')
    const repoint = () =>
      repointFacts({ warehouse: h!.warehouse }, { fact: kept, dimensions: [changing], schema: 'main' })
    expect(await repoint()).toEqual([{ dimension: 'customers', column: 'customer_sk', facts: 2 }])
    expect(await facts(h)).toEqual([
      [1, 1, '10.00'],
      [2, north, '10.00'],
      [3, bruno, '10.00'],
      [4, 0, '10.00'],
    ])
    expect(await repoint()).toEqual([{ dimension: 'customers', column: 'customer_sk', facts: 0 }])
  })

  it('against a bitemporal dimension: facts point at the version known now, the unknown member included, and re-pointing after a correction moves them', async () => {
    const bitemporal = { ...changing, systemTime: { systemFrom: 'system_from', systemTo: 'system_to' } }
    h = await FactHarness.duckdb([bitemporal])
    await h.mergeDimension(
      bitemporal,
      CHANGES,
      [change(101, 'South', JAN), change(101, 'West', '2024-04-01T00:00:00Z')],
      { extractedAt: '2024-04-02T00:00:00Z', mode: 'incremental' },
    )
    const batch = await h.stageFacts(
      ordersFact(),
      ORDER,
      [order(1, 101, '2024-01-15T00:00:00Z'), order(2, 101, '2024-02-15T00:00:00Z'), order(3, 102, JAN)],
      { extractedAt: '2024-04-03T00:00:00Z' },
    )
    await h.loadFacts(ordersFact(), batch)
    const south = await h.query(
      `SELECT dimsync_sk FROM dim_customer WHERE customer_id = 101 AND region = 'South'`,
    )
    expect(await facts(h)).toEqual([
      [1, south[0]!.dimsync_sk, '10.00'],
      [2, south[0]!.dimsync_sk, '10.00'],
      [3, 0, '10.00'],
    ])
    // A correction: Ana was in the North from 1 February. The South window is closed in system time and its
    // corrected copy (ending 1 February) inserted; a fact of 15 February must follow the row known now.
    await h.mergeDimension(bitemporal, CHANGES, [change(101, 'North', '2024-02-01T00:00:00Z')], {
      extractedAt: '2024-04-04T00:00:00Z',
      mode: 'incremental',
    })
    await repointFacts(
      { warehouse: h.warehouse },
      { fact: ordersFact(), dimensions: [bitemporal], schema: 'main' },
    )
    const north = await h.query(
      `SELECT dimsync_sk FROM dim_customer WHERE customer_id = 101 AND region = 'North' AND system_to IS NULL`,
    )
    expect(await facts(h)).toEqual([
      [1, south[0]!.dimsync_sk, '10.00'],
      [2, north[0]!.dimsync_sk, '10.00'],
      [3, 0, '10.00'],
    ])
    // A fact loaded after the correction matches one row: the superseded South row no longer counts.
    const later = await h.stageFacts(ordersFact(), ORDER, [order(4, 101, '2024-02-20T00:00:00Z')], {
      extractedAt: '2024-04-05T00:00:00Z',
    })
    await h.loadFacts(ordersFact(), later)
    expect((await facts(h)).filter((f) => f[0] === 4)).toEqual([[4, north[0]!.dimsync_sk, '10.00']])
    // Both readings hold each fact once, with the rows known now.
    const reading = async (view: string) =>
      (await h!.query(`SELECT order_id, customer_region FROM ${view} ORDER BY order_id`)).map((r) => [
        r.order_id,
        r.customer_region,
      ])
    expect(await reading('fact_orders_as_was')).toEqual([
      [1, 'South'],
      [2, 'North'],
      [3, 'Unknown'],
      [4, 'North'],
    ])
    expect(await reading('fact_orders_as_is')).toEqual([
      [1, 'West'],
      [2, 'West'],
      [3, null],
      [4, 'West'],
    ])
  })
})
