import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import type { FactSpec } from '../../../lib/core/fact-spec.ts'
import type { DeletePolicy } from '../../../lib/core/table-spec.ts'
import {
  CAPTURE_COLUMNS,
  captureModel,
  captureRow,
  captureScenarioArb,
  captureTable,
} from '../../support/history-arbitraries.ts'
import { iso, SENTINEL } from '../../support/history-checks.ts'
import { expectedHistory } from '../../support/history-model.ts'
import { repointFacts } from '../../../lib/use-cases/repoint-facts.ts'
import { FactHarness } from '../../support/fact-harness.ts'

const ORDER: StagedColumn[] = [
  { name: 'order_id', type: 'BIGINT' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'ordered_at', type: 'TIMESTAMP' },
  { name: 'amount', type: 'BIGINT' },
]
const UNKNOWN = -1

const orders: FactSpec = {
  name: 'orders',
  source: { type: 'file', path: 'orders.csv', format: 'csv', csv: { delimiter: ',', header: true } },
  target: 'fact_orders',
  extract: { mode: 'incremental', cursor: 'ordered_at', lookbackMinutes: 0 },
  grain: ['order_id'],
  eventTime: 'ordered_at',
  measures: ['amount'],
  references: [
    {
      dimension: 'customers',
      key: ['customer_id'],
      surrogateKeyColumn: 'customer_sk',
      alias: 'customer',
      unknownMemberKey: UNKNOWN,
      keepNaturalKey: true,
    },
  ],
}

interface Order {
  readonly key: number | null
  /** Hours after the base time, in half hours: whole hours fall exactly on version boundaries. */
  readonly t: number
}

/** Orders of known keys (1-4), a key never seen (5) and no key, at times before, inside and after history. */
const ordersArb: fc.Arbitrary<Order[]> = fc.array(
  fc.record({
    key: fc.constantFrom(1, 2, 3, 4, 5, null),
    t: fc.integer({ min: -2, max: 90 }).map((n) => n / 2),
  }),
  { minLength: 1, maxLength: 30 },
)

/** Every fact points at the sk of the live model version of its key valid at its time, else at the unknown member. */
async function expectFactsAtTheirVersions(
  h: FactHarness,
  events: Parameters<typeof captureModel>[0],
  facts: readonly Order[],
  policy: DeletePolicy,
): Promise<void> {
  const versions = await h.query(
    `SELECT dimsync_sk, customer_id, CAST(valid_from AS VARCHAR) AS valid_from FROM dim_customer WHERE customer_id IS NOT NULL`,
  )
  const skOf = new Map(
    versions.map((v) => [`${v.customer_id}@${Date.parse(`${v.valid_from}Z`)}`, v.dimsync_sk]),
  )
  const model = expectedHistory(captureModel(events), policy)
  const expected = facts.map((f, i) => {
    const v = model.find(
      (m) => m.key === f.key && !m.deleted && m.from <= f.t && (m.to === null || f.t < m.to),
    )
    const sk = v === undefined ? UNKNOWN : skOf.get(`${v.key}@${Date.parse(iso(v.from))}`)
    return [i + 1, sk]
  })
  const stored = await h.query(`SELECT order_id, customer_sk FROM fact_orders ORDER BY order_id`)
  expect(stored.map((r) => [r.order_id, r.customer_sk])).toEqual(expected)
  expect(expected.every(([, sk]) => sk !== undefined)).toBe(true)
}

const orderRows = (facts: readonly Order[]) =>
  facts.map((f, i) => ({ order_id: i + 1, customer_id: f.key, ordered_at: iso(f.t), amount: i }))

describe.each<[DeletePolicy, string | null]>([
  ['invalidate', null],
  ['new_record', SENTINEL],
])('fact properties, deletes=%s, open end %s (real DuckDB)', (policy, openEnd) => {
  it('every fact points at the live version of its key whose window contains its event time, else at the unknown member', async () => {
    await fc.assert(
      fc.asyncProperty(captureScenarioArb, ordersArb, async ({ events, batches }, facts) => {
        const customers = captureTable(policy, openEnd)
        const h = await FactHarness.duckdb([customers])
        try {
          // Dimension batches in any order (late events included), one merged twice.
          for (const [i, batch] of batches.entries())
            await h.mergeDimension(customers, CAPTURE_COLUMNS, batch.map(captureRow), {
              extractedAt: iso(100 + i),
              mode: 'incremental',
            })
          const rows = facts.map((f, i) => ({
            order_id: i + 1,
            customer_id: f.key,
            ordered_at: iso(f.t),
            amount: i,
          }))
          await h.loadFacts(orders, await h.stageFacts(orders, ORDER, rows, { extractedAt: iso(200) }))

          await expectFactsAtTheirVersions(h, events, facts, policy)
        } finally {
          await h.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 5), endOnFailure: true },
    )
    // Each run merges several batches into a fresh DuckDB: about a second each on a quiet machine.
  }, 240_000)

  it('facts loaded between dimension batches (late events after them) point right once re-pointed', async () => {
    let repointed = 0
    await fc.assert(
      fc.asyncProperty(captureScenarioArb, ordersArb, async ({ events, batches }, facts) => {
        const customers = captureTable(policy, openEnd)
        const h = await FactHarness.duckdb([customers])
        try {
          // Facts in slices, each loaded after one dimension batch: later (late) batches change what they meet.
          const rows = orderRows(facts)
          const slice = Math.ceil(rows.length / batches.length)
          for (const [i, batch] of batches.entries()) {
            await h.mergeDimension(customers, CAPTURE_COLUMNS, batch.map(captureRow), {
              extractedAt: iso(100 + i),
              mode: 'incremental',
            })
            const part = rows.slice(i * slice, (i + 1) * slice)
            if (part.length > 0)
              await h.loadFacts(
                orders,
                await h.stageFacts(orders, ORDER, part, { extractedAt: iso(150 + i) }),
              )
          }
          const moved = await repointFacts(
            { warehouse: h.warehouse },
            { fact: orders, dimensions: [customers], schema: 'main' },
          )
          repointed += moved[0]!.facts
          await expectFactsAtTheirVersions(h, events, facts, policy)
        } finally {
          await h.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 5), endOnFailure: true },
    )
    // Re-pointing must actually have been needed in some runs.
    expect(repointed).toBeGreaterThan(0)
  }, 240_000)
})
