import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { FactReference, FactSpec } from '../../lib/core/fact-spec.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ZetaSqlService } from '../support/bigquery-emulator/zetasql-service.ts'
import { FactHarness } from '../support/fact-harness.ts'
import {
  customerReference,
  ORDER_COLUMNS as ORDER,
  order,
  ordersFact as orders,
} from '../support/fact-specs.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const CUSTOMER: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
]
const customers = tableSpec({ deletes: 'ignore' })

const reference = customerReference({ inferred: true })
const ordersFact = (references: readonly FactReference[] = [reference]) => orders({ references })

/**
 * Ana (101) is known from January. Orders of Eve (555) and of Zoe (777) arrive before either is extracted; a
 * later batch brings an even older order of Eve; Eve's first extract (April) completes her placeholder, her
 * second (May) versions her as usual; Zoe is never extracted.
 */
async function scenario(h: FactHarness) {
  const fact = ordersFact()
  const versions = async () =>
    (
      await h.query(
        `SELECT dimsync_sk AS sk, customer_id AS id, name, region, CAST(valid_from AS STRING) AS valid_from, ` +
          `valid_to IS NULL AS open, is_current, is_inferred IS TRUE AS inferred FROM ${h.t('dim_customer')} ` +
          `WHERE dimsync_sk > 0 ORDER BY dimsync_sk`,
      )
    ).map((r) => [
      r.sk,
      r.id,
      r.name,
      r.region,
      String(r.valid_from).slice(0, 10),
      r.open,
      r.is_current,
      r.inferred,
    ])
  const facts = async () =>
    (
      await h.query(
        `SELECT order_id, customer_sk, customer_name FROM ${h.t('fact_orders_as_was')} ORDER BY order_id`,
      )
    ).map((r) => [r.order_id, r.customer_sk, r.customer_name])

  await h.mergeDimension(customers, CUSTOMER, [{ customer_id: 101, name: 'Ana', region: 'South' }], {
    extractedAt: '2024-01-01T00:00:00Z',
  })
  const first = await h.stageFacts(
    fact,
    ORDER,
    [
      order(1, 101, '2024-02-01T00:00:00Z'),
      order(2, 555, '2024-02-20T00:00:00Z'),
      order(3, 555, '2024-02-10T00:00:00Z'),
      order(4, 777, '2024-03-05T00:00:00Z'),
      order(5, null, '2024-03-05T00:00:00Z'),
    ],
    { extractedAt: '2024-03-10T00:00:00Z' },
  )
  const loaded = await h.loadFacts(fact, first)
  const afterFirst = { versions: await versions(), facts: await facts() }
  const again = await h.loadFacts(fact, first)
  const second = await h.stageFacts(fact, ORDER, [order(6, 555, '2024-02-01T00:00:00Z')], {
    extractedAt: '2024-03-11T00:00:00Z',
  })
  const older = await h.loadFacts(fact, second)
  const afterOlder = await versions()
  await h.mergeDimension(
    customers,
    CUSTOMER,
    [
      { customer_id: 101, name: 'Ana', region: 'South' },
      { customer_id: 555, name: 'Eve', region: 'West' },
    ],
    { extractedAt: '2024-04-01T00:00:00Z' },
  )
  const afterCompletion = { versions: await versions(), facts: await facts() }
  await h.mergeDimension(
    customers,
    CUSTOMER,
    [
      { customer_id: 101, name: 'Ana', region: 'South' },
      { customer_id: 555, name: 'Eve', region: 'North' },
    ],
    { extractedAt: '2024-05-01T00:00:00Z' },
  )
  return {
    reports: [loaded, again, older].map((r) => [r.status, r.facts, r.unknown]),
    afterFirst,
    afterOlder,
    afterCompletion,
    afterNextVersion: await versions(),
  }
}

type Observed = Awaited<ReturnType<typeof scenario>>

async function observe(open: () => Promise<FactHarness>): Promise<Observed> {
  const h = await open()
  try {
    return await scenario(h)
  } finally {
    await h.dispose()
  }
}

