import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { DeletePolicy } from '../../../lib/core/table-spec.ts'
import { expectedAsOf, expectedHistory, feedCaptures, type FeedEvent } from '../../support/history-model.ts'
import {
  actual,
  assertInvariants,
  iso,
  SENTINEL,
  shuffle,
  withOpenEndAsNull,
} from '../../support/history-checks.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

const COLUMNS = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'tier', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'seq', type: 'INTEGER' },
]

/**
 * Change feeds of a few keys: several events per key, deletes, values from a tiny domain so equal states recur;
 * with a sequence, several events of a key share a time. Each (key, time[, sequence]) occurs once.
 */
function feedArb(sequenced: boolean) {
  return fc
    .array(
      fc.record({
        key: fc.integer({ min: 1, max: 3 }),
        t: fc.integer({ min: 0, max: 12 }),
        seq: fc.integer({ min: 0, max: sequenced ? 2 : 0 }),
        op: fc.constantFrom<FeedEvent['op']>('I', 'U', 'U', 'D'),
        region: fc.constantFrom('South', 'North', null),
        tier: fc.constantFrom('gold', null),
      }),
      { minLength: 1, maxLength: 20 },
    )
    .map((raw) => {
      const seen = new Set<string>()
      return raw
        .filter((e) => !seen.has(`${e.key}@${e.t}@${e.seq}`) && seen.add(`${e.key}@${e.t}@${e.seq}`))
        .map((e): FeedEvent => ({
          key: e.key,
          t: e.t,
          ...(sequenced ? { seq: e.seq } : {}),
          op: e.op,
          attrs: { region: e.region, tier: e.tier },
        }))
    })
}

/**
 * The feed split into batches (several events of a key may share one), the batches shuffled; then one batch
 * merged again under its id, and the events of the first two batches re-delivered as a new batch.
 */
function scenarioArb(sequenced: boolean) {
  return feedArb(sequenced).chain((events) =>
    fc
      .tuple(
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: events.length, maxLength: events.length }),
        fc.integer({ min: 0, max: 1_000_000 }),
      )
      .map(([assignment, seed]) => {
        const batches: FeedEvent[][] = [[], [], [], []]
        events.forEach((e, i) => batches[assignment[i]!]!.push(e))
        const order = shuffle(
          batches.filter((b) => b.length > 0),
          seed,
        )
        const redelivered = [...order[0]!, ...(order[1] ?? [])]
        return { events, batches: [...order, order[seed % order.length]!, redelivered] }
      }),
  )
}

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
          const table = tableSpec({
            extract: { mode: 'full' },
            validFrom: { kind: 'column', column: 'changed_at' },
            changes: {
              operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] },
              ...(sequenced ? { sequence: 'seq' } : {}),
            },
            deletes: policy,
            openEnd,
          })
          const h = await ScdHarness.create(table, COLUMNS)
          try {
            const keyOfSk = new Map<number, number>()
            const stagedIds = new Map<FeedEvent[], string>()
            let applied: FeedEvent[] = []
            for (const [i, batch] of batches.entries()) {
              let batchId = stagedIds.get(batch)
              if (batchId === undefined) {
                batchId = await h.stage(
                  batch.map((e) => ({
                    Op: e.op,
                    customer_id: e.key,
                    region: e.attrs.region ?? null,
                    tier: e.attrs.tier ?? null,
                    changed_at: iso(e.t),
                    seq: e.seq ?? 0,
                  })),
                  { extractedAt: iso(100 + i) },
                )
                stagedIds.set(batch, batchId)
                applied = [...applied, ...batch]
              }
              const result = await h.merge(batchId)
              if ((result.counts?.lateKeys ?? 0) > 0) lateMerges++
              const stored = await h.history()
              if (openEnd !== null) expect(stored.filter((r) => r.valid_to === null)).toEqual([])
              const rows = withOpenEndAsNull(stored)
              assertInvariants(rows)
              // Invariant 5: a surrogate key always belongs to the same key and is never given out twice (a
              // version a correction replaced is retired with its key).
              const retired = sequenced
                ? await h.query('SELECT dimsync_sk FROM dim_customer_dimsync_retired')
                : []
              const live = new Set(rows.map((r) => Number(r.dimsync_sk)))
              for (const r of retired)
                expect(live.has(Number(r.dimsync_sk)), 'a retired key is not reused').toBe(false)
              for (const r of rows) {
                const before = keyOfSk.get(Number(r.dimsync_sk))
                if (before !== undefined) expect(Number(r.customer_id)).toBe(before)
                keyOfSk.set(Number(r.dimsync_sk), Number(r.customer_id))
              }
              expect(live.size + retired.length, 'no version disappears unless retired').toBe(keyOfSk.size)
              expect(actual(rows)).toEqual(expectedHistory(feedCaptures(applied, policy), policy))
            }
            for (const t of [0, 3, 6, 9, 12]) {
              const rows = await h.query(`SELECT * FROM dim_customer_as_of('${iso(t)}') ORDER BY customer_id`)
              const expected = expectedAsOf(feedCaptures(events, policy), policy, t)
              expect(rows.map((r) => [Number(r.customer_id), r.region, r.tier])).toEqual(
                [...expected.values()]
                  .sort((a, b) => a.key - b.key)
                  .map((e) => [e.key, e.attrs!.region, e.attrs!.tier]),
              )
            }
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
