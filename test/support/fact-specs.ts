import type { StagedColumn } from '../../lib/core/batch.ts'
import type { FactReference, FactSpec } from '../../lib/core/fact-spec.ts'

/**
 * The fact tables the fact tests load: orders (one per order_id, at ordered_at, with an amount) referencing the
 * customers dimension by customer_id. Each test states only what differs.
 */

/** Staged columns of an order batch. */
export const ORDER_COLUMNS: readonly StagedColumn[] = Object.freeze([
  { name: 'order_id', type: 'BIGINT' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'ordered_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'amount', type: 'BIGINT' },
])

/** The reference of an order to the customers dimension (surrogate key column customer_sk, unknown member 0). */
export function customerReference(overrides: Partial<FactReference> = {}): FactReference {
  return {
    dimension: 'customers',
    key: ['customer_id'],
    surrogateKeyColumn: 'customer_sk',
    alias: 'customer',
    unknownMemberKey: 0,
    keepNaturalKey: false,
    inferred: false,
    ...overrides,
  }
}

/** Orders read incrementally from a CSV file by ordered_at, into fact_orders. */
export function ordersFact(overrides: Partial<FactSpec> = {}): FactSpec {
  return {
    name: 'orders',
    source: { type: 'file', path: 'orders.csv', format: 'csv', csv: { delimiter: ',', header: true } },
    target: 'fact_orders',
    extract: { mode: 'incremental', cursor: 'ordered_at', lookbackMinutes: 0 },
    grain: ['order_id'],
    eventTime: 'ordered_at',
    measures: ['amount'],
    references: [customerReference()],
    ...overrides,
  }
}

/** One staged order row. */
export const order = (
  order_id: number,
  customer_id: number | null,
  ordered_at: string | null,
  amount = 10,
) => ({
  order_id,
  customer_id,
  ordered_at,
  amount,
})

/** Staged columns of a customers batch whose rows carry the time of their change. */
export const CUSTOMER_CHANGE_COLUMNS: readonly StagedColumn[] = Object.freeze([
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
])

/** The table fields of a customers dimension read incrementally by changed_at, its versions starting then. */
export const BY_CHANGE_TIME = Object.freeze({
  extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
  validFrom: { kind: 'column', column: 'changed_at' },
} as const)
