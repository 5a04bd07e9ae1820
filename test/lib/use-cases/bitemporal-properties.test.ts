import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { DeletePolicy, TableSpec } from '../../../lib/core/table-spec.ts'
import { mergeBatch } from '../../../lib/use-cases/merge-batch.ts'
import { actual, assertInvariants, iso, SENTINEL, withOpenEndAsNull } from '../../support/history-checks.ts'
import { expectedAsOf, expectedHistory, feedCaptures, type ModelEvent } from '../../support/history-model.ts'
import {
  CAPTURE_COLUMNS,
  captureModel,
  captureRow,
  captureScenarioArb,
  captureTable,
  FEED_COLUMNS as COLUMNS,
  feedRow,
  feedScenarioArb,
  feedTable,
} from '../../support/history-arbitraries.ts'
import type { Value } from '../../support/staged-batches.ts'
import { ScdHarness, type VersionRow } from '../../support/scd-harness.ts'
import { propertySeed } from '../../support/property-seed.ts'

const SYSTEM_TIME = { systemFrom: 'system_from', systemTo: 'system_to' }
/** Merge n runs at system time 2030-01-01 + n minutes (business times are hours of 2024). */
const systemTime = (n: number) => new Date(Date.UTC(2030, 0, 1) + n * 60_000).toISOString()

/** Every row, its instants as epoch milliseconds (the open end as null), in a stable order. */
async function allRows(h: ScdHarness): Promise<VersionRow[]> {
  const rows = await h.query('SELECT * FROM dim_customer ORDER BY customer_id, valid_from, system_from')
  const instant = (v: unknown) =>
    v === null || String(v).startsWith('9999-12-31')
      ? null
      : Date.parse(String(v).replace(' ', 'T').replace(/\+00$/, 'Z'))
  return rows.map((r) => ({
    ...(r as VersionRow),
    dimsync_sk: Number(r.dimsync_sk),
    customer_id: Number(r.customer_id),
    system_from: instant(r.system_from),
    system_to: instant(r.system_to),
  }))
}

const knownAt = (rows: readonly VersionRow[], at: number) =>
  rows.filter((r) => Number(r.system_from) <= at && (r.system_to === null || Number(r.system_to) > at))

/** Invariant 11 (docs/invariants.md), system axis: a merge adds rows and closes rows at its system time, and changes nothing else. */
function expectOnlyClosedInSystemTime(
  before: readonly VersionRow[],
  after: readonly VersionRow[],
  at: number,
) {
  const id = (r: VersionRow) => `${r.dimsync_sk}@${r.system_from}`
  const afterById = new Map(after.map((r) => [id(r), r]))
  for (const old of before) {
    const now = afterById.get(id(old))
    expect(now, `row ${id(old)} is kept`).toBeDefined()
    expect({ ...now, system_to: null }, `row ${id(old)} keeps its values`).toEqual({
      ...old,
      system_to: null,
    })
    if (old.system_to !== null) expect(now!.system_to, 'a closed row stays closed').toBe(old.system_to)
    else expect([null, at], 'an open row is closed at the merge time or not at all').toContain(now!.system_to)
  }
  for (const r of after) {
    if (before.some((b) => id(b) === id(r))) continue
    expect(r.system_from, 'a new row is learned at the merge time').toBe(at)
    expect(r.system_to, 'a new row is known now').toBeNull()
  }
  // A surrogate key names one business version: at most one of its rows is known at any instant.
  const bySk = new Map<number, VersionRow[]>()
  for (const r of after) bySk.set(Number(r.dimsync_sk), [...(bySk.get(Number(r.dimsync_sk)) ?? []), r])
  for (const [sk, rows] of bySk) {
    rows.sort((a, b) => Number(a.system_from) - Number(b.system_from))
    const keys = new Set(rows.map((r) => r.customer_id))
    expect(keys.size, `sk ${sk} belongs to one key`).toBe(1)
    rows.forEach((r, i) => {
      if (r.system_to !== null)
        expect(Number(r.system_from), `sk ${sk}: non-empty system window`).toBeLessThan(Number(r.system_to))
      const next = rows[i + 1]
      if (next !== undefined) expect(r.system_to, `sk ${sk}: system windows do not overlap`).not.toBeNull()
      if (next !== undefined) expect(Number(r.system_to)).toBeLessThanOrEqual(Number(next.system_from))
    })
  }
}

/**
 * Merges `batches` in order (a batch met again is merged again under its id) with the system clock one minute
 * further at each merge, checking both axes after each merge and what was known at each merge at the end.
 * Returns how many merges took the late path.
 */
