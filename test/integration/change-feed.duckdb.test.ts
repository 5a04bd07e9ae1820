import { afterEach, describe, expect, it } from 'vitest'
import type { ChangeFeedSpec, TableSpec } from '../../lib/core/table-spec.ts'
import { ScdHarness, type VersionRow } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const DMS: ChangeFeedSpec = { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } }
const FEED = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
]
const SEQUENCED = [...FEED, { name: 'seq', type: 'BIGINT' }]
const at = (day: number, hour = 0) =>
  `2024-01-${String(day).padStart(2, '0')} ${String(hour).padStart(2, '0')}:00:00`
const ev = (Op: string | null, customer_id: number, region: string | null, day: number, seq?: number) => ({
  Op,
  customer_id,
  region,
  changed_at: at(day),
  ...(seq !== undefined ? { seq } : {}),
})

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

function feedTable(overrides: Partial<TableSpec> = {}): TableSpec {
  return tableSpec({
    validFrom: { kind: 'column', column: 'changed_at' },
    changes: DMS,
    deletes: 'invalidate',
    ...overrides,
  })
}

async function setup(overrides: Partial<TableSpec> = {}, columns = FEED): Promise<ScdHarness> {
  harness = await ScdHarness.create(feedTable(overrides), columns)
  return harness
}

/** [sk, key, region, valid_from day, valid_to day, is_current, is_deleted]. */
function timeline(rows: readonly VersionRow[]) {
  const day = (v: unknown) => (v === null ? null : String(v).slice(0, 10))
  return rows.map((r) => [
    r.dimsync_sk,
    r.customer_id,
    r.region,
    day(r.valid_from),
    day(r.valid_to),
    r.is_current,
    r.is_deleted,
  ])
}

const extractedAt = (day: number) => `2024-02-${String(day).padStart(2, '0')}T00:00:00Z`

describe('change feeds (AWS DMS shape: Op = I/U/D) on real DuckDB', () => {
  it('several events of a key in one batch give several versions; a delete closes the key; the operation column is not stored', async () => {
    const h = await setup()
    const result = await h.load(
      [
        ev('I', 1, 'South', 1),
        ev('U', 1, 'North', 3),
        ev('U', 1, 'West', 5),
        ev('I', 2, 'East', 2),
        ev('D', 2, 'East', 4),
      ],
      { extractedAt: extractedAt(1) },
    )
    expect(result.counts).toMatchObject({ events: 5, insertedVersions: 4 })
    const rows = await h.history()
    expect(timeline(rows)).toEqual([
      [1, 1, 'South', '2024-01-01', '2024-01-03', false, false],
      [2, 1, 'North', '2024-01-03', '2024-01-05', false, false],
      [3, 1, 'West', '2024-01-05', null, true, false],
      [4, 2, 'East', '2024-01-02', '2024-01-04', false, false],
    ])
    expect(Object.keys(rows[0]!)).not.toContain('Op')
    expect(Object.keys(rows[0]!)).not.toContain('changed_at')
  })

  it('under deletes: new_record a delete event opens a version flagged deleted with the last attributes', async () => {
    const h = await setup({ deletes: 'new_record' })
    await h.load([ev('I', 2, 'East', 2), ev('D', 2, null, 4)], { extractedAt: extractedAt(1) })
    expect(timeline(await h.history())).toEqual([
      [1, 2, 'East', '2024-01-02', '2024-01-04', false, false],
      [2, 2, 'East', '2024-01-04', null, true, true],
    ])
  })

  it('absence means nothing: keys missing from a batch keep their current versions, even when the feed is read whole', async () => {
    const h = await setup()
    await h.load([ev('I', 1, 'South', 1), ev('I', 2, 'East', 1)], {
      extractedAt: extractedAt(1),
      mode: 'full',
    })
    const result = await h.load([ev('U', 1, 'North', 3)], { extractedAt: extractedAt(2), mode: 'full' })
    expect(result.counts).toMatchObject({ deletedKeys: 0, insertedVersions: 1, closedVersions: 1 })
    expect(timeline((await h.history()).filter((r) => r.customer_id === 2))).toEqual([
      [2, 2, 'East', '2024-01-01', null, true, false],
    ])
  })

  it('a late event is slotted in by its change time; existing versions keep their surrogate keys', async () => {
    const h = await setup()
    await h.load([ev('I', 1, 'South', 1), ev('U', 1, 'West', 5)], { extractedAt: extractedAt(1) })
    const late = await h.load([ev('U', 1, 'North', 3)], { extractedAt: extractedAt(2) })
    expect(late.counts).toMatchObject({ lateKeys: 1, insertedVersions: 1 })
    expect(timeline(await h.history())).toEqual([
      [1, 1, 'South', '2024-01-01', '2024-01-03', false, false],
      [3, 1, 'North', '2024-01-03', '2024-01-05', false, false],
      [2, 1, 'West', '2024-01-05', null, true, false],
    ])
  })

  it.each(['invalidate', 'new_record'] as const)(
    'a delete followed by an older update never resurrects the key (deletes=%s)',
    async (deletes) => {
      const h = await setup({ deletes })
      await h.load([ev('I', 1, 'South', 1), ev('D', 1, null, 5)], { extractedAt: extractedAt(1) })
      await h.load([ev('U', 1, 'North', 3)], { extractedAt: extractedAt(2) })
      const rows = timeline(await h.history())
      expect(rows.filter((r) => r[5] === true && r[6] === false)).toEqual([])
      expect(rows.map((r) => [r[2], r[3], r[4], r[6]])).toEqual(
        deletes === 'invalidate'
          ? [
              ['South', '2024-01-01', '2024-01-03', false],
              ['North', '2024-01-03', '2024-01-05', false],
            ]
          : [
              ['South', '2024-01-01', '2024-01-03', false],
              ['North', '2024-01-03', '2024-01-05', false],
              ['North', '2024-01-05', null, true],
            ],
      )
      expect(await h.query('SELECT * FROM dim_customer_current')).toEqual([])
    },
  )

  it('a re-delivered batch (the same events under a new batch id) changes nothing', async () => {
    const h = await setup()
    const events = [ev('I', 1, 'South', 1), ev('U', 1, 'North', 3), ev('D', 1, null, 4)]
    await h.load(events, { extractedAt: extractedAt(1) })
    const before = await h.history()
    const again = await h.load(events, { extractedAt: extractedAt(2) })
    expect(again.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0, unchangedEvents: 3 })
    expect(await h.history()).toEqual(before)
  })

  it('the same event twice in one batch is one event; deletes: ignore drops delete events', async () => {
    const h = await setup({ deletes: 'ignore' })
    await h.load([ev('I', 1, 'South', 1), ev('I', 1, 'South', 1), ev('D', 1, null, 2)], {
      extractedAt: extractedAt(1),
    })
    expect(timeline(await h.history())).toEqual([[1, 1, 'South', '2024-01-01', null, true, false]])
  })

  it('operation values are configurable (Debezium c/u/d/r, several values for one operation)', async () => {
    const h = await setup({
      changes: { operation: { column: 'Op', insert: ['c', 'r'], update: ['u'], delete: ['d'] } },
    })
    await h.load(
      [ev('r', 1, 'South', 1), ev('u', 1, 'North', 2), ev('c', 2, 'East', 1), ev('d', 2, null, 3)],
      {
        extractedAt: extractedAt(1),
      },
    )
    expect(timeline(await h.history()).map((r) => [r[1], r[2], r[5]])).toEqual([
      [1, 'South', false],
      [1, 'North', true],
      [2, 'East', false],
    ])
  })
})

