import { afterEach, describe, expect, it } from 'vitest'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const FEED = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'score', type: 'INTEGER' },
  { name: 'changed_at', type: 'TIMESTAMP' },
]
const DELTA = [
  { name: 'id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'score', type: 'INTEGER' },
]
const ev = (Op: string, id: number, name: string | null, score: number | null, day: number) => ({
  Op,
  id,
  name,
  score,
  changed_at: `2024-01-${String(day).padStart(2, '0')} 00:00:00`,
})
const extractedAt = (day: number) => `2024-02-${String(day).padStart(2, '0')}T00:00:00Z`

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function feed(overrides: Partial<TableSpec>): Promise<ScdHarness> {
  harness = await ScdHarness.create(
    tableSpec({
      key: ['id'],
      validFrom: { kind: 'column', column: 'changed_at' },
      changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } },
      deletes: 'invalidate',
      ...overrides,
    }),
    FEED,
  )
  return harness
}

async function states(h: ScdHarness) {
  return (await h.history()).map((r) => [r.id, r.name, r.score, r.is_current])
}

describe('partial updates', () => {
  it('the worked example: current (1, A, 20), event (1, NULL, 30): by default name becomes NULL', async () => {
    const h = await feed({})
    await h.load([ev('I', 1, 'A', 20, 1)], { extractedAt: extractedAt(1) })
    await h.load([ev('U', 1, null, 30, 2)], { extractedAt: extractedAt(2) })
    expect(await states(h)).toEqual([
      [1, 'A', 20, false],
      [1, null, 30, true],
    ])
  })

  it('the worked example with ignore_null_updates: [name]: the new version is (1, A, 30)', async () => {
    const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['name'] } } })
    await h.load([ev('I', 1, 'A', 20, 1)], { extractedAt: extractedAt(1) })
    await h.load([ev('U', 1, null, 30, 2)], { extractedAt: extractedAt(2) })
    expect(await states(h)).toEqual([
      [1, 'A', 20, false],
      [1, 'A', 30, true],
    ])
  })

  it('several partial events of a key in one batch fold in time order, whatever their order in the batch', async () => {
    const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'all' } } })
    await h.load([ev('I', 1, 'A', 20, 1)], { extractedAt: extractedAt(1) })
    await h.load([ev('U', 1, 'C', null, 5), ev('U', 1, null, 30, 2), ev('U', 1, 'B', null, 3)], {
      extractedAt: extractedAt(2),
    })
    expect(await states(h)).toEqual([
      [1, 'A', 20, false],
      [1, 'A', 30, false],
      [1, 'B', 30, false],
      [1, 'C', 30, true],
    ])
  })

  it('a new key folds from its first event; after a delete the key starts again from its next event', async () => {
    const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'all_except', columns: ['score'] } } })
    await h.load([ev('I', 2, 'X', 1, 1), ev('U', 2, null, null, 2)], { extractedAt: extractedAt(1) })
    expect(await states(h)).toEqual([
      [2, 'X', 1, false],
      [2, 'X', null, true],
    ])
    await h.load([ev('D', 2, null, null, 3)], { extractedAt: extractedAt(2) })
    await h.load([ev('I', 2, null, 5, 4)], { extractedAt: extractedAt(3) })
    expect((await states(h)).at(-1)).toEqual([2, null, 5, true])
  })

  it('an event after a delete of its key in the same batch starts from nothing: neither the delete row nor the closed version fills its NULLs', async () => {
    const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['name'] } } })
    await h.load([ev('I', 1, 'South', 20, 1)], { extractedAt: extractedAt(1) })
    await h.load([ev('D', 1, 'South', 20, 6), ev('I', 1, null, 30, 7), ev('U', 1, null, 40, 8)], {
      extractedAt: extractedAt(2),
    })
    expect(await states(h)).toEqual([
      [1, 'South', 20, false],
      [1, null, 30, false],
      [1, null, 40, true],
    ])
  })

  it('an event sent again beside a newer event of its key lends that event none of its values: the newer one folds from the state captured last', async () => {
    // A CDC tool restarting re-delivers the update of day 1 with the new one of day 7; the key changed on day 3.
    const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['score'] } } })
    await h.load([ev('I', 1, 'A', 20, 1)], { extractedAt: extractedAt(1) })
    await h.load([ev('U', 1, 'A', 30, 3)], { extractedAt: extractedAt(2) })
    await h.load([ev('I', 1, 'A', 20, 1), ev('U', 1, 'B', null, 7)], { extractedAt: extractedAt(3) })
    expect(await states(h)).toEqual([
      [1, 'A', 20, false],
      [1, 'A', 30, false],
      [1, 'B', 30, true],
    ])
    // The same after a delete sent again: the key was deleted on day 6 and starts from nothing on day 7.
    const deleted = await feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['score'] } } })
    await deleted.load([ev('I', 2, 'A', 20, 1)], { extractedAt: extractedAt(1) })
    await deleted.load([ev('D', 2, 'A', 20, 6)], { extractedAt: extractedAt(2) })
    await deleted.load([ev('I', 2, 'A', 20, 1), ev('D', 2, 'A', 20, 6), ev('U', 2, 'B', null, 7)], {
      extractedAt: extractedAt(3),
    })
    expect(await states(deleted)).toEqual([
      [2, 'A', 20, false],
      [2, 'B', null, true],
    ])
  })

  it('a delete sent again beside a newer event of its key lends that event none of its values (ignored NULLs and kept columns alike)', async () => {
    // A feed re-delivering its older events with new ones (a CDC tool's restart): the delete of day 5 is captured
    // already, the key was deleted again on day 6, so the event of day 7 starts from nothing.
    const h = await feed({
      deletes: 'new_record',
      partialUpdates: { ignoreNulls: { kind: 'list', columns: ['score'] } },
    })
    await h.load([ev('I', 1, 'A', 20, 1), ev('D', 1, 'A', 99, 5)], { extractedAt: extractedAt(1) })
    await h.load([ev('D', 1, 'A', 99, 6)], { extractedAt: extractedAt(2) })
    await h.load([ev('D', 1, 'A', 99, 5), ev('U', 1, 'B', null, 7)], { extractedAt: extractedAt(3) })
    expect(await states(h)).toEqual([
      [1, 'A', 20, false],
      [1, 'A', 20, false],
      [1, 'B', null, true],
    ])
    const kept = await feed({ deletes: 'invalidate', partialUpdates: { columnsToUpdate: ['score'] } })
    await kept.load([ev('I', 2, 'A', 20, 1), ev('D', 2, 'X', 99, 5)], { extractedAt: extractedAt(1) })
    await kept.load([ev('D', 2, 'X', 99, 6)], { extractedAt: extractedAt(2) })
    await kept.load([ev('D', 2, 'X', 99, 5), ev('I', 2, 'B', 30, 7)], { extractedAt: extractedAt(3) })
    expect(await states(kept)).toEqual([
      [2, 'A', 20, false],
      [2, 'B', 30, true],
    ])
  })

  describe('a late partial event folds into the state at its own time, and the later versions of its key follow', () => {
    it('the late event between two captures: (A, 20) at 1, (B, NULL) at 5, then (NULL, 30) at 3 gives (A, 30) from 3 and (B, 30) from 5', async () => {
      const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'all' } } })
      const first = [ev('I', 1, 'A', 20, 1), ev('U', 1, 'B', null, 5)]
      await h.load(first, { extractedAt: extractedAt(1) })
      expect(await states(h)).toEqual([
        [1, 'A', 20, false],
        [1, 'B', 20, true],
      ])
      await h.load([ev('U', 1, null, 30, 3)], { extractedAt: extractedAt(2) })
      const expected = [
        [1, 'A', 20, false],
        [1, 'A', 30, false],
        [1, 'B', 30, true],
      ]
      expect(await states(h)).toEqual(expected)
      expect((await h.history()).map((r) => [r.valid_from, r.valid_to])).toEqual([
        ['2024-01-01 00:00:00+00', '2024-01-03 00:00:00+00'],
        ['2024-01-03 00:00:00+00', '2024-01-05 00:00:00+00'],
        ['2024-01-05 00:00:00+00', null],
      ])
      // The first batch delivered again (as a new batch) says what it said before: nothing changes.
      await h.load(first, { extractedAt: extractedAt(3) })
      expect(await states(h)).toEqual(expected)
      // A later event still folds from the current state.
      await h.load([ev('U', 1, null, 40, 6)], { extractedAt: extractedAt(4) })
      expect((await states(h)).at(-1)).toEqual([1, 'B', 40, true])
    })

    it('several late events of several keys, with a new key, in one batch', async () => {
      const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['name'] } } })
      await h.load(
        [ev('I', 1, 'A', 20, 1), ev('U', 1, 'B', 21, 5), ev('I', 2, 'X', 1, 1), ev('U', 2, null, 2, 4)],
        { extractedAt: extractedAt(1) },
      )
      await h.load(
        [ev('U', 2, 'Y', 3, 2), ev('U', 1, null, 30, 3), ev('U', 1, null, 31, 4), ev('I', 3, 'N', 9, 2)],
        { extractedAt: extractedAt(2) },
      )
      expect(await states(h)).toEqual([
        [1, 'A', 20, false],
        [1, 'A', 30, false],
        [1, 'A', 31, false],
        [1, 'B', 21, true],
        [2, 'X', 1, false],
        [2, 'Y', 3, false],
        [2, 'Y', 2, true],
        [3, 'N', 9, true],
      ])
    })

    it('a late event before a delete of its key: the fold starts again after the delete; columns_to_update keeps the value at its time', async () => {
      const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'all' }, columnsToUpdate: ['score'] } })
      await h.load([ev('I', 1, 'A', 20, 1), ev('D', 1, null, null, 5), ev('I', 1, 'C', null, 6)], {
        extractedAt: extractedAt(1),
      })
      expect(await states(h)).toEqual([
        [1, 'A', 20, false],
        [1, 'C', null, true],
      ])
      await h.load([ev('U', 1, 'Z', 30, 3)], { extractedAt: extractedAt(2) })
      expect(await states(h)).toEqual([
        [1, 'A', 20, false],
        [1, 'A', 30, false],
        [1, 'C', null, true],
      ])
    })

    it('deletes: ignore: a delete means nothing to the fold, in one batch and in a late refold alike (its values fill nothing either)', async () => {
      const h = await feed({
        deletes: 'ignore',
        partialUpdates: { ignoreNulls: { kind: 'list', columns: ['name'] } },
      })
      await h.load([ev('I', 1, 'South', 20, 1), ev('D', 1, 'North', 99, 6), ev('I', 1, null, 30, 7)], {
        extractedAt: extractedAt(1),
      })
      // The event at 7 folds from the state at 1, as if the delete had never been sent.
      expect(await states(h)).toEqual([
        [1, 'South', 20, false],
        [1, 'South', 30, true],
      ])
      // A late event refolds the key's captures: the same states, with the late one slotted in.
      await h.load([ev('U', 1, null, 25, 3)], { extractedAt: extractedAt(2) })
      expect(await states(h)).toEqual([
        [1, 'South', 20, false],
        [1, 'South', 25, false],
        [1, 'South', 30, true],
      ])
    })

    it('a type 1 column takes the value of the newest capture folded in time order, not the batch fold', async () => {
      const h = await feed({
        tracked: { kind: 'list', columns: ['name'] },
        partialUpdates: { ignoreNulls: { kind: 'all' } },
      })
      await h.load([ev('I', 1, 'A', 20, 1), ev('U', 1, 'B', 25, 5)], { extractedAt: extractedAt(1) })
      // Folded in time order: (A, 20) at 1, (A, 30) at 3, (B, 25) at 5, (B, 25) at 7; score is type 1.
      await h.load([ev('U', 1, null, 30, 3), ev('U', 1, null, null, 7)], { extractedAt: extractedAt(2) })
      expect(await states(h)).toEqual([
        [1, 'A', 25, false],
        [1, 'B', 25, true],
      ])
    })

    it("after a widened type (INTEGER to BIGINT) the capture log's raw column is widened too and a late event still folds", async () => {
      const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'all' } } })
      await h.load([ev('I', 1, 'A', 20, 1), ev('U', 1, 'B', null, 5)], { extractedAt: extractedAt(1) })
      const wide = FEED.map((c) => (c.name === 'score' ? { ...c, type: 'BIGINT' } : c))
      await h.merge(await h.stage([ev('U', 1, null, 30, 3)], { extractedAt: extractedAt(2), columns: wide }))
      expect(await states(h)).toEqual([
        [1, 'A', 20, false],
        [1, 'A', 30, false],
        [1, 'B', 30, true],
      ])
      const types = await h.query(
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'dim_customer_dimsync_captures' AND column_name = 'raw_score'",
      )
      expect(types).toEqual([{ data_type: 'BIGINT' }])
    })

    it('a bitemporal table: the refolded versions are known from this merge, the rows they replace keep everything but system_to', async () => {
      const h = await feed({
        systemTime: { systemFrom: 'system_from', systemTo: 'system_to' },
        partialUpdates: { ignoreNulls: { kind: 'all' } },
      })
      await h.load([ev('I', 1, 'A', 20, 1), ev('U', 1, 'B', null, 5)], { extractedAt: extractedAt(1) })
      const all = 'SELECT * EXCLUDE (system_to) FROM main.dim_customer ORDER BY dimsync_sk, system_from'
      const before = await h.query(all)
      await h.load([ev('U', 1, null, 30, 3)], { extractedAt: extractedAt(2) })
      const knownNow = await h.query(
        'SELECT name, score, CAST(valid_from AS VARCHAR) AS valid_from, CAST(valid_to AS VARCHAR) AS valid_to FROM main.dim_customer WHERE system_to IS NULL ORDER BY valid_from',
      )
      expect(knownNow.map((r) => [r.name, r.score, r.valid_from, r.valid_to])).toEqual([
        ['A', 20, '2024-01-01 00:00:00+00', '2024-01-03 00:00:00+00'],
        ['A', 30, '2024-01-03 00:00:00+00', '2024-01-05 00:00:00+00'],
        ['B', 30, '2024-01-05 00:00:00+00', null],
      ])
      const after = await h.query(all)
      for (const row of before) expect(after).toContainEqual(row)
    })

    it('a key whose capture log predates raw values is refused, naming the table and the key; nothing is written', async () => {
      const h = await feed({ partialUpdates: { ignoreNulls: { kind: 'all' } } })
      await h.load([ev('I', 1, 'A', 20, 1), ev('U', 1, 'B', null, 5), ev('I', 2, 'X', 1, 1)], {
        extractedAt: extractedAt(1),
      })
      await h.query('UPDATE main.dim_customer_dimsync_captures SET raw_logged = NULL WHERE id = 1')
      const before = await h.history()
      await expect(
        h.load([ev('U', 1, null, 30, 3), ev('U', 2, null, 2, 2)], { extractedAt: extractedAt(2) }),
      ).rejects.toThrow(
        /^table customers: batch b0002: key id=1 has an event at 2024-01-03 00:00:00\+00, not after its state captured at 2024-01-05 00:00:00\+00 \(batch b0001\): a late event of a table with partial updates .*nothing was written$/,
      )
      expect(await h.history()).toEqual(before)
    })
  })

  it('columns_to_update: the other columns of an existing key keep their values; a new key takes its first row', async () => {
    harness = await ScdHarness.create(
      tableSpec({
        key: ['id'],
        extract: { mode: 'incremental', cursor: 'score', lookbackMinutes: 0 },
        partialUpdates: { columnsToUpdate: ['score'] },
      }),
      DELTA,
    )
    await harness.load([{ id: 1, name: 'A', score: 20 }], { extractedAt: extractedAt(1) })
    await harness.load(
      [
        { id: 1, name: 'ignored', score: 30 },
        { id: 3, name: 'N', score: 1 },
      ],
      { extractedAt: extractedAt(2) },
    )
    // score is untracked (it is the cursor): overwritten in place; name kept, so no new version.
    expect((await harness.history()).map((r) => [r.id, r.name, r.score, r.is_current])).toEqual([
      [1, 'A', 30, true],
      [3, 'N', 1, true],
    ])
  })
})
