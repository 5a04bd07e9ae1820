import { COLUMN_PRESETS } from '../../lib/config/index.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { FactSpec } from '../../lib/core/fact-spec.ts'
import { systemTimeColumnNames } from '../../lib/core/metadata-columns.ts'
import type { ChangeFeedSpec, TableSpec } from '../../lib/core/table-spec.ts'
import type { MemoryFactHarness as FactHarness } from './fact-harness-memory.ts'
import { customerReference, ORDER_COLUMNS, order, ordersFact } from './fact-specs.ts'
import { tableSpec } from './table-spec-builder.ts'

/**
 * The project `dimsync report` is tested on, one table per thing the report counts:
 * - customers (`deletes: invalidate`): 103 is deleted by absence on 1 February and comes back on 1 March;
 * - customers_nr, the same snapshots under `deletes: new_record` (a deletion version, closed by the return);
 * - feed, a sequenced change feed: a correction (South replaces North at the same change time: the version of
 *   day 5 is retired, South runs on), key 2 deleted on day 4 and back on day 6, a late event of key 3 (B on
 *   day 3, after C on day 5 was merged);
 * - accounts, a bitemporal change feed: Lyon on 1 January corrected to Lille by a later batch;
 * - orders (facts on customers, 999 unknown) and sales (facts on stores inferring members, one with no store).
 */

