import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
 * A dimension bent by an older dimsync (a key with two current versions: a `key` edit did it before it was refused)
 * holds two versions of that key valid at the same instant. A fact at such an instant would join to both and be
 * stored twice, so the fact batch is refused, naming the fact and the key, and nothing is written; once the
 * dimension is repaired (docs/errors.md) it loads one row per fact.
 */

const customers = tableSpec(BY_CHANGE_TIME)
const fact = ordersFact()

let zeta: ZetaSqlService
beforeAll(async () => {
  zeta = await ZetaSqlService.start()
})
afterAll(async () => {
  await zeta?.stop()
})

const harnesses = {
  DuckDB: () => FactHarness.duckdb([customers]),
  PostgreSQL: () => FactHarness.postgres([customers]),
  'BigQuery (emulator)': () => FactHarness.bigquery(zeta, [customers]),
}

describe.each(Object.entries(harnesses))('facts of a bent dimension on %s', (_name, open) => {
  it('a fact at a time two versions of its key cover is refused naming it and the key; nothing is written; after the repair each fact is stored once', async () => {
    const h = await open()
    try {
      const at = (day: string) => `2024-${day}T00:00:00Z`
      await h.mergeDimension(
        customers,
        CUSTOMER_CHANGE_COLUMNS,
        [
          { customer_id: 101, region: 'South', changed_at: at('01-01') },
          { customer_id: 101, region: 'North', changed_at: at('03-01') },
          { customer_id: 102, region: 'Coast', changed_at: at('01-01') },
        ],
        { extractedAt: at('03-02') },
      )
      const dim = h.t('dim_customer')
      await h.query(
        `UPDATE ${dim} SET valid_to = NULL, is_current = TRUE WHERE region = 'South' AND customer_id = 101`,
      )
      const facts = async () =>
        (
          await h.query(
            `SELECT f.order_id, v.region FROM ${h.t('fact_orders')} f\n` +
              `JOIN ${dim} v ON v.dimsync_sk = f.customer_sk ORDER BY f.order_id, v.region`,
          )
        ).map((r) => [Number(r.order_id), String(r.region)])
      await h.loadFacts(
        fact,
        await h.stageFacts(fact, ORDER_COLUMNS, [order(1, 102, at('02-10'))], { extractedAt: at('03-03') }),
      )

      const batchId = await h.stageFacts(
        fact,
        ORDER_COLUMNS,
        [order(2, 101, at('02-10')), order(3, 101, at('03-10')), order(4, 102, at('03-10'))],
        { extractedAt: at('03-11') },
      )
      await expect(h.loadFacts(fact, batchId)).rejects.toThrow(
        `fact orders: batch ${batchId} has 1 fact whose customer matches more than one version of customers valid at ` +
          `its time (the dimension was bent before dimsync checked it; repair it as docs/errors.md says, then run ` +
          `again), for example: order_id=3 (customer_id=101, 2 versions); nothing was written`,
      )
      expect(await facts()).toEqual([[1, 'Coast']])

      await h.query(
        `UPDATE ${dim} SET valid_to = TIMESTAMP '2024-03-01 00:00:00', is_current = FALSE ` +
          `WHERE region = 'South' AND customer_id = 101`,
      )
      await h.loadFacts(fact, batchId)
      expect(await facts()).toEqual([
        [1, 'Coast'],
        [2, 'South'],
        [3, 'North'],
        [4, 'Coast'],
      ])
    } finally {
      await h.dispose()
    }
  }, 120_000)
})
