import { afterEach, describe, expect, it } from 'vitest'
import { presetTableFields } from '../../lib/config/table-options.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ScdHarness, type VersionRow } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const CUSTOMER = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
]
const JAN = '2024-01-01T09:00:00Z'
const MAR = '2024-03-10T14:30:00Z'
const MAY = '2024-05-01T00:00:00Z'
const ana = (region: string | null) => ({ customer_id: 101, name: 'Ana', region })
const bruno = { customer_id: 102, name: 'Bruno', region: 'North' }
const carla = { customer_id: 103, name: 'Carla', region: 'South' }
const diego = { customer_id: 104, name: 'Diego', region: 'West' }

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})
async function setup(overrides: Partial<TableSpec> = {}, columns = CUSTOMER): Promise<ScdHarness> {
  harness = await ScdHarness.create(tableSpec(overrides), columns)
  return harness
}
/** [sk, key, region, valid_from, valid_to, is_current, is_deleted] with times shortened to 'YYYY-MM-DD HH:MM'. */
function timeline(rows: VersionRow[], attribute = 'region') {
  const short = (v: unknown) => (v === null ? null : String(v).slice(0, 16))
  return rows.map((r) => [
    r.dimsync_sk,
    r.customer_id,
    r[attribute],
    short(r.valid_from),
    short(r.valid_to),
    r.is_current,
    r.is_deleted,
  ])
}

