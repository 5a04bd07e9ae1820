import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
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
import { ScdHarness } from '../../support/scd-harness.ts'

/**
 * Type 1 columns, partial updates and mirror tables on change feeds against the documented rules
 * (feed-policy-model.ts), on real DuckDB: any split and order of batches, late events, deletes, sequenced
 * corrections and re-deliveries; after every batch the dimension holds what the merged events mean. The same
 * cases run on the BigQuery emulator in feed-policy-properties.emulator.test.ts.
 */
const CASES: FeedPolicyCase[] = [
  { kind: 'type1', deletes: 'new_record', sequenced: true },
  { kind: 'type1', deletes: 'invalidate', sequenced: false },
  { kind: 'type1', deletes: 'ignore', sequenced: true },
  { kind: 'partial', deletes: 'invalidate', sequenced: true },
  { kind: 'partial', deletes: 'new_record', sequenced: false },
  { kind: 'mirror', deletes: 'invalidate', sequenced: true },
  { kind: 'mirror', deletes: 'ignore', sequenced: false },
]

describe.each(CASES)('$kind on a change feed, deletes=$deletes, sequenced $sequenced (real DuckDB)', (c) => {
  it('after every batch the dimension holds what the merged events mean', async () => {
    await fc.assert(
      fc.asyncProperty(feedPolicyScenarioArb(c.sequenced), async ({ batches }) => {
        const h = await ScdHarness.create(feedPolicyTable(c), FEED_POLICY_COLUMNS)
        try {
          const staged = new Map<FeedEvent[], string>()
          let merged: FeedEvent[] = []
          for (const [i, batch] of batches.entries()) {
            let batchId = staged.get(batch)
            if (batchId === undefined) {
              batchId = await h.stage(batch.map(feedPolicyRow), { extractedAt: iso(100 + i) })
              staged.set(batch, batchId)
              merged = [...merged, ...batch]
            }
            await h.merge(batchId)
            expect(storedFeedPolicyRows(await h.query(FEED_POLICY_ROWS_SQL)), `after batch ${i + 1}`).toEqual(
              expectedFeedPolicyRows(c, merged),
            )
          }
        } finally {
          await h.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 10) },
    )
  }, 300_000)
})
