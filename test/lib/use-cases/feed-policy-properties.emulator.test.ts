import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BothWarehouses } from '../../support/both-warehouses.ts'
import {
  expectedFeedPolicyRows,
  FEED_POLICY_COLUMNS,
  FEED_POLICY_ROWS_SQL,
  feedPolicyRow,
  feedPolicyScenarioArb,
  feedPolicyTable,
  storedFeedPolicyRows,
  type FeedPolicyCase,
} from '../../support/feed-policy-model.ts'
import { iso } from '../../support/history-checks.ts'
import type { FeedEvent } from '../../support/history-model.ts'
import { propertySeed } from '../../support/property-seed.ts'

/**
 * The cases of feed-policy-properties.test.ts on both warehouses: a few runs with a fixed seed (the reference
 * implementation behind the emulator is slow), each batch merged into DuckDB and the BigQuery emulator. Both must
 * report the same outcome for every merge and hold the same rows at the end, and DuckDB's rows must be the
 * model's, so BigQuery's are too.
 */
const RUNS = Number(process.env.DIMSYNC_EMULATOR_PROPERTY_RUNS ?? 2)
const SEED = propertySeed(20_261_204)

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const CASES: FeedPolicyCase[] = [
  { kind: 'type1', deletes: 'new_record', sequenced: true },
  { kind: 'partial', deletes: 'invalidate', sequenced: true },
  { kind: 'mirror', deletes: 'invalidate', sequenced: true },
]

describe.each(CASES)(
  '$kind on a change feed, deletes=$deletes, sequenced $sequenced (both warehouses)',
  (c) => {
    it('the dimension holds what the merged events mean, the same on both', async () => {
      await fc.assert(
        fc.asyncProperty(feedPolicyScenarioArb(c.sequenced), async ({ events, batches }) => {
          const dimension = await both.open(feedPolicyTable(c), FEED_POLICY_COLUMNS)
          try {
            const staged = new Map<FeedEvent[], string>()
            for (const [i, batch] of batches.entries()) {
              let batchId = staged.get(batch)
              if (batchId === undefined) {
                batchId = await dimension.stage(batch.map(feedPolicyRow), { extractedAt: iso(100 + i) })
                staged.set(batch, batchId)
              }
              const outcome = await dimension.merge(batchId)
              expect('error' in outcome.duckdb ? outcome.duckdb : undefined, `batch ${i + 1}`).toBeUndefined()
              expect(outcome.bigquery, `batch ${i + 1}: the same outcome on BigQuery`).toEqual(outcome.duckdb)
            }
            const rows = await dimension.warehouses.duckdb.query(FEED_POLICY_ROWS_SQL)
            expect(storedFeedPolicyRows(rows)).toEqual(expectedFeedPolicyRows(c, events))
            const held = await dimension.holdings([iso(1), iso(4)])
            expect(held.bigquery, 'the same rows on BigQuery').toEqual(held.duckdb)
          } finally {
            await dimension.close()
          }
        }),
        // No shrinking on the emulator (each step merges every batch again there): the DuckDB file shrinks.
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      )
    }, 300_000)
  },
)