describe('SCD2 scenarios on real DuckDB', () => {
  it('initial load opens one current version per key with surrogate keys from 1', async () => {
    const h = await setup()
    const result = await h.load([ana('South'), bruno, carla], { extractedAt: JAN })
    expect(result.counts).toMatchObject({ events: 3, insertedVersions: 3, closedVersions: 0 })
    expect(timeline(await h.history())).toEqual([
      [1, 101, 'South', '2024-01-01 09:00', null, true, false],
      [2, 102, 'North', '2024-01-01 09:00', null, true, false],
      [3, 103, 'South', '2024-01-01 09:00', null, true, false],
    ])
  })

  it('quickstart, deletes=ignore: a change closes the old version at the extraction time; absence changes nothing', async () => {
    const h = await setup({ deletes: 'ignore' })
    await h.load([ana('South'), bruno, carla], { extractedAt: JAN })
    const result = await h.load([ana('North'), bruno, diego], { extractedAt: MAR })
    expect(result.counts).toMatchObject({
      events: 3,
      insertedVersions: 2,
      closedVersions: 1,
      unchangedEvents: 1,
      deletedKeys: 0,
    })
    expect(timeline(await h.history())).toEqual([
      [1, 101, 'South', '2024-01-01 09:00', '2024-03-10 14:30', false, false],
      [4, 101, 'North', '2024-03-10 14:30', null, true, false],
      [2, 102, 'North', '2024-01-01 09:00', null, true, false],
      [3, 103, 'South', '2024-01-01 09:00', null, true, false],
      [5, 104, 'West', '2024-03-10 14:30', null, true, false],
    ])
    const asOf = await h.query(
      `SELECT customer_id, region FROM dim_customer_as_of('2024-02-01') ORDER BY customer_id`,
    )
    expect(asOf).toEqual([
      { customer_id: 101, region: 'South' },
      { customer_id: 102, region: 'North' },
      { customer_id: 103, region: 'South' },
    ])
  })

  it('deletes=invalidate closes an absent key at the extraction time; the current view drops it', async () => {
    const h = await setup({ deletes: 'invalidate' })
    await h.load([ana('South'), bruno, carla], { extractedAt: JAN })
    const result = await h.load([ana('South'), bruno, diego], { extractedAt: MAR })
    expect(result.counts).toMatchObject({ deletedKeys: 1, insertedVersions: 1, closedVersions: 1 })
    expect(timeline(await h.history())).toEqual([
      [1, 101, 'South', '2024-01-01 09:00', null, true, false],
      [2, 102, 'North', '2024-01-01 09:00', null, true, false],
      [3, 103, 'South', '2024-01-01 09:00', '2024-03-10 14:30', false, false],
      [4, 104, 'West', '2024-03-10 14:30', null, true, false],
    ])
    expect(await h.query('SELECT customer_id FROM dim_customer_current ORDER BY 1')).toEqual([
      { customer_id: 101 },
      { customer_id: 102 },
      { customer_id: 104 },
    ])
  })

  it('deletes=new_record closes an absent key and opens a version flagged deleted with its last attributes', async () => {
    const h = await setup({ deletes: 'new_record' })
    await h.load([ana('South'), bruno, carla], { extractedAt: JAN })
    await h.load([ana('South'), bruno], { extractedAt: MAR })
    const carlaRows = (await h.history()).filter((r) => r.customer_id === 103)
    expect(timeline(carlaRows)).toEqual([
      [3, 103, 'South', '2024-01-01 09:00', '2024-03-10 14:30', false, false],
      [4, 103, 'South', '2024-03-10 14:30', null, true, true],
    ])
    expect(carlaRows[1]!.name).toBe('Carla')
  })

  it.each(['invalidate', 'new_record'] as const)(
    'a deleted key that comes back opens a new version (deletes=%s)',
    async (deletes) => {
      const h = await setup({ deletes })
      await h.load([ana('South'), bruno, carla], { extractedAt: JAN })
      await h.load([ana('South'), bruno], { extractedAt: MAR })
      await h.load([ana('South'), bruno, carla], { extractedAt: MAY })
      const carlaRows = timeline((await h.history()).filter((r) => r.customer_id === 103))
      const restored = carlaRows.at(-1)
      expect(restored).toEqual([
        deletes === 'invalidate' ? 4 : 5,
        103,
        'South',
        '2024-05-01 00:00',
        null,
        true,
        false,
      ])
      expect(carlaRows).toHaveLength(deletes === 'invalidate' ? 2 : 3)
    },
  )

  it('the same batch merged twice changes nothing the second time', async () => {
    const h = await setup({ deletes: 'invalidate' })
    await h.load([ana('South'), bruno, carla], { extractedAt: JAN })
    const batch = await h.stage([ana('North'), bruno], { extractedAt: MAR })
    await h.merge(batch)
    const before = await h.history()
    const again = await h.merge(batch)
    expect(again.status).toBe('already-applied')
    expect(await h.history()).toEqual(before)
  })

  it('an unchanged snapshot adds no version', async () => {
    const h = await setup()
    await h.load([ana('South'), bruno], { extractedAt: JAN })
    const result = await h.load([ana('South'), bruno], { extractedAt: MAR })
    expect(result.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0, unchangedEvents: 2 })
    expect(await h.history()).toHaveLength(2)
  })

  it('the mass-delete guard refuses a truncated extract and writes nothing; --allow-mass-delete overrides it', async () => {
    const h = await setup({ deletes: 'invalidate', maxDeleteShare: 0.5 })
    await h.load([ana('South'), bruno, carla, diego], { extractedAt: JAN })
    const before = await h.history()
    const batch = await h.stage([ana('North')], { extractedAt: MAR })
    await expect(h.merge(batch)).rejects.toThrow(
      /table customers: batch b0002 would delete 3 of 4 current keys \(more than the allowed share 0\.5\); nothing was written/,
    )
    expect(await h.history()).toEqual(before)
    const forced = await h.merge(batch, { allowMassDelete: true })
    expect(forced.counts).toMatchObject({ deletedKeys: 3 })
  })

  it('an empty full extract is refused by the guard', async () => {
    const h = await setup({ deletes: 'new_record' })
    await h.load([ana('South'), bruno], { extractedAt: JAN })
    await expect(h.load([], { extractedAt: MAR })).rejects.toThrow(/would delete 2 of 2 current keys/)
  })

  it('composite keys identify an entity by all their columns', async () => {
    const columns = [
      { name: 'tenant', type: 'VARCHAR' },
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
    ]
    const h = await setup({ key: ['tenant', 'customer_id'], deletes: 'invalidate' }, columns)
    await h.load(
      [
        { tenant: 'a', customer_id: 1, region: 'South' },
        { tenant: 'b', customer_id: 1, region: 'South' },
      ],
      { extractedAt: JAN },
    )
    await h.load([{ tenant: 'a', customer_id: 1, region: 'North' }], {
      extractedAt: MAR,
      allowMassDelete: true,
    })
    const rows = await h.query(
      'SELECT tenant, customer_id, region, is_current FROM dim_customer ORDER BY tenant, valid_from',
    )
    expect(rows).toEqual([
      { tenant: 'a', customer_id: 1, region: 'South', is_current: false },
      { tenant: 'a', customer_id: 1, region: 'North', is_current: true },
      { tenant: 'b', customer_id: 1, region: 'South', is_current: false },
    ])
  })

  it("NULL, '' and the string 'NULL' are three different states", async () => {
    const h = await setup()
    await h.load([ana(null)], { extractedAt: JAN })
    await h.load([ana('')], { extractedAt: MAR })
    await h.load([ana('NULL')], { extractedAt: MAY })
    expect(timeline(await h.history()).map((r) => r[2])).toEqual([null, '', 'NULL'])
  })

  it('a value moved from one column to another is a change', async () => {
    const columns = [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'first_name', type: 'VARCHAR' },
      { name: 'last_name', type: 'VARCHAR' },
    ]
    const h = await setup({}, columns)
    await h.load([{ customer_id: 1, first_name: 'Ana', last_name: null }], { extractedAt: JAN })
    await h.load([{ customer_id: 1, first_name: null, last_name: 'Ana' }], { extractedAt: MAR })
    await h.load([{ customer_id: 1, first_name: 'An', last_name: 'aAna' }], { extractedAt: MAY })
    expect(await h.history()).toHaveLength(3)
  })

  it('several events of one key in one delta give several versions, in time order', async () => {
    const columns = [...CUSTOMER, { name: 'updated_at', type: 'TIMESTAMP' }]
    const h = await setup(
      {
        extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
        validFrom: { kind: 'column', column: 'updated_at' },
      },
      columns,
    )
    await h.load(
      [
        { ...ana('North'), updated_at: '2024-02-01 00:00:00' },
        { ...ana('South'), updated_at: '2024-01-01 00:00:00' },
        { ...ana('West'), updated_at: '2024-03-01 00:00:00' },
      ],
      { extractedAt: MAR },
    )
    expect(timeline(await h.history())).toEqual([
      [1, 101, 'South', '2024-01-01 00:00', '2024-02-01 00:00', false, false],
      [2, 101, 'North', '2024-02-01 00:00', '2024-03-01 00:00', false, false],
      [3, 101, 'West', '2024-03-01 00:00', null, true, false],
    ])
  })

  it('a late event splits the window it falls into; existing versions keep their surrogate keys', async () => {
    const columns = [...CUSTOMER, { name: 'updated_at', type: 'TIMESTAMP' }]
    const h = await setup(
      {
        extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
        validFrom: { kind: 'column', column: 'updated_at' },
      },
      columns,
    )
    await h.load([{ ...ana('South'), updated_at: '2024-01-01 00:00:00' }], { extractedAt: JAN })
    await h.load([{ ...ana('West'), updated_at: '2024-03-01 00:00:00' }], { extractedAt: MAR })
    const late = await h.load([{ ...ana('North'), updated_at: '2024-02-01 00:00:00' }], { extractedAt: MAY })
    expect(late.counts).toMatchObject({ lateKeys: 1, insertedVersions: 1 })
    expect(timeline(await h.history())).toEqual([
      [1, 101, 'South', '2024-01-01 00:00', '2024-02-01 00:00', false, false],
      [3, 101, 'North', '2024-02-01 00:00', '2024-03-01 00:00', false, false],
      [2, 101, 'West', '2024-03-01 00:00', null, true, false],
    ])
  })

  it('a snapshot older than one already merged is refused when valid_from is the extraction time', async () => {
    const h = await setup()
    await h.load([ana('South')], { extractedAt: MAR })
    await expect(h.load([ana('North')], { extractedAt: JAN })).rejects.toThrow(
      /batch b0002 was extracted at 2024-01-01T09:00:00Z, not after batch b0001 .*merged in extraction order/,
    )
  })

  it('a row that changed without a new change time is refused, naming the key', async () => {
    const columns = [...CUSTOMER, { name: 'updated_at', type: 'TIMESTAMP' }]
    const h = await setup(
      {
        extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
        validFrom: { kind: 'column', column: 'updated_at' },
      },
      columns,
    )
    await h.load([{ ...ana('South'), updated_at: '2024-01-01 00:00:00' }], { extractedAt: JAN })
    await expect(
      h.load([{ ...ana('North'), updated_at: '2024-01-01 00:00:00' }], { extractedAt: MAR }),
    ).rejects.toThrow(
      /key customer_id=101 already has a different state captured at 2024-01-01 00:00:00\+00 \(batch b0001\)/,
    )
  })

  it('untracked columns are type 1: overwritten on every version of the key, no new version', async () => {
    const columns = [...CUSTOMER, { name: 'email', type: 'VARCHAR' }]
    const h = await setup({ tracked: { kind: 'list', columns: ['region'] } }, columns)
    await h.load([{ ...ana('South'), email: 'a@old' }], { extractedAt: JAN })
    await h.load([{ ...ana('North'), email: 'a@old' }], { extractedAt: MAR })
    await h.load([{ ...ana('North'), email: 'a@new' }], { extractedAt: MAY })
    const rows = await h.history()
    expect(rows.map((r) => [r.region, r.email])).toEqual([
      ['South', 'a@new'],
      ['North', 'a@new'],
    ])
  })

  it('a new source column is added to the dimension without re-versioning keys where it is NULL', async () => {
    const h = await setup()
    await h.load([ana('South'), bruno], { extractedAt: JAN })
    const wider = [...CUSTOMER, { name: 'segment', type: 'VARCHAR' }]
    const result = await h.load(
      [
        { ...ana('South'), segment: null },
        { ...bruno, segment: 'smb' },
      ],
      { extractedAt: MAR, columns: wider } as never,
    )
    expect(result.counts).toMatchObject({ insertedVersions: 1, closedVersions: 1 })
    expect((await h.history()).map((r) => [r.customer_id, r.segment, r.is_current])).toEqual([
      [101, null, true],
      [102, null, false],
      [102, 'smb', true],
    ])
  })

  it('a sentinel open end marks current versions and the as-of macro still works', async () => {
    const h = await setup({ openEnd: '9999-12-31T23:59:59Z' })
    await h.load([ana('South')], { extractedAt: JAN })
    await h.load([ana('North')], { extractedAt: MAR })
    expect(timeline(await h.history())).toEqual([
      [1, 101, 'South', '2024-01-01 09:00', '2024-03-10 14:30', false, false],
      [2, 101, 'North', '2024-03-10 14:30', '9999-12-31 23:59', true, false],
    ])
    expect(await h.query(`SELECT region FROM dim_customer_as_of('2024-04-01')`)).toEqual([
      { region: 'North' },
    ])
  })

  it("dbt column names are used when the preset is dbt, with dbt's dbt_scd_id and dbt_updated_at", async () => {
    const h = await setup(presetTableFields('dbt'))
    await h.load([ana('South')], { extractedAt: JAN })
    const rows = await h.query(
      'SELECT dbt_sk, dbt_scd_id, dbt_updated_at, dbt_valid_from, dbt_valid_to, dbt_is_deleted FROM dim_customer',
    )
    // md5('101|2024-01-01 09:00:00'): the key and dbt_updated_at as dbt-duckdb's snapshot_hash_arguments joins them
    // (its snapshot time is `now()::timestamp`); dbt_is_deleted is dbt's text.
    expect(rows).toEqual([
      {
        dbt_sk: 1,
        dbt_scd_id: '2ea788c786c028b3749a9e6b3fb0bbe9',
        dbt_updated_at: '2024-01-01 09:00:00+00',
        dbt_valid_from: '2024-01-01 09:00:00+00',
        dbt_valid_to: null,
        dbt_is_deleted: 'False',
      },
    ])
  })
})

