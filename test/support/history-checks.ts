import { expect } from 'vitest'
import type { DeletePolicy } from '../../lib/core/table-spec.ts'
import { expectedAsOf, type ModelEvent, type ModelVersion } from './history-model.ts'
import type { VersionRow } from './scd-harness.ts'

/**
 * Checks shared by the property tests: times are whole hours after 2024-01-01 (`iso(hour)`), the dimension is
 * dim_customer keyed on customer_id with tracked region and tier.
 */

export const BASE = Date.UTC(2024, 0, 1)
export const iso = (hour: number) => new Date(BASE + hour * 3_600_000).toISOString()
export const hourOf = (text: string) =>
  (Date.parse(text.replace(' ', 'T').replace(/\+00$/, 'Z')) - BASE) / 3_600_000

export function actual(rows: VersionRow[]): ModelVersion[] {
  return rows.map((r) => ({
    key: Number(r.customer_id),
    attrs: { region: r.region as string | null, tier: r.tier as string | null },
    from: hourOf(String(r.valid_from)),
    to: r.valid_to === null ? null : hourOf(String(r.valid_to)),
    deleted: Boolean(r.is_deleted),
  }))
}

/** Invariants 1-5 (docs/invariants.md) on a history as stored. */
export function assertInvariants(rows: VersionRow[]): void {
  const byKey = new Map<number, VersionRow[]>()
  for (const r of rows) byKey.set(Number(r.customer_id), [...(byKey.get(Number(r.customer_id)) ?? []), r])
  const sks = rows.map((r) => r.dimsync_sk)
  expect(new Set(sks).size, 'surrogate keys are unique').toBe(sks.length)
  for (const [key, versions] of byKey) {
    versions.sort((a, b) => hourOf(String(a.valid_from)) - hourOf(String(b.valid_from)))
    expect(
      versions.filter((v) => v.is_current).length,
      `key ${key}: at most one current version`,
    ).toBeLessThanOrEqual(1)
    versions.forEach((v, i) => {
      expect(v.is_current, `key ${key}: is_current iff open`).toBe(v.valid_to === null)
      if (v.valid_to !== null)
        expect(hourOf(String(v.valid_from)), `key ${key}: non-empty window`).toBeLessThan(
          hourOf(String(v.valid_to)),
        )
      const next = versions[i + 1]
      if (next === undefined) return
      expect(v.valid_to, `key ${key}: closed before the next version`).not.toBeNull()
      expect(hourOf(String(v.valid_to)), `key ${key}: no overlap`).toBeLessThanOrEqual(
        hourOf(String(next.valid_from)),
      )
      const gap = hourOf(String(v.valid_to)) < hourOf(String(next.valid_from))
      if (!gap) {
        const same = v.region === next.region && v.tier === next.tier && v.is_deleted === next.is_deleted
        expect(same, `key ${key}: consecutive versions differ`).toBe(false)
      }
    })
  }
}

export const SENTINEL = '9999-12-31T23:59:59Z'

/** Open versions as the model writes them (valid_to null), whichever open end the table is configured with. */
export function withOpenEndAsNull(rows: VersionRow[]): VersionRow[] {
  return rows.map((r) => (String(r.valid_to).startsWith('9999-12-31') ? { ...r, valid_to: null } : r))
}

/** Invariant 8 (docs/invariants.md): at each hour given, dim_customer_as_of returns the last state the model captured at or before it. */
export async function expectAsOfMatchesModel(
  query: (sql: string) => Promise<readonly Record<string, unknown>[]>,
  captures: readonly ModelEvent[],
  policy: DeletePolicy,
  hours: readonly number[],
): Promise<void> {
  for (const t of hours) {
    const rows = await query(`SELECT * FROM dim_customer_as_of('${iso(t)}') ORDER BY customer_id`)
    const expected = expectedAsOf(captures, policy, t)
    expect(rows.map((r) => [Number(r.customer_id), r.region, r.tier])).toEqual(
      [...expected.values()]
        .sort((a, b) => a.key - b.key)
        .map((e) => [e.key, e.attrs!.region, e.attrs!.tier]),
    )
  }
}
