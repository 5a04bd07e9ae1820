import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { DeletePolicy, TableSpec } from '../../../lib/core/table-spec.ts'
import { expectedHistory, feedCaptures, type FeedEvent } from '../../support/history-model.ts'
import { actual, assertInvariants, iso } from '../../support/history-checks.ts'
import { batchesArb, FEED_COLUMNS, feedArb, feedRow } from '../../support/history-arbitraries.ts'
import type { Value } from '../../support/staged-batches.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/**
 * Truncates in a change feed (ops.truncate) against a model of their documented meaning: a truncate at (T, seq)
 * is a delete event at (T, seq) of every key with an event at or before T, whichever batch brought the key's
 * events, before or after the truncate's. Random feeds with truncates, split into batches merged in any order (a
 * batch merged again, and events re-delivered), on real DuckDB; after every batch the dimension holds the model's
 * history of what was merged so far. The same rendering runs on BigQuery (change-feed-truncates.emulator.test.ts).
 */

interface Truncate {
  readonly truncate: true
  readonly t: number
  readonly seq?: number
}
type FeedItem = FeedEvent | Truncate

const isTruncate = (item: FeedItem): item is Truncate => 'truncate' in item

function truncateTable(deletes: DeletePolicy, sequenced: boolean): TableSpec {
  return tableSpec({
    extract: { mode: 'full' },
    validFrom: { kind: 'column', column: 'changed_at' },
    changes: {
      operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'], truncate: ['T'] },
      ...(sequenced ? { sequence: 'seq' } : {}),
    },
    deletes,
  })
}

const itemRow = (item: FeedItem): Record<string, Value> =>
  isTruncate(item)
    ? { Op: 'T', customer_id: null, region: null, tier: null, changed_at: iso(item.t), seq: item.seq ?? 0 }
    : feedRow(item)

/** The model's events: each truncate becomes a delete of every key with an event at or before its time. */
function withTruncateDeletes(items: readonly FeedItem[]): FeedEvent[] {
  const events = items.filter((i): i is FeedEvent => !isTruncate(i))
  const deletes = items.filter(isTruncate).flatMap((tr) =>
    [...new Set(events.filter((e) => e.t <= tr.t).map((e) => e.key))].map((key): FeedEvent => ({
      key,
      t: tr.t,
      ...(tr.seq === undefined ? {} : { seq: tr.seq }),
      op: 'D',
      attrs: {},
    })),
  )
  return [...events, ...deletes]
}

/**
 * A feed with one to three truncates. Unsequenced, no event shares a truncate's time (which of the two came first
 * would be undefined); sequenced, a truncate's sequence differs from those of the events at its time.
 */
function itemsArb(sequenced: boolean): fc.Arbitrary<FeedItem[]> {
  return fc
    .tuple(
      feedArb(sequenced),
      fc.uniqueArray(fc.integer({ min: 0, max: 12 }), { minLength: 1, maxLength: 3 }),
      fc.integer({ min: 0, max: 3 }),
    )
    .map(([events, times, seq]) => {
      const truncates = times.map((t): Truncate => ({
        truncate: true,
        t,
        ...(sequenced ? { seq: seq + 10 * (t % 2) - 3 } : {}),
      }))
      const kept = events.filter((e) =>
        truncates.every((tr) => e.t !== tr.t || (sequenced && e.seq !== tr.seq)),
      )
      return [...kept, ...truncates]
    })
}

describe.each<[DeletePolicy, boolean]>([
  ['invalidate', false],
  ['invalidate', true],
  ['new_record', true],
])('truncates in a change feed, deletes=%s, sequenced %s (real DuckDB)', (policy, sequenced) => {
  it('any split and order of batches gives the history of the events with each truncate as a delete of every key known at it', async () => {
    await fc.assert(
      fc.asyncProperty(
        itemsArb(sequenced).chain((items) =>
          batchesArb(items).map((order) => ({ items, batches: [...order, order[0]!] })),
        ),
        async ({ batches }) => {
          const h = await ScdHarness.create(truncateTable(policy, sequenced), FEED_COLUMNS)
          try {
            const staged = new Map<FeedItem[], string>()
            let merged: FeedItem[] = []
            for (const [i, batch] of batches.entries()) {
              let batchId = staged.get(batch)
              if (batchId === undefined) {
                batchId = await h.stage(batch.map(itemRow), { extractedAt: iso(100 + i) })
                staged.set(batch, batchId)
                merged = [...merged, ...batch]
              }
              await h.merge(batchId)
              const rows = await h.history()
              assertInvariants(rows)
              expect(actual(rows), `after batch ${i + 1}`).toEqual(
                expectedHistory(feedCaptures(withTruncateDeletes(merged), policy), policy),
              )
            }
          } finally {
            await h.dispose()
          }
        },
      ),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 10) },
    )
  }, 300_000)
})
