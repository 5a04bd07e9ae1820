import { afterEach, describe, expect, it } from 'vitest'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ScdHarness, type VersionRow } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'score', type: 'INTEGER' },
]
const FEED = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'score', type: 'INTEGER' },
  { name: 'changed_at', type: 'TIMESTAMP' },
]
const row = (customer_id: number, region: string, score: number) => ({ customer_id, region, score })
const day = (n: number) => `2024-01-${String(n).padStart(2, '0')}T00:00:00Z`
const ev = (Op: string, customer_id: number, region: string | null, score: number | null, d: number) => ({
  Op,
  customer_id,
  region,
  score,
  changed_at: `2024-01-${String(d).padStart(2, '0')} 00:00:00`,
})

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function setup(overrides: Partial<TableSpec>, columns = COLUMNS): Promise<ScdHarness> {
  harness = await ScdHarness.create(tableSpec(overrides), columns)
  return harness
}

/** [sk, key, region, score, valid_from day, valid_to day, is_current]. */
function rowsOf(rows: readonly VersionRow[]) {
  const d = (v: unknown) => (v === null ? null : String(v).slice(0, 10))
  return rows.map((r) => [
    r.dimsync_sk,
    r.customer_id,
    r.region,
    r.score,
    d(r.valid_from),
    d(r.valid_to),
    r.is_current,
  ])
}

describe('mode: mirror keeps only the current state of the source', () => {
  it('updates overwrite the row in place (same surrogate key), deletes remove it, a returning key comes back', async () => {
    const h = await setup({ mode: 'mirror', tracked: { kind: 'list', columns: [] }, deletes: 'invalidate' })
    await h.load([row(1, 'South', 10), row(2, 'East', 20)], { extractedAt: day(1) })
    const updated = await h.load([row(1, 'North', 11), row(2, 'East', 20)], { extractedAt: day(2) })
    expect(updated.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
    expect(rowsOf(await h.history())).toEqual([
      [1, 1, 'North', 11, '2024-01-01', null, true],
      [2, 2, 'East', 20, '2024-01-01', null, true],
    ])
    const deleted = await h.load([row(1, 'North', 11)], { extractedAt: day(3) })
    expect(deleted.counts).toMatchObject({ deletedKeys: 1 })
    expect(rowsOf(await h.history())).toEqual([[1, 1, 'North', 11, '2024-01-01', null, true]])
    await h.load([row(1, 'North', 11), row(2, 'West', 21)], { extractedAt: day(4) })
    expect(rowsOf(await h.history())).toEqual([
      [1, 1, 'North', 11, '2024-01-01', null, true],
      [3, 2, 'West', 21, '2024-01-04', null, true],
    ])
    expect(await h.query('SELECT COUNT(*)::INT AS n FROM dim_customer_current')).toEqual([{ n: 2 }])
  })

  it('a change feed: the last event of each key wins, a delete removes the key, a late older update does not bring it back', async () => {
    const h = await setup(
      {
        mode: 'mirror',
        tracked: { kind: 'list', columns: [] },
        deletes: 'invalidate',
        validFrom: { kind: 'column', column: 'changed_at' },
        changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } },
      },
      FEED,
    )
    await h.load(
      [
        ev('I', 1, 'South', 10, 1),
        ev('U', 1, 'North', 11, 3),
        ev('I', 2, 'East', 20, 1),
        ev('D', 2, null, null, 4),
      ],
      { extractedAt: day(10) },
    )
    expect(rowsOf(await h.history())).toEqual([[1, 1, 'North', 11, '2024-01-01', null, true]])
    await h.load([ev('U', 2, 'West', 21, 2), ev('U', 1, 'West', 12, 2)], { extractedAt: day(11) })
    expect(rowsOf(await h.history()).map((r) => r.slice(1, 4))).toEqual([[1, 'North', 11]])
  })

  it('a re-delivered batch changes nothing', async () => {
    const h = await setup({ mode: 'mirror', tracked: { kind: 'list', columns: [] }, deletes: 'invalidate' })
    await h.load([row(1, 'South', 10)], { extractedAt: day(1) })
    await h.load([row(1, 'North', 11)], { extractedAt: day(2), batchId: 'b2' })
    const before = await h.history()
    const again = await h.merge(await h.stage([row(1, 'North', 11)], { extractedAt: day(2), batchId: 'b2' }))
    expect(again.status).toBe('already-applied')
    expect(await h.history()).toEqual(before)
  })
})

describe('mode: append keeps every extract', () => {
  it('a full extract ends all current rows and appends its rows, unchanged ones too; a missing key has no current row', async () => {
    const h = await setup({ mode: 'append' })
    await h.load([row(1, 'South', 10), row(2, 'East', 20)], { extractedAt: day(1) })
    const second = await h.load([row(1, 'South', 10)], { extractedAt: day(2) })
    expect(second.counts).toMatchObject({ events: 1, insertedVersions: 1, closedVersions: 2 })
    await h.load([row(1, 'North', 11), row(2, 'West', 21)], { extractedAt: day(3) })
    expect(rowsOf(await h.history())).toEqual([
      [1, 1, 'South', 10, '2024-01-01', '2024-01-02', false],
      [3, 1, 'South', 10, '2024-01-02', '2024-01-03', false],
      [4, 1, 'North', 11, '2024-01-03', null, true],
      [2, 2, 'East', 20, '2024-01-01', '2024-01-02', false],
      [5, 2, 'West', 21, '2024-01-03', null, true],
    ])
  })

  it('a delta ends only the current rows of its keys', async () => {
    const h = await setup({
      mode: 'append',
      extract: { mode: 'incremental', cursor: 'score', lookbackMinutes: 0 },
    })
    await h.load([row(1, 'South', 10), row(2, 'East', 20)], { extractedAt: day(1) })
    await h.load([row(2, 'West', 21)], { extractedAt: day(2) })
    expect(rowsOf(await h.history())).toEqual([
      [1, 1, 'South', 10, '2024-01-01', null, true],
      [2, 2, 'East', 20, '2024-01-01', '2024-01-02', false],
      [3, 2, 'West', 21, '2024-01-02', null, true],
    ])
  })

  it('a re-delivered batch changes nothing; an older extract than one merged is refused', async () => {
    const h = await setup({ mode: 'append' })
    await h.load([row(1, 'South', 10)], { extractedAt: day(1), batchId: 'b1' })
    await h.load([row(1, 'South', 10)], { extractedAt: day(3), batchId: 'b3' })
    const before = await h.history()
    const again = await h.merge(await h.stage([row(1, 'South', 10)], { extractedAt: day(3), batchId: 'b3' }))
    expect(again.status).toBe('already-applied')
    await expect(h.load([row(1, 'South', 10)], { extractedAt: day(2) })).rejects.toThrow(
      /not after batch b3 .*which is already merged/,
    )
    expect(await h.history()).toEqual(before)
  })

  it('an extract that would end most current rows is refused like a mass delete', async () => {
    const h = await setup({ mode: 'append' })
    await h.load([row(1, 'South', 10), row(2, 'East', 20), row(3, 'West', 30)], { extractedAt: day(1) })
    await expect(h.load([row(1, 'South', 10)], { extractedAt: day(2) })).rejects.toThrow(
      /would delete 2 of 3 current keys/,
    )
    await h.load([row(1, 'South', 10)], { extractedAt: day(2), allowMassDelete: true })
    expect((await h.history()).filter((r) => r.is_current).map((r) => r.customer_id)).toEqual([1])
  })
})
