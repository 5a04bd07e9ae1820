import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { DeletePolicy } from '../../../lib/core/table-spec.ts'
import { expectedHistory, feedCaptures, type FeedEvent } from '../../support/history-model.ts'
import {
  actual,
  assertInvariants,
  expectAsOfMatchesModel,
  iso,
  SENTINEL,
  withOpenEndAsNull,
} from '../../support/history-checks.ts'
import {
  FEED_COLUMNS as COLUMNS,
  feedRow,
  feedScenarioArb as scenarioArb,
  feedTable,
} from '../../support/history-arbitraries.ts'
import { ScdHarness } from '../../support/scd-harness.ts'

describe.each<[DeletePolicy, boolean, string | null]>([
  ['invalidate', true, null],
  ['new_record', true, SENTINEL],
  ['ignore', true, null],
  ['new_record', false, null],
])(
  'change feed properties, deletes=%s, sequenced %s, open end %s (real DuckDB)',
  (policy, sequenced, openEnd) => {
    it('any split and order of batches, re-deliveries included, gives the history of the events in time order', async () => {
      let lateMerges = 0
      await fc.assert(
        fc.asyncProperty(scenarioArb(sequenced), async ({ events, batches }) => {
          const h = await ScdHarness.create(feedTable(policy, sequenced, openEnd), COLUMNS)
          try {
            const keyOfSk = new Map<number, number>()
            const stagedIds = new Map<FeedEvent[], string>()
            let applied: FeedEvent[] = []
            for (const [i, batch] of batches.entries()) {
              let batchId = stagedIds.get(batch)
              if (batchId === undefined) {
                batchId = await h.stage(batch.map(feedRow), { extractedAt: iso(100 + i) })
                stagedIds.set(batch, batchId)
                applied = [...applied, ...batch]
              }
              // Every other batch numbers its new keys per bucket of two rows (as BigQuery
              // numbers a batch larger than a bucket); new keys are above every key given out before.
              const highestBefore = Math.max(0, ...keyOfSk.keys())
              const result = await h.merge(batchId, i % 2 === 0 ? { rowsPerKeyBucket: 2 } : {})
              if ((result.counts?.lateKeys ?? 0) > 0) lateMerges++
              const stored = await h.history()
              if (openEnd !== null) expect(stored.filter((r) => r.valid_to === null)).toEqual([])
              const rows = withOpenEndAsNull(stored)
              assertInvariants(rows)
              // Invariant 5 (docs/invariants.md): a surrogate key always belongs to the same key and is never given out twice (a
              // version a correction replaced is retired with its key).
              const retired = sequenced
                ? await h.query('SELECT dimsync_sk FROM dim_customer_dimsync_retired')
                : []
              const live = new Set(rows.map((r) => Number(r.dimsync_sk)))
              for (const r of retired)
                expect(live.has(Number(r.dimsync_sk)), 'a retired key is not reused').toBe(false)
              const given = [...live].filter((sk) => !keyOfSk.has(sk))
              expect(
                given.filter((sk) => sk <= highestBefore),
                'new keys are above every earlier key',
              ).toEqual([])
              for (const r of rows) {
                const before = keyOfSk.get(Number(r.dimsync_sk))
                if (before !== undefined) expect(Number(r.customer_id)).toBe(before)
                keyOfSk.set(Number(r.dimsync_sk), Number(r.customer_id))
              }
              expect(live.size + retired.length, 'no version disappears unless retired').toBe(keyOfSk.size)
              expect(actual(rows)).toEqual(expectedHistory(feedCaptures(applied, policy), policy))
            }
            await expectAsOfMatchesModel(
              (sql) => h.query(sql),
              feedCaptures(events, policy),
              policy,
              [0, 3, 6, 9, 12],
            )
          } finally {
            await h.dispose()
          }
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 20) },
      )
      expect(lateMerges).toBeGreaterThan(0)
    }, 300_000)
  },
)
