import { afterEach, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../lib/core/canonical-json.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'profile', type: 'JSON' },
]

/**
 * Sources stage JSON as its canonical text since BigQuery stores JSON (before, DuckDB kept the source's text:
 * `jsonb` prints `{"a": 1, "b": 2}`). A DuckDB dimension written before that gets, on its first merge after the
 * upgrade, one new version for each key whose stored text was not canonical (same value, new text); keys whose
 * text was canonical already do not change, and later merges are quiet again.
 */
describe('upgrading a DuckDB dimension with JSON written from the source text (real DuckDB)', () => {
  it('one new version per key whose stored JSON text was not canonical, once', async () => {
    const h = (harness = await ScdHarness.create(tableSpec(), COLUMNS))
    const before = [
      { customer_id: 1, profile: '{"b": 1, "a": {"d": 2, "c": 3}}' },
      { customer_id: 2, profile: '{"a":1}' },
      { customer_id: 3, profile: null },
    ]
    await h.load(before, { extractedAt: '2024-01-01T00:00:00Z' })
    const after = before.map((r) => ({ ...r, profile: r.profile === null ? null : canonicalJson(r.profile) }))
    expect(after[0]!.profile).toBe('{"a":{"c":3,"d":2},"b":1}')
    const upgraded = await h.load(after, { extractedAt: '2024-02-01T00:00:00Z' })
    expect(upgraded.counts).toMatchObject({ insertedVersions: 1, closedVersions: 1, unchangedEvents: 2 })
    const again = await h.load(after, { extractedAt: '2024-03-01T00:00:00Z' })
    expect(again.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0, unchangedEvents: 3 })
  })
})