async function observeWith<T>(
  open: () => Promise<FactHarness>,
  run: (h: FactHarness) => Promise<T>,
): Promise<T> {
  const h = await open()
  try {
    return await run(h)
  } finally {
    await h.dispose()
  }
}

function expectInferredMembers(o: Observed): void {
  const counts = (unknown: number, inferredMembers: number) => [
    { dimension: 'customers', column: 'customer_sk', facts: unknown, inferredMembers },
  ]
  expect(o.reports).toEqual([
    // Order 5 carries no customer at all: the unknown member.
    ['loaded', 5, counts(1, 2)],
    ['already-applied', undefined, undefined],
    ['loaded', 1, counts(0, 0)],
  ])
  // Placeholders of 555 (from its earliest order) and 777, numbered after Ana; text attributes Unknown.
  expect(o.afterFirst.versions).toEqual([
    [1, 101, 'Ana', 'South', '2024-01-01', true, true, false],
    [2, 555, 'Unknown', 'Unknown', '2024-02-10', true, true, true],
    [3, 777, 'Unknown', 'Unknown', '2024-03-05', true, true, true],
  ])
  expect(o.afterFirst.facts).toEqual([
    [1, 1, 'Ana'],
    [2, 2, 'Unknown'],
    [3, 2, 'Unknown'],
    [4, 3, 'Unknown'],
    [5, 0, 'Unknown'],
  ])
  // An older order of 555 moves the start of its placeholder back, so it still falls in it.
  expect(o.afterOlder[1]).toEqual([2, 555, 'Unknown', 'Unknown', '2024-02-01', true, true, true])
  // Eve's first extract completes the placeholder in place: same surrogate key and start, flag cleared, no new
  // version; the facts loaded early now read Eve.
  expect(o.afterCompletion.versions).toEqual([
    [1, 101, 'Ana', 'South', '2024-01-01', true, true, false],
    [2, 555, 'Eve', 'West', '2024-02-01', true, true, false],
    [3, 777, 'Unknown', 'Unknown', '2024-03-05', true, true, true],
  ])
  expect(o.afterCompletion.facts).toEqual([
    [1, 1, 'Ana'],
    [2, 2, 'Eve'],
    [3, 2, 'Eve'],
    [4, 3, 'Unknown'],
    [5, 0, 'Unknown'],
    [6, 2, 'Eve'],
  ])
  // Her next change versions her as any key.
  expect(o.afterNextVersion).toEqual([
    [1, 101, 'Ana', 'South', '2024-01-01', true, true, false],
    [2, 555, 'Eve', 'West', '2024-02-01', false, false, false],
    [3, 777, 'Unknown', 'Unknown', '2024-03-05', true, true, true],
    [4, 555, 'Eve', 'North', '2024-05-01', true, true, false],
  ])
}

