import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import type { ColumnSelection } from '../../../lib/core/table-spec.ts'
import { expectedHistory, type FeedEvent, type ModelEvent } from '../../support/history-model.ts'
import { actual, assertInvariants, iso } from '../../support/history-checks.ts'
import { FEED_COLUMNS, batchesArb, feedArb, feedRow, feedTable } from '../../support/history-arbitraries.ts'
import { ScdHarness } from '../../support/scd-harness.ts'

/**
 * Partial updates (`ignore_null_updates`) on a change feed against the in-memory model: in the ignored columns a
 * NULL means "unchanged", so each event is first folded into its key's state (the newest non-NULL value of the
 * earlier events, the state starting again after a delete), then the folded states are the captures of the
 * ordinary history model. The feed is split into batches (several events of a key per batch) merged in any order,
 * each twice: a late event folds into the state at its own time and the later versions of its key follow, so after
 * every batch the history is that of the merged events folded in time order.
 */

/** The captures a partial feed means, folded in time order per key (ignored columns keep the last non-NULL). */
function foldedCaptures(events: readonly FeedEvent[], ignored: readonly ('region' | 'tier')[]): ModelEvent[] {
  const byKey = new Map<number, FeedEvent[]>()
  for (const e of events) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e])
  const captures: ModelEvent[] = []
  for (const [key, list] of byKey) {
    let state: Record<string, string | null> | undefined
    for (const e of [...list].sort((a, b) => a.t - b.t)) {
      if (e.op === 'D') {
        captures.push({ key, t: e.t })
        state = undefined
        continue
      }
      const next: Record<string, string | null> = { ...e.attrs }
      for (const column of ignored) {
        if (next[column] === null && state !== undefined) next[column] = state[column] ?? null
      }
      captures.push({ key, t: e.t, attrs: next })
      state = next
    }
  }
  return captures
}

/** The feed split into at most 4 batches, each event in one, the batches in any order. */
const scenarioArb = feedArb(false).chain((events) => batchesArb(events).map((batches) => ({ batches })))

describe.each<[string, ColumnSelection, ('region' | 'tier')[]]>([
  ['[region]', { kind: 'list', columns: ['region'] }, ['region']],
  ['all', { kind: 'all' }, ['region', 'tier']],
  ['{ except: [region] }', { kind: 'all_except', columns: ['region'] }, ['tier']],
])(
  'partial updates on a change feed, ignore_null_updates: %s (real DuckDB)',
  (_name, ignoreNulls, ignored) => {
    it('batches in any order, each merged twice, give the history of the merged events folded in time order', async () => {
      let folded = 0
      let late = 0
      await fc.assert(
        fc.asyncProperty(scenarioArb, async ({ batches }) => {
          const table = { ...feedTable('invalidate', false, null), partialUpdates: { ignoreNulls } }
          const h = await ScdHarness.create(table, FEED_COLUMNS)
          try {
            let applied: FeedEvent[] = []
            for (const [i, batch] of batches.entries()) {
              const batchId = await h.stage(batch.map(feedRow), { extractedAt: iso(100 + i) })
              if (batch.some((e) => applied.some((a) => a.key === e.key && a.t > e.t))) late++
              await h.merge(batchId)
              const again = await h.merge(batchId)
              expect(again.status).toBe('already-applied')
              applied = [...applied, ...batch]
              const rows = await h.history()
              assertInvariants(rows)
              const captures = foldedCaptures(applied, ignored)
              // The scenario exercised the folding: a NULL of an ignored column took an earlier value.
              if (
                captures.some((c) =>
                  ignored.some(
                    (col) =>
                      c.attrs?.[col] !== undefined &&
                      c.attrs[col] !== null &&
                      applied.find((e) => e.key === c.key && e.t === c.t)?.attrs[col] === null,
                  ),
                )
              )
                folded++
              expect(actual(rows)).toEqual(expectedHistory(captures, 'invalidate'))
            }
          } finally {
            await h.dispose()
          }
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 20), seed: 4242 },
      )
      expect(folded).toBeGreaterThan(0)
      expect(late).toBeGreaterThan(0)
    }, 300_000)
  },
)