describe('sequenced change feeds', () => {
  const sequenced = { changes: { ...DMS, sequence: 'seq' } }

  it('events of a key at the same change time: the last in sequence order is the state at that time', async () => {
    const h = await setup(sequenced, SEQUENCED)
    const result = await h.load(
      [ev('U', 1, 'North', 3, 20), ev('I', 1, 'South', 1, 1), ev('U', 1, 'West', 3, 10)],
      { extractedAt: extractedAt(1) },
    )
    expect(result.counts).toMatchObject({ events: 3, insertedVersions: 2, unchangedEvents: 1 })
    expect(timeline(await h.history())).toEqual([
      [1, 1, 'South', '2024-01-01', '2024-01-03', false, false],
      [2, 1, 'North', '2024-01-03', null, true, false],
    ])
  })

  it('an event merged later with the same change time and a higher sequence corrects the version in place', async () => {
    const h = await setup(sequenced, SEQUENCED)
    await h.load([ev('I', 1, 'South', 1, 1), ev('U', 1, 'West', 3, 10), ev('U', 1, 'East', 5, 1)], {
      extractedAt: extractedAt(1),
    })
    await h.load([ev('U', 1, 'North', 3, 20)], { extractedAt: extractedAt(2) })
    expect(timeline(await h.history())).toEqual([
      [1, 1, 'South', '2024-01-01', '2024-01-03', false, false],
      [2, 1, 'North', '2024-01-03', '2024-01-05', false, false],
      [3, 1, 'East', '2024-01-05', null, true, false],
    ])
    // An event with a lower sequence at that time changes nothing: it was superseded before it arrived.
    await h.load([ev('U', 1, 'Nowhere', 3, 15)], { extractedAt: extractedAt(3) })
    expect(timeline(await h.history())[1]).toEqual([2, 1, 'North', '2024-01-03', '2024-01-05', false, false])
  })

  it('a correction that merges two versions retires the later one; its surrogate key is never given out again', async () => {
    const h = await setup(sequenced, SEQUENCED)
    await h.load([ev('I', 1, 'South', 1, 1), ev('U', 1, 'West', 3, 1), ev('U', 1, 'South', 5, 1)], {
      extractedAt: extractedAt(1),
    })
    // The state on day 3 was South after all: one version from day 1.
    await h.load([ev('U', 1, 'South', 3, 2)], { extractedAt: extractedAt(2) })
    expect(timeline(await h.history())).toEqual([[1, 1, 'South', '2024-01-01', null, true, false]])
    const retired = await h.query(
      'SELECT dimsync_sk, customer_id, retired_by FROM dim_customer_dimsync_retired ORDER BY 1',
    )
    expect(retired).toEqual([
      { dimsync_sk: 2, customer_id: 1, retired_by: 'b0002' },
      { dimsync_sk: 3, customer_id: 1, retired_by: 'b0002' },
    ])
    await h.load([ev('U', 1, 'North', 7, 1)], { extractedAt: extractedAt(3) })
    expect(timeline(await h.history()).map((r) => r[0])).toEqual([1, 4])
  })
})

