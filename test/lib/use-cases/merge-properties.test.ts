import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { DeletePolicy } from '../../../lib/core/table-spec.ts'
import { expectedHistory, type ModelEvent } from '../../support/history-model.ts'
import {
  actual,
  assertInvariants,
  expectAsOfMatchesModel,
  iso,
  SENTINEL,
  withOpenEndAsNull,
} from '../../support/history-checks.ts'
import {
  CAPTURE_COLUMNS as COLUMNS,
  captureModel as toModel,
  captureRow,
  captureScenarioArb as scenarioArb,
  captureTable,
} from '../../support/history-arbitraries.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

describe.each<[DeletePolicy, string | null]>([
  ['invalidate', null],
  ['new_record', null],
  ['ignore', null],
  ['new_record', SENTINEL],
])('merge properties, deletes=%s, open end %s (real DuckDB)', (policy, openEnd) => {
  it('any split and order of batches gives the model history; invariants hold after every merge', async () => {
    let lateMerges = 0
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ events, batches }) => {
        const h = await ScdHarness.create(captureTable(policy, openEnd), COLUMNS)
        try {
          const seenSk = new Map<number, string>()
          let applied: typeof events = []
          const stagedIds = new Map<typeof events, string>()
          for (const [i, batch] of batches.entries()) {
            let batchId = stagedIds.get(batch)
            if (batchId === undefined) {
              batchId = await h.stage(batch.map(captureRow), { extractedAt: iso(100 + i) })
              stagedIds.set(batch, batchId)
              applied = [...applied, ...batch]
            }
            // Every other batch numbers its new keys per bucket of two rows, as BigQuery
            // numbers a batch larger than a bucket.
            const highestBefore = Math.max(0, ...seenSk.keys())
            const result = await h.merge(batchId, i % 2 === 0 ? { rowsPerKeyBucket: 2 } : {})
            if ((result.counts?.lateKeys ?? 0) > 0) lateMerges++
            const stored = await h.history()
            // With a sentinel open end, no version is left with a NULL valid_to.
            if (openEnd !== null) expect(stored.filter((r) => r.valid_to === null)).toEqual([])
            const rows = withOpenEndAsNull(stored)
            assertInvariants(rows)
            const sks = rows.map((r) => Number(r.dimsync_sk))
            const given = sks.filter((sk) => !seenSk.has(sk))
            expect(
              given.filter((sk) => sk <= highestBefore),
              'new keys are above every earlier key',
            ).toEqual([])
            const [record] = await h.query(
              `SELECT highest_surrogate_key AS k FROM main."${h.table.target}_dimsync_keys"`,
            )
            expect(Number(record?.k), 'the record covers every key given out').toBeGreaterThanOrEqual(
              Math.max(0, ...sks),
            )
            // Invariant 5 (docs/invariants.md): an existing version keeps its surrogate key (and what it describes) forever. A deletion
            // version describes the key's absence; the attributes it carries follow the version before it.
            for (const r of rows) {
              const identity = r.is_deleted
                ? `${r.customer_id}|deleted`
                : `${r.customer_id}|${r.region}|${r.tier}`
              const before = seenSk.get(Number(r.dimsync_sk))
              if (before !== undefined) expect(identity).toBe(before)
              seenSk.set(Number(r.dimsync_sk), identity)
            }
            expect(seenSk.size, 'no version disappears').toBe(rows.length)
            if (result.status === 'already-applied') expect(i).toBe(batches.length - 1)
            expect(actual(rows)).toEqual(expectedHistory(toModel(applied), policy))
          }
          // Invariant 8 (docs/invariants.md): the as-of view at t returns the last state captured at or before t.
          await expectAsOfMatchesModel((sql) => h.query(sql), toModel(events), policy, [0, 7, 20, 33, 41])
        } finally {
          await h.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 25) },
    )
    // The late path (windows recomputed from the capture log) must actually have been exercised.
    expect(lateMerges).toBeGreaterThan(0)
  }, 300_000)
})

/** Snapshots: each key present with some state or absent, taken at increasing extraction times. */
const snapshotsArb = fc.array(
  fc.array(
    fc.option(
      fc.record({ region: fc.constantFrom('South', 'North', '', null), tier: fc.constantFrom('gold', null) }),
    ),
    {
      minLength: 5,
      maxLength: 5,
    },
  ),
  { minLength: 1, maxLength: 6 },
)

describe.each<DeletePolicy>(['invalidate', 'new_record', 'ignore'])(
  'snapshot merges, deletes=%s (real DuckDB)',
  (policy) => {
    it('full extracts in order give the model history, absence handled by the policy; re-merging changes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(snapshotsArb, async (snapshots) => {
          const columns = COLUMNS.filter((c) => c.name !== 'changed_at' && c.name !== 'deleted')
          const h = await ScdHarness.create(tableSpec({ deletes: policy }), columns)
          try {
            const events: ModelEvent[] = []
            for (const [i, snapshot] of snapshots.entries()) {
              const t = i * 10
              const rows = snapshot.flatMap((state, k) => (state ? [{ customer_id: k + 1, ...state }] : []))
              snapshot.forEach((state, k) => {
                if (state) events.push({ key: k + 1, t, attrs: state })
                else if (policy !== 'ignore') events.push({ key: k + 1, t })
              })
              const batchId = await h.stage(rows, { extractedAt: iso(t) })
              await h.merge(batchId, { allowMassDelete: true })
              const rowsAfter = await h.history()
              assertInvariants(rowsAfter)
              expect(actual(rowsAfter)).toEqual(expectedHistory(events, policy))
              expect((await h.merge(batchId)).status).toBe('already-applied')
              expect(await h.history()).toEqual(rowsAfter)
            }
          } finally {
            await h.dispose()
          }
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 25) },
      )
    }, 300_000)
  },
)