const CUSTOMER: readonly StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
]
const SEQUENCED: ChangeFeedSpec = {
  operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] },
  sequence: 'seq',
}
const FEED: readonly StagedColumn[] = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'seq', type: 'BIGINT' },
]
const ACCOUNT: readonly StagedColumn[] = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'account_id', type: 'BIGINT' },
  { name: 'city', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'seq', type: 'BIGINT' },
]
const STORE: readonly StagedColumn[] = [
  { name: 'store_id', type: 'BIGINT' },
  { name: 'city', type: 'VARCHAR' },
]
const SALE: readonly StagedColumn[] = [
  { name: 'sale_id', type: 'BIGINT' },
  { name: 'store_id', type: 'BIGINT' },
  { name: 'sold_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'amount', type: 'BIGINT' },
]

export const customers = tableSpec({ deletes: 'invalidate', maxDeleteShare: 1 })
export const customersNewRecord = tableSpec({
  name: 'customers_nr',
  target: 'dim_customer_nr',
  deletes: 'new_record',
  maxDeleteShare: 1,
})
export const feed = tableSpec({
  name: 'feed',
  target: 'dim_feed',
  validFrom: { kind: 'column', column: 'changed_at' },
  changes: SEQUENCED,
  deletes: 'invalidate',
})
export const accounts = tableSpec({
  name: 'accounts',
  target: 'dim_account',
  key: ['account_id'],
  validFrom: { kind: 'column', column: 'changed_at' },
  changes: SEQUENCED,
  systemTime: systemTimeColumnNames(COLUMN_PRESETS.dimsync),
})
export const stores = tableSpec({ name: 'stores', target: 'dim_store', key: ['store_id'] })
export const orders: FactSpec = ordersFact()
export const sales: FactSpec = ordersFact({
  name: 'sales',
  target: 'fact_sales',
  grain: ['sale_id'],
  eventTime: 'sold_at',
  references: [
    customerReference({
      dimension: 'stores',
      key: ['store_id'],
      surrogateKeyColumn: 'store_sk',
      alias: 'store',
      unknownMemberKey: -1,
      inferred: true,
    }),
  ],
})

export const REPORT_TABLES: readonly TableSpec[] = [customers, customersNewRecord, feed, accounts, stores]
export const REPORT_FACTS: readonly FactSpec[] = [orders, sales]

const day = (n: number) => `2024-01-${String(n).padStart(2, '0')} 00:00:00`
const change = (Op: string, customer_id: number, region: string, changedOn: number, seq: number) => ({
  Op,
  customer_id,
  region,
  changed_at: day(changedOn),
  seq,
})

/** Merges and loads the whole scenario into the harness's warehouse. */
export async function loadReportScenario(h: FactHarness): Promise<void> {
  const snapshot = (rows: [number, string][]) =>
    rows.map(([customer_id, region]) => ({ customer_id, region }))
  const snapshots: [string, [number, string][]][] = [
    [
      '2024-01-01T09:00:00Z',
      [
        [101, 'South'],
        [102, 'North'],
        [103, 'South'],
      ],
    ],
    [
      '2024-02-01T09:00:00Z',
      [
        [101, 'North'],
        [102, 'North'],
      ],
    ],
    [
      '2024-03-01T09:00:00Z',
      [
        [101, 'North'],
        [102, 'North'],
        [103, 'West'],
      ],
    ],
  ]
  for (const table of [customers, customersNewRecord])
    for (const [extractedAt, rows] of snapshots)
      await mustMerge(h, table, CUSTOMER, snapshot(rows), extractedAt)

  const feedBatches = [
    [
      change('I', 1, 'South', 1, 1),
      change('U', 1, 'North', 5, 2),
      change('I', 2, 'East', 2, 3),
      change('I', 3, 'A', 1, 4),
      change('U', 3, 'C', 5, 5),
    ],
    [change('U', 1, 'South', 5, 6), change('D', 2, 'East', 4, 7), change('U', 3, 'B', 3, 8)],
    [change('I', 2, 'North', 6, 9)],
  ]
  for (const [i, rows] of feedBatches.entries())
    await mustMerge(h, feed, FEED, rows, `2024-02-0${i + 1}T00:00:00Z`)

  const account = (Op: string, city: string, changedAt: string, seq: number) => ({
    Op,
    account_id: 1,
    city,
    changed_at: changedAt,
    seq,
  })
  await mustMerge(
    h,
    accounts,
    ACCOUNT,
    [account('I', 'Paris', '2023-12-01 00:00:00', 1), account('U', 'Lyon', '2024-01-01 00:00:00', 2)],
    '2024-02-01T00:00:00Z',
  )
  await mustMerge(
    h,
    accounts,
    ACCOUNT,
    [account('U', 'Lille', '2024-01-01 00:00:00', 3)],
    '2024-02-02T00:00:00Z',
  )

  await mustMerge(h, stores, STORE, [{ store_id: 1, city: 'Paris' }], '2024-01-01T00:00:00Z')

  const orderBatch = await h.stageFacts(
    orders,
    ORDER_COLUMNS,
    [
      order(1, 101, '2024-01-15T10:00:00Z'),
      order(2, 999, '2024-01-15T11:00:00Z'),
      order(3, 102, '2024-02-10T00:00:00Z'),
    ],
    { extractedAt: '2024-03-02T00:00:00Z' },
  )
  await mustLoad(h, orders, orderBatch)
  const sale = (sale_id: number, store_id: number | null, sold_at: string) => ({
    sale_id,
    store_id,
    sold_at,
    amount: 5,
  })
  const saleBatch = await h.stageFacts(
    sales,
    SALE,
    [
      sale(1, 1, '2024-01-20T10:00:00Z'),
      sale(2, 2, '2024-01-20T11:00:00Z'),
      sale(3, null, '2024-01-20T12:00:00Z'),
      sale(4, 1, '2024-02-05T00:00:00Z'),
    ],
    { extractedAt: '2024-03-02T00:00:00Z' },
  )
  await mustLoad(h, sales, saleBatch)
}

async function mustMerge(
  h: FactHarness,
  table: TableSpec,
  columns: readonly StagedColumn[],
  rows: readonly Record<string, string | number | null>[],
  extractedAt: string,
): Promise<void> {
  const result = await h.mergeDimension(table, columns, rows, { extractedAt })
  if (result.status !== 'merged') throw new Error(`${table.name}: batch of ${extractedAt} ${result.status}`)
}

async function mustLoad(h: FactHarness, fact: FactSpec, batchId: string): Promise<void> {
  const result = await h.loadFacts(fact, batchId)
  if (result.status !== 'loaded') throw new Error(`${fact.name}: batch ${batchId} ${result.status}`)
}