describe('bad change feeds are refused naming the key, and nothing is written', () => {
  it('an event without an operation, or with an unknown one', async () => {
    const h = await setup()
    await h.load([ev('I', 1, 'South', 1)], { extractedAt: extractedAt(1) })
    const before = await h.history()
    await expect(
      h.load([ev('U', 1, 'North', 2), ev(null, 7, 'West', 2)], { extractedAt: extractedAt(2) }),
    ).rejects.toThrow(
      'table customers: batch b0002 has 1 events whose operation (column Op) is NULL or not one of I, U, D, for example key customer_id=7 with Op NULL; nothing was written',
    )
    await expect(h.load([ev('X', 8, 'West', 2)], { extractedAt: extractedAt(3) })).rejects.toThrow(
      /has 1 events whose operation \(column Op\) is NULL or not one of I, U, D, for example key customer_id=8 with Op X; nothing was written/,
    )
    expect(await h.history()).toEqual(before)
  })

  it('an unknown operation on a row without a key (a truncate the config does not name) is refused as an unknown operation', async () => {
    const h = await setup()
    await h.load([ev('I', 1, 'South', 1)], { extractedAt: extractedAt(1) })
    const before = await h.history()
    const keyless = { ...ev('T', 0, null, 2), customer_id: null }
    await expect(h.load([keyless], { extractedAt: extractedAt(2) })).rejects.toThrow(
      /has 1 events whose operation \(column Op\) is NULL or not one of I, U, D, for example key customer_id=NULL with Op T; nothing was written\. Say what the value means in extract\.ops/,
    )
    expect(await h.history()).toEqual(before)
  })

  it('two different events of a key at the same change time without a sequence column', async () => {
    const h = await setup()
    await expect(
      h.load([ev('U', 1, 'North', 2), ev('U', 1, 'South', 2), ev('U', 2, 'East', 2)], {
        extractedAt: extractedAt(1),
      }),
    ).rejects.toThrow(
      "table customers: batch b0001 has 1 ties: events of one key with the same change time (changed_at) but different contents, so which one is the key's state is unknown (set extract.sequence to a column that orders them), for example: customer_id=1 at 2024-01-02 00:00:00; nothing was written",
    )
    expect(await h.history()).toEqual([])
  })

  it('a sequence tie between two different states of a key, and a NULL sequence', async () => {
    const h = await setup({ changes: { ...DMS, sequence: 'seq' } }, SEQUENCED)
    await expect(
      h.load([ev('U', 1, 'North', 2, 5), ev('D', 1, 'North', 2, 5)], { extractedAt: extractedAt(1) }),
    ).rejects.toThrow(
      /has 1 ties: events of one key with the same change time \(changed_at\) and sequence \(seq\) but different contents.*customer_id=1 at 2024-01-02 00:00:00 \(seq 5\); nothing was written/,
    )
    await expect(
      h.load([ev('U', 3, 'North', 2, 5), { ...ev('U', 4, 'North', 2), seq: null }], {
        extractedAt: extractedAt(2),
      }),
    ).rejects.toThrow(
      /has 1 events with a NULL sequence \(column seq\), for example key customer_id=4; nothing was written/,
    )
    expect(await h.history()).toEqual([])
  })

  it('an event that differs from one already merged at the same change time and sequence', async () => {
    const h = await setup({ changes: { ...DMS, sequence: 'seq' } }, SEQUENCED)
    await h.load([ev('I', 1, 'South', 1, 1)], { extractedAt: extractedAt(1) })
    await expect(h.load([ev('I', 1, 'North', 1, 1)], { extractedAt: extractedAt(2) })).rejects.toThrow(
      /key customer_id=1 already has a different state captured at 2024-01-01 00:00:00\+00 \(sequence 1\) \(batch b0001\): the source changed an event without changing its valid_from and sequence columns; nothing was written/,
    )
  })
})
