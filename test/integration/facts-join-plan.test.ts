import { afterEach, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { FactHarness } from '../support/fact-harness.ts'
import { customerReference, ordersFact } from '../support/fact-specs.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const customers = tableSpec()
const ORDER: StagedColumn[] = [
  { name: 'order_id', type: 'BIGINT' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'ordered_at', type: 'TIMESTAMP WITH TIME ZONE' },
]
const orders = ordersFact({ measures: [], references: [customerReference({ keepNaturalKey: true })] })

let h: FactHarness | undefined
afterEach(async () => {
  await h?.dispose()
  h = undefined
})

/**
 * The join of facts to the version true at their time must be a hash join on the key (the window test a filter
 * on its matches): an open end written `valid_to IS NULL OR valid_to > t` makes DuckDB plan a nested-loop join,
 * every fact against every version (10M facts × 10M versions never finishes).
 */
describe('the fact load joins facts to versions by hashing the key, on DuckDB', () => {
  it.each([null, '9999-12-31T23:59:59Z'])('open end %s: the load and the re-pointing', async (openEnd) => {
    const dimension = { ...customers, openEnd }
    h = await FactHarness.duckdb([dimension])
    await h.mergeDimension(
      dimension,
      [
        { name: 'customer_id', type: 'BIGINT' },
        { name: 'name', type: 'VARCHAR' },
      ],
      [{ customer_id: 1, name: 'Ana' }],
      {
        extractedAt: '2024-01-01T00:00:00Z',
      },
    )
    const batch = await h.stageFacts(
      orders,
      ORDER,
      [{ order_id: 1, customer_id: 1, ordered_at: '2024-02-01T00:00:00Z' }],
      {
        extractedAt: '2024-02-02T00:00:00Z',
      },
    )
    const { statements } = await h.loadFacts(orders, batch)
    const insert = statements.find(
      (s) => s.label === 'insert facts keyed to the versions true at their event time',
    )!
    await h.query(
      `CREATE OR REPLACE TEMP VIEW __dimsync_stage AS SELECT 1::BIGINT AS order_id, 1::BIGINT AS customer_id, TIMESTAMPTZ '2024-02-01 00:00:00+00' AS ordered_at`,
    )
    const plan = async (sql: string) =>
      (await h!.query(`EXPLAIN ${sql}`)).map((r) => String(r.explain_value)).join('\n')
    const loadPlan = await plan(insert.sql)
    expect(loadPlan).toContain('HASH_JOIN')
    expect(loadPlan).not.toMatch(/NL_JOIN|NESTED_LOOP/)
    const { renderFactRepoint } = await import('../../lib/sql/render-fact-repoint.ts')
    const { resolveFactReferences } = await import('../../lib/core/fact-layout.ts')
    const columns = await h.warehouse.describeTable({ schema: 'main', name: 'dim_customer' })
    const [reference] = resolveFactReferences(orders, [{ table: dimension, columns }])
    const repointPlan = await plan(renderFactRepoint(h.warehouse.dialect, orders, reference!, 'main').update)
    expect(repointPlan).toContain('HASH_JOIN')
    expect(repointPlan).not.toMatch(/NL_JOIN|NESTED_LOOP/)
  })
})