describe('inferred members', () => {
  it('on DuckDB: a placeholder per unknown key, completed in place by its first extract', async () => {
    expectInferredMembers(await observe(() => FactHarness.duckdb([customers])))
  })

  describe('on the BigQuery emulator', () => {
    let zeta: ZetaSqlService
    beforeAll(async () => {
      zeta = await ZetaSqlService.start()
    })
    afterAll(async () => {
      await zeta?.stop()
    })

    it('gives the same placeholders, completion and surrogate keys as DuckDB', async () => {
      expectInferredMembers(await observe(() => FactHarness.bigquery(zeta, [customers])))
    })
  })

  describe('on a table with late events (capture log), on DuckDB and the BigQuery emulator', () => {
    let zeta: ZetaSqlService
    beforeAll(async () => {
      zeta = await ZetaSqlService.start()
    })
    afterAll(async () => {
      await zeta?.stop()
    })
    const changing = tableSpec({
      extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
      validFrom: { kind: 'column', column: 'changed_at' },
    })
    const CHANGE: StagedColumn[] = [...CUSTOMER, { name: 'changed_at', type: 'TIMESTAMP WITH TIME ZONE' }]
    const change = (customer_id: number, region: string, changed_at: string) => ({
      customer_id,
      name: 'Eve',
      region,
      changed_at,
    })

    /** Eve's order of 10 February makes a placeholder; her first change (1 March) completes it from 10 February; a
     *  late change of 20 February then splits the completed window. */
    async function lateScenario(h: FactHarness) {
      const fact = ordersFact()
      const merge = (rows: ReturnType<typeof change>[], at: string) =>
        h.mergeDimension(changing, CHANGE, rows, { extractedAt: at, mode: 'incremental' })
      await merge([change(101, 'South', '2024-01-01T00:00:00Z')], '2024-01-02T00:00:00Z')
      await h.loadFacts(
        fact,
        await h.stageFacts(fact, ORDER, [order(1, 555, '2024-02-10T00:00:00Z')], {
          extractedAt: '2024-02-11T00:00:00Z',
        }),
      )
      await merge([change(555, 'West', '2024-03-01T00:00:00Z')], '2024-03-02T00:00:00Z')
      await merge([change(555, 'North', '2024-02-20T00:00:00Z')], '2024-03-03T00:00:00Z')
      return (
        await h.query(
          `SELECT dimsync_sk AS sk, region, CAST(valid_from AS STRING) AS f, CAST(valid_to AS STRING) AS t, is_inferred IS TRUE AS inferred ` +
            `FROM ${h.t('dim_customer')} WHERE customer_id = 555 ORDER BY valid_from`,
        )
      ).map((r) => [
        r.sk,
        r.region,
        String(r.f).slice(0, 10),
        r.t === null ? null : String(r.t).slice(0, 10),
        r.inferred,
      ])
    }

    it('completes the placeholder from its start; a late change splits it as any captured state', async () => {
      const expected = [
        [2, 'West', '2024-02-10', '2024-02-20', false],
        [3, 'North', '2024-02-20', '2024-03-01', false],
        [4, 'West', '2024-03-01', null, false],
      ]
      expect(await observeWith(() => FactHarness.duckdb([changing]), lateScenario)).toEqual(expected)
      expect(await observeWith(() => FactHarness.bigquery(zeta, [changing]), lateScenario)).toEqual(expected)
    })
  })

  describe('a NaN reference to a float key', () => {
    let zeta: ZetaSqlService
    beforeAll(async () => {
      zeta = await ZetaSqlService.start()
    })
    afterAll(async () => {
      await zeta?.stop()
    })

    // BigQuery's NaN equals nothing: the placeholder of a NaN key would never be found again, and every load
    // would add another current one.
    it.each([
      ['DuckDB', (dimensions: TableSpec[]) => FactHarness.duckdb(dimensions)],
      ['the BigQuery emulator', (dimensions: TableSpec[]) => FactHarness.bigquery(zeta, dimensions)],
    ])(
      'is refused on %s when it would infer a member, naming fact, reference and column; nothing written',
      async (_warehouse, open) => {
        const gauges = tableSpec({ name: 'gauges', target: 'dim_gauge', key: ['gauge_id'] })
        const h = await open([gauges])
        try {
          await h.mergeDimension(
            gauges,
            [
              { name: 'gauge_id', type: 'DOUBLE' },
              { name: 'label', type: 'VARCHAR' },
            ],
            [{ gauge_id: 1.5, label: 'boiler' }],
            { extractedAt: '2024-01-01T00:00:00Z' },
          )
          const fact: FactSpec = {
            ...ordersFact([
              {
                ...reference,
                dimension: 'gauges',
                key: ['gauge'],
                surrogateKeyColumn: 'gauge_sk',
                alias: 'gauge',
              },
            ]),
            name: 'readings',
            target: 'fact_readings',
          }
          const READINGS: StagedColumn[] = [
            { name: 'order_id', type: 'BIGINT' },
            { name: 'gauge', type: 'DOUBLE' },
            { name: 'ordered_at', type: 'TIMESTAMP WITH TIME ZONE' },
            { name: 'amount', type: 'BIGINT' },
          ]
          const at = '2024-02-01T00:00:00Z'
          const batch = await h.stageFacts(
            fact,
            READINGS,
            [
              { order_id: 1, gauge: 2.5, ordered_at: at, amount: 1 },
              { order_id: 2, gauge: Number.NaN, ordered_at: at, amount: 1 },
            ],
            { extractedAt: '2024-02-02T00:00:00Z' },
          )
          await expect(h.loadFacts(fact, batch)).rejects.toThrow(
            `fact readings: batch ${batch}: reference to gauges infers members, but 1 facts carry a NaN key ` +
              '(gauge): NaN equals no value on BigQuery, so its member could never be found again; nothing was written',
          )
          const placeholders = `SELECT COUNT(*) AS n FROM ${h.t('dim_gauge')} WHERE is_inferred IS TRUE`
          expect(await h.query(placeholders), 'no placeholder').toEqual([{ n: 0 }])
        } finally {
          await h.dispose()
        }
      },
    )
  })

  it('refuses facts carrying only part of a composite key (nothing written), infers from whole keys', async () => {
    const accounts: TableSpec = tableSpec({
      name: 'accounts',
      target: 'dim_account',
      key: ['tenant_id', 'account_id'],
    })
    const h = await FactHarness.duckdb([accounts])
    try {
      await h.mergeDimension(
        accounts,
        [
          { name: 'tenant_id', type: 'VARCHAR' },
          { name: 'account_id', type: 'BIGINT' },
          { name: 'plan', type: 'VARCHAR' },
        ],
        [{ tenant_id: 'acme', account_id: 1, plan: 'Basic' }],
        { extractedAt: '2024-01-01T00:00:00Z' },
      )
      const fact: FactSpec = {
        ...ordersFact([
          {
            ...reference,
            dimension: 'accounts',
            key: ['tenant', 'account'],
            surrogateKeyColumn: 'account_sk',
          },
        ]),
        name: 'usage',
        target: 'fact_usage',
      }
      const USAGE: StagedColumn[] = [
        { name: 'order_id', type: 'BIGINT' },
        { name: 'tenant', type: 'VARCHAR' },
        { name: 'account', type: 'BIGINT' },
        { name: 'ordered_at', type: 'TIMESTAMP WITH TIME ZONE' },
        { name: 'amount', type: 'BIGINT' },
      ]
      const at = '2024-02-01T00:00:00Z'
      const bad = await h.stageFacts(
        fact,
        USAGE,
        [
          { order_id: 1, tenant: 'acme', account: 2, ordered_at: at, amount: 1 },
          { order_id: 2, tenant: 'acme', account: null, ordered_at: at, amount: 1 },
        ],
        { extractedAt: '2024-02-02T00:00:00Z' },
      )
      await expect(h.loadFacts(fact, bad)).rejects.toThrow(
        'fact usage: batch ' +
          bad +
          ': reference to accounts infers members, but 1 facts carry only part of its key (tenant, account: some NULL, some not)',
      )
      const placeholders = `SELECT COUNT(*) AS n FROM dim_account WHERE is_inferred`
      expect(await h.query(placeholders)).toEqual([{ n: 0 }])
      const good = await h.stageFacts(
        fact,
        USAGE,
        [
          { order_id: 1, tenant: 'acme', account: 2, ordered_at: at, amount: 1 },
          { order_id: 2, tenant: null, account: null, ordered_at: at, amount: 1 },
        ],
        { extractedAt: '2024-02-03T00:00:00Z' },
      )
      expect((await h.loadFacts(fact, good)).unknown).toEqual([
        { dimension: 'accounts', column: 'account_sk', facts: 1, inferredMembers: 1 },
      ])
      expect(await h.query(`SELECT tenant_id, account_id FROM dim_account WHERE is_inferred`)).toEqual([
        { tenant_id: 'acme', account_id: 2 },
      ])
    } finally {
      await h.dispose()
    }
  })
})