describe('paths the main scenarios do not cross', () => {
  const SOFT = [...CUSTOMER, { name: 'deleted', type: 'BOOLEAN' }]
  const changeTime = {
    extract: { mode: 'incremental' as const, cursor: 'updated_at', lookbackMinutes: 0 },
    validFrom: { kind: 'column' as const, column: 'updated_at' },
  }

  it.each(['invalidate', 'new_record', 'ignore'] as const)(
    'a snapshot row flagged by the soft-delete column, then unflagged (deletes=%s)',
    async (deletes) => {
      const h = await setup({ deletes, softDeleteColumn: 'deleted' }, SOFT)
      await h.load(
        [
          { ...ana('South'), deleted: false },
          { ...bruno, deleted: false },
        ],
        { extractedAt: JAN },
      )
      await h.load(
        [
          { ...ana('South'), deleted: true },
          { ...bruno, deleted: false },
        ],
        { extractedAt: MAR },
      )
      await h.load(
        [
          { ...ana('South'), deleted: false },
          { ...bruno, deleted: false },
        ],
        { extractedAt: MAY },
      )
      const anaRows = timeline((await h.history()).filter((r) => r.customer_id === 101))
      const expected = {
        invalidate: [
          [1, 101, 'South', '2024-01-01 09:00', '2024-03-10 14:30', false, false],
          [3, 101, 'South', '2024-05-01 00:00', null, true, false],
        ],
        new_record: [
          [1, 101, 'South', '2024-01-01 09:00', '2024-03-10 14:30', false, false],
          [3, 101, 'South', '2024-03-10 14:30', '2024-05-01 00:00', false, true],
          [4, 101, 'South', '2024-05-01 00:00', null, true, false],
        ],
        ignore: [[1, 101, 'South', '2024-01-01 09:00', null, true, false]],
      }[deletes]
      expect(anaRows).toEqual(expected)
    },
  )

  it('one snapshot deletes a key by its soft-delete flag and another by its absence, and both come back', async () => {
    // The snapshot diff finds both kinds in one join (render-merge.ts): each key is closed once, then returns.
    const carla = { customer_id: 103, name: 'Carla', region: 'East' }
    const h = await setup({ deletes: 'invalidate', softDeleteColumn: 'deleted' }, SOFT)
    const all = [
      { ...ana('South'), deleted: false },
      { ...bruno, deleted: false },
      { ...carla, deleted: false },
    ]
    await h.load(all, { extractedAt: JAN })
    await h.load(
      [
        { ...ana('South'), deleted: true },
        { ...carla, deleted: false },
      ],
      { extractedAt: MAR, allowMassDelete: true },
    )
    await h.load(all, { extractedAt: MAY })
    expect(timeline(await h.history())).toEqual([
      [1, 101, 'South', '2024-01-01 09:00', '2024-03-10 14:30', false, false],
      [4, 101, 'South', '2024-05-01 00:00', null, true, false],
      [2, 102, 'North', '2024-01-01 09:00', '2024-03-10 14:30', false, false],
      [5, 102, 'North', '2024-05-01 00:00', null, true, false],
      [3, 103, 'East', '2024-01-01 09:00', null, true, false],
    ])
  })

  it('type 1 columns of a change-time table take the newest capture, not a late one', async () => {
    const columns = [
      ...CUSTOMER,
      { name: 'email', type: 'VARCHAR' },
      { name: 'updated_at', type: 'TIMESTAMP' },
    ]
    const h = await setup({ ...changeTime, tracked: { kind: 'list', columns: ['region'] } }, columns)
    await h.load([{ ...ana('South'), email: 'a@jan', updated_at: '2024-01-01 00:00:00' }], {
      extractedAt: JAN,
    })
    await h.load([{ ...ana('West'), email: 'a@mar', updated_at: '2024-03-01 00:00:00' }], {
      extractedAt: MAR,
    })
    await h.load([{ ...ana('North'), email: 'a@feb', updated_at: '2024-02-01 00:00:00' }], {
      extractedAt: MAY,
    })
    expect((await h.history()).map((r) => [r.region, r.email])).toEqual([
      ['South', 'a@mar'],
      ['North', 'a@mar'],
      ['West', 'a@mar'],
    ])
  })

  it("a late event of a composite key splits only that key's window", async () => {
    const columns = [
      { name: 'tenant', type: 'VARCHAR' },
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
      { name: 'updated_at', type: 'TIMESTAMP' },
    ]
    const h = await setup({ ...changeTime, key: ['tenant', 'customer_id'] }, columns)
    const row = (tenant: string, region: string, at: string) => ({
      tenant,
      customer_id: 1,
      region,
      updated_at: at,
    })
    await h.load([row('a', 'South', '2024-01-01 00:00:00'), row('b', 'South', '2024-01-01 00:00:00')], {
      extractedAt: JAN,
    })
    await h.load([row('a', 'West', '2024-03-01 00:00:00'), row('b', 'West', '2024-03-01 00:00:00')], {
      extractedAt: MAR,
    })
    const late = await h.load([row('a', 'North', '2024-02-01 00:00:00')], { extractedAt: MAY })
    expect(late.counts).toMatchObject({ lateKeys: 1, insertedVersions: 1 })
    const rows = await h.query(
      `SELECT tenant, region, strftime(valid_from, '%m') AS f, strftime(valid_to, '%m') AS t FROM dim_customer ORDER BY tenant, valid_from`,
    )
    expect(rows).toEqual([
      { tenant: 'a', region: 'South', f: '01', t: '02' },
      { tenant: 'a', region: 'North', f: '02', t: '03' },
      { tenant: 'a', region: 'West', f: '03', t: null },
      { tenant: 'b', region: 'South', f: '01', t: '03' },
      { tenant: 'b', region: 'West', f: '03', t: null },
    ])
  })
})

