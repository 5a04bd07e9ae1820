import { afterEach, describe, expect, it } from 'vitest'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { mergeBatch } from '../../lib/use-cases/merge-batch.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'city', type: 'VARCHAR' },
  { name: 'tier', type: 'VARCHAR' },
]

/** Stages `rows` and merges them under `table` (the config now), with the merge's clock at `at`. */
async function mergeAs(h: ScdHarness, table: TableSpec, rows: Record<string, string | number>[], at: string) {
  const batchId = await h.stage(rows, { extractedAt: at })
  return mergeBatch(
    { warehouse: h.warehouse, staging: h.batches },
    { table, schema: 'main', batchId, now: new Date(at) },
  )
}

describe('a tracked set changed on a bitemporal table (real DuckDB)', () => {
  it('opens no business version, and every row is kept as it was except closed in system time', async () => {
    const table = tableSpec({
      tracked: { kind: 'list', columns: ['city'] },
      systemTime: { systemFrom: 'system_from', systemTo: 'system_to' },
    })
    const h = (harness = await ScdHarness.create(table, COLUMNS))
    const rows = [
      { customer_id: 1, city: 'Lyon', tier: 'gold' },
      { customer_id: 2, city: 'Oslo', tier: 'silver' },
    ]
    await mergeAs(h, table, rows, '2024-01-01T00:00:00Z')
    await mergeAs(h, table, [{ ...rows[0]!, city: 'Nice' }, rows[1]!], '2024-02-01T00:00:00Z')
    const all = `SELECT dimsync_sk, customer_id, city, tier, CAST(valid_from AS VARCHAR) AS valid_from,
      CAST(valid_to AS VARCHAR) AS valid_to, dimsync_row_hash, CAST(system_from AS VARCHAR) AS system_from,
      CAST(system_to AS VARCHAR) AS system_to FROM dim_customer ORDER BY dimsync_sk, system_from`
    const before = await h.query(all)

    const wider = { ...table, tracked: { kind: 'list' as const, columns: ['city', 'tier'] } }
    const result = await mergeAs(h, wider, [{ ...rows[0]!, city: 'Nice' }, rows[1]!], '2024-03-01T00:00:00Z')
    expect(result.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0, unchangedEvents: 2 })
    const after = await h.query(all)
    // Rows known before are all still there, unchanged but for system_to; the rehashed current ones are new rows.
    for (const row of before) {
      const kept = after.find((r) => r.dimsync_sk === row.dimsync_sk && r.system_from === row.system_from)
      expect(kept).toEqual(row.system_to === null ? { ...row, system_to: kept!.system_to } : row)
    }
    const knownNow = after.filter((r) => r.system_to === null)
    expect(knownNow.map((r) => [r.customer_id, r.city, r.valid_to])).toEqual([
      [1, 'Lyon', '2024-02-01 00:00:00+00'],
      [2, 'Oslo', null],
      [1, 'Nice', null],
    ])
    // The next merge of the same rows changes nothing at all.
    await mergeAs(h, wider, [{ ...rows[0]!, city: 'Nice' }, rows[1]!], '2024-04-01T00:00:00Z')
    expect(await h.query(all)).toEqual(after)
  })
})

describe('deletes changed from invalidate in the config (real DuckDB)', () => {
  // A key invalidate closed has no current version; under the new policy it comes back in a later batch. Its
  // versions must still agree on type 1 values, and its type 0 column keep the key's first value.
  it.each(['ignore', 'new_record'] as const)(
    'to %s: a key invalidate closed comes back with its type 1 value on every version and its first type 0 value',
    async (policy) => {
      const table = tableSpec({
        tracked: { kind: 'list', columns: ['city'] },
        policies: { keepFirst: ['tier'], previousValue: [], currentValue: [] },
        deletes: 'invalidate',
        maxDeleteShare: 1,
      })
      const h = (harness = await ScdHarness.create(table, [...COLUMNS, { name: 'score', type: 'BIGINT' }]))
      const row = (id: number, city: string, tier: string, score: number) => ({
        customer_id: id,
        city,
        tier,
        score,
      })
      await mergeAs(h, table, [row(1, 'Lyon', 'gold', 1), row(2, 'Oslo', 'gold', 1)], '2024-01-01T00:00:00Z')
      await mergeAs(h, table, [row(2, 'Oslo', 'gold', 1)], '2024-02-01T00:00:00Z')
      const edited = { ...table, deletes: policy }
      await mergeAs(
        h,
        edited,
        [row(1, 'Nice', 'silver', 2), row(2, 'Oslo', 'gold', 1)],
        '2024-03-01T00:00:00Z',
      )
      const key1 = await h.query(
        `SELECT city, tier, score, is_current FROM dim_customer WHERE customer_id = 1 ORDER BY valid_from`,
      )
      expect(key1).toEqual([
        { city: 'Lyon', tier: 'gold', score: 2, is_current: false },
        { city: 'Nice', tier: 'gold', score: 2, is_current: true },
      ])
    },
  )
})