async function checkBothAxes<E>(
  table: TableSpec,
  columns: typeof COLUMNS,
  batches: readonly (readonly E[])[],
  row: (event: E) => Record<string, Value>,
  model: (applied: readonly E[]) => ModelEvent[],
): Promise<number> {
  const policy = table.deletes
  let lateMerges = 0
  const h = await ScdHarness.create(table, columns)
  try {
    const stagedIds = new Map<readonly E[], string>()
    let applied: E[] = []
    let before: VersionRow[] = []
    const said: { at: number; rows: VersionRow[]; applied: E[] }[] = []
    for (const [i, batch] of batches.entries()) {
      let batchId = stagedIds.get(batch)
      if (batchId === undefined) {
        batchId = await h.stage(batch.map(row), { extractedAt: iso(100 + i) })
        stagedIds.set(batch, batchId)
        applied = [...applied, ...batch]
      }
      const now = systemTime(i + 1)
      const result = await mergeBatch(
        { warehouse: h.warehouse, staging: h.batches },
        { table, schema: 'main', batchId, now: new Date(now) },
      )
      if ((result.counts?.lateKeys ?? 0) > 0) lateMerges++
      const after = await allRows(h)
      expectOnlyClosedInSystemTime(before, after, Date.parse(now))
      // Business axis: the rows known now are a valid history, the one the model gives the events merged.
      const known = withOpenEndAsNull(after.filter((r) => r.system_to === null))
      assertInvariants(known)
      expect(actual(known)).toEqual(expectedHistory(model(applied), policy))
      said.push({ at: Date.parse(now), rows: known, applied })
      before = after
    }
    // What the table said after each merge is what it says was known then.
    const final = await allRows(h)
    const values = (rows: readonly VersionRow[]) => rows.map((r) => ({ ...r, system_to: 'not compared' }))
    for (const s of said) expect(values(withOpenEndAsNull(knownAt(final, s.at)))).toEqual(values(s.rows))
    // The as-of function answers "valid at B as known at S" for S at and between merges.
    for (const s of said.filter((_, i) => i % 2 === 0)) {
      for (const b of [0, 5, 11, 30]) {
        const rows = await h.query(
          `SELECT * FROM dim_customer_as_of('${iso(b)}', '${new Date(s.at + 30_000).toISOString()}') ORDER BY customer_id`,
        )
        const expected = expectedAsOf(model(s.applied), policy, b)
        expect(rows.map((r) => [Number(r.customer_id), r.region, r.tier])).toEqual(
          [...expected.values()]
            .sort((x, y) => x.key - y.key)
            .map((e) => [e.key, e.attrs!.region, e.attrs!.tier]),
        )
      }
    }
  } finally {
    await h.dispose()
  }
  return lateMerges
}

const RUNS = { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 10), seed: propertySeed(20261130) }
const PROPERTY =
  'each merge only adds rows and closes rows in system time; what is known now is the history of the events ' +
  'merged; what was known then stays readable'

describe.each<[DeletePolicy, boolean, string | null]>([
  ['invalidate', true, null],
  ['new_record', true, SENTINEL],
  ['ignore', false, null],
])(
  'bitemporal change feeds, deletes=%s, sequenced %s, open end %s (real DuckDB)',
  (policy, sequenced, openEnd) => {
    it(
      PROPERTY,
      async () => {
        let lateMerges = 0
        await fc.assert(
          fc.asyncProperty(feedScenarioArb(sequenced), async ({ batches }) => {
            lateMerges += await checkBothAxes(
              { ...feedTable(policy, sequenced, openEnd), systemTime: SYSTEM_TIME },
              COLUMNS,
              batches,
              feedRow,
              (applied) => feedCaptures(applied, policy),
            )
          }),
          RUNS,
        )
        expect(lateMerges).toBeGreaterThan(0)
      },
      300_000,
    )
  },
)

describe.each<[DeletePolicy, string | null]>([
  ['invalidate', SENTINEL],
  ['new_record', null],
])('bitemporal deltas with soft deletes, deletes=%s, open end %s (real DuckDB)', (policy, openEnd) => {
  it(
    PROPERTY,
    async () => {
      let lateMerges = 0
      await fc.assert(
        fc.asyncProperty(captureScenarioArb, async ({ batches }) => {
          lateMerges += await checkBothAxes(
            { ...captureTable(policy, openEnd), systemTime: SYSTEM_TIME },
            CAPTURE_COLUMNS,
            batches,
            captureRow,
            captureModel,
          )
        }),
        RUNS,
      )
      expect(lateMerges).toBeGreaterThan(0)
    },
    300_000,
  )
})