describe('bad batches are refused with a clear error and nothing is written', () => {
  it('duplicate keys in a full extract: names up to 10 keys and the total', async () => {
    const h = await setup()
    await h.load([ana('South')], { extractedAt: JAN })
    const before = await h.history()
    const rows = Array.from({ length: 12 }, (_, i) => [
      { customer_id: 200 + i, name: 'x', region: 'a' },
      { customer_id: 200 + i, name: 'y', region: 'b' },
    ]).flat()
    const error = await h.load(rows, { extractedAt: MAR }).catch((e: Error) => e)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toMatch(
      /^table customers: batch b0002 has 12 duplicate keys \(a full extract must hold one row per key\), for example: customer_id=200; customer_id=201; .*customer_id=209; nothing was written$/,
    )
    expect((error as Error).message).not.toContain('customer_id=210')
    expect(await h.history()).toEqual(before)
  })

  it('NULL keys', async () => {
    const h = await setup()
    await expect(
      h.load([ana('South'), { customer_id: null, name: 'x', region: 'y' }], { extractedAt: JAN }),
    ).rejects.toThrow(
      'table customers: batch b0001 has 1 rows with a NULL key (customer_id); nothing was written',
    )
    expect(await h.history()).toEqual([])
  })

  it('a key column missing from the source', async () => {
    const h = await setup({ key: ['custmer_id'] })
    await expect(h.load([ana('South')], { extractedAt: JAN })).rejects.toThrow(
      'table customers: key column "custmer_id" is not in the source (source columns: customer_id, name, region)',
    )
  })

  it('a tracked column missing from the source', async () => {
    const h = await setup({ tracked: { kind: 'list', columns: ['segment'] } })
    await expect(h.load([ana('South')], { extractedAt: JAN })).rejects.toThrow(
      /tracked column "segment" is not in the source/,
    )
  })

  it('a column whose type changed', async () => {
    const h = await setup()
    await h.load([ana('South')], { extractedAt: JAN })
    const before = await h.history()
    const changed = [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'name', type: 'VARCHAR' },
      { name: 'region', type: 'INTEGER' },
    ]
    await expect(
      h.load([{ customer_id: 101, name: 'Ana', region: 7 }], { extractedAt: MAR, columns: changed } as never),
    ).rejects.toThrow(
      'table customers: column "region" changed type from VARCHAR (dimension dim_customer) to INTEGER (source); nothing was written. ' +
        'Either give the new type a new column name in the source (the dimension keeps the old column), or rewrite the column ' +
        'in the dimension: dimsync evolve --table customers --column region',
    )
    expect(await h.history()).toEqual(before)
  })

  it('a dimension column that vanished from the source is kept: NULL on new versions, no version opened by it', async () => {
    const h = await setup({ deletes: 'invalidate' })
    await h.load([ana('South'), bruno], { extractedAt: JAN })
    const narrower = CUSTOMER.filter((c) => c.name !== 'region')
    const result = await h.load(
      [
        { customer_id: 101, name: 'Ana' },
        { customer_id: 102, name: 'Bruno B' },
      ],
      {
        extractedAt: MAR,
        columns: narrower,
      } as never,
    )
    expect(result.counts).toMatchObject({ insertedVersions: 1, closedVersions: 1, unchangedEvents: 1 })
    expect((await h.history()).map((r) => [r.customer_id, r.name, r.region, r.is_current])).toEqual([
      [101, 'Ana', 'South', true],
      [102, 'Bruno', 'North', false],
      [102, 'Bruno B', null, true],
    ])
    // Later batches without the column change nothing by themselves either.
    const again = await h.load(
      [
        { customer_id: 101, name: 'Ana' },
        { customer_id: 102, name: 'Bruno B' },
      ],
      {
        extractedAt: MAY,
        columns: narrower,
      } as never,
    )
    expect(again.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
  })

  it("removed_columns: keep_last: new versions carry the key's last value of a column the source stopped sending", async () => {
    const h = await setup({ removedColumns: 'keep_last' })
    await h.load([ana('South'), bruno], { extractedAt: JAN })
    const narrower = CUSTOMER.filter((c) => c.name !== 'region')
    await h.load(
      [
        { customer_id: 102, name: 'Bruno B' },
        { customer_id: 105, name: 'Eva' },
      ],
      {
        extractedAt: MAR,
        columns: narrower,
      } as never,
    )
    await h.load([{ customer_id: 102, name: 'Bruno C' }], { extractedAt: MAY, columns: narrower } as never)
    expect((await h.history()).map((r) => [r.customer_id, r.name, r.region])).toEqual([
      [101, 'Ana', 'South'],
      [102, 'Bruno', 'North'],
      [102, 'Bruno B', 'North'],
      [102, 'Bruno C', 'North'],
      [105, 'Eva', null],
    ])
  })
})
