import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import { actual, hourOf, iso } from '../../support/history-checks.ts'
import type { ModelVersion } from '../../support/history-model.ts'
import { ScdHarness, type VersionRow } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { propertySeed } from '../../support/property-seed.ts'

/**
 * Table modes against the simplest models there are, on real DuckDB: a sequence of full snapshots (a few keys,
 * values from a tiny domain so equal and returning states recur, keys missing from some snapshots), merged in
 * extraction order, every batch merged twice.
 * - mirror: the table is the last snapshot; a key that stays keeps its surrogate key, a key that left and came
 *   back gets a new one.
 * - append: the table is every snapshot's rows, each valid from its extraction until the next extraction.
 */

const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'tier', type: 'VARCHAR' },
]

interface Row {
  readonly key: number
  readonly region: string | null
  readonly tier: string | null
}

/** Snapshots at hours 0, 1, 2, ...: each a set of distinct keys (possibly empty after the first). */
const snapshotsArb = fc
  .array(
    fc.uniqueArray(
      fc.record({
        key: fc.integer({ min: 1, max: 4 }),
        region: fc.constantFrom('South', 'North', '', null),
        tier: fc.constantFrom('gold', null),
      }),
      { selector: (r) => r.key, maxLength: 4 },
    ),
    { minLength: 1, maxLength: 6 },
  )
  .filter((snapshots) => snapshots[0]!.length > 0)

const stagedRow = (r: Row) => ({ customer_id: r.key, region: r.region, tier: r.tier })
const byKey = (a: { key: number }, b: { key: number }) => a.key - b.key

async function mergeTwice(h: ScdHarness, rows: readonly Row[], hour: number): Promise<void> {
  // allowMassDelete: a snapshot may drop most keys on purpose; the guard has tests of its own.
  const batchId = await h.stage(rows.map(stagedRow), { extractedAt: iso(hour) })
  await h.merge(batchId, { allowMassDelete: true })
  expect((await h.merge(batchId, { allowMassDelete: true })).status).toBe('already-applied')
}

describe('table modes against their models (real DuckDB)', () => {
  it('mirror: after every snapshot the table is that snapshot; surrogate keys stay while a key stays', async () => {
    await fc.assert(
      fc.asyncProperty(snapshotsArb, async (snapshots) => {
        const h = await ScdHarness.create(
          tableSpec({ mode: 'mirror', tracked: { kind: 'list', columns: [] }, deletes: 'invalidate' }),
          COLUMNS,
        )
        try {
          let previous = new Map<number, number>() // key -> surrogate key
          const given = new Set<number>()
          for (const [hour, snapshot] of snapshots.entries()) {
            await mergeTwice(h, snapshot, hour)
            const rows = await h.history()
            expect(rows.map((r) => ({ key: Number(r.customer_id), region: r.region, tier: r.tier }))).toEqual(
              [...snapshot].sort(byKey),
            )
            expect(rows.every((r) => r.is_current === true && r.valid_to === null)).toBe(true)
            const now = new Map(rows.map((r) => [Number(r.customer_id), Number(r.dimsync_sk)]))
            for (const [key, sk] of now) {
              const before = previous.get(key)
              if (before !== undefined) expect(sk, `key ${key} keeps its surrogate key`).toBe(before)
              else expect(given.has(sk), `key ${key} gets a surrogate key never given out`).toBe(false)
              given.add(sk)
            }
            previous = now
          }
        } finally {
          await h.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 20), seed: propertySeed(7) },
    )
  }, 300_000)

  it('append: the table is every snapshot, each row valid from its extraction until the next one', async () => {
    await fc.assert(
      fc.asyncProperty(snapshotsArb, async (snapshots) => {
        const h = await ScdHarness.create(tableSpec({ mode: 'append' }), COLUMNS)
        try {
          for (const [hour, snapshot] of snapshots.entries()) {
            await mergeTwice(h, snapshot, hour)
            const expected: ModelVersion[] = snapshots
              .slice(0, hour + 1)
              .flatMap((rows, i) =>
                rows.map((r) => ({
                  key: r.key,
                  attrs: { region: r.region, tier: r.tier },
                  from: i,
                  to: i === hour ? null : i + 1,
                  deleted: false,
                })),
              )
              .sort((a, b) => a.key - b.key || a.from - b.from)
            const rows: VersionRow[] = await h.history()
            expect(actual(rows)).toEqual(expected)
            const sks = rows.map((r) => Number(r.dimsync_sk))
            expect(new Set(sks).size).toBe(sks.length)
            expect(rows.filter((r) => r.is_current).map((r) => hourOf(String(r.valid_from)))).toEqual(
              snapshot.map(() => hour),
            )
          }
        } finally {
          await h.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 20), seed: propertySeed(7) },
    )
  }, 300_000)
})
