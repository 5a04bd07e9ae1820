import { afterEach, describe, expect, it } from 'vitest'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/*
 * A merge takes the next surrogate key from the dimension's record of the highest key given out
 * (<target>_dimsync_keys), not from MAX over the key column, which on BigQuery reads every version.
 */

const CUSTOMER = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
]
const JAN = '2024-01-01T09:00:00Z'
const MAR = '2024-03-10T14:30:00Z'
const ana = (region: string) => ({ customer_id: 101, name: 'Ana', region })
const bruno = { customer_id: 102, name: 'Bruno', region: 'North' }
const diego = { customer_id: 104, name: 'Diego', region: 'West' }
const RECORD = 'main.dim_customer_dimsync_keys'

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})
async function setup(overrides: Partial<TableSpec> = {}): Promise<ScdHarness> {
  harness = await ScdHarness.create(tableSpec(overrides), CUSTOMER)
  return harness
}
async function keysByCustomer(h: ScdHarness) {
  return (await h.query('SELECT dimsync_sk, customer_id, region FROM dim_customer ORDER BY 1')).map((r) => [
    Number(r.dimsync_sk),
    Number(r.customer_id),
    r.region,
  ])
}
async function recorded(h: ScdHarness): Promise<number[]> {
  return (await h.query(`SELECT highest_surrogate_key AS k FROM ${RECORD}`)).map((r) => Number(r.k))
}

describe('surrogate keys come from the record of the highest key given out', () => {
  it('a first load records its highest key; the next batch numbers after the record, not after MAX', async () => {
    const h = await setup({ deletes: 'invalidate' })
    await h.load([ana('South'), bruno], { extractedAt: JAN })
    expect(await recorded(h)).toEqual([2])
    // Keys 3 … 100 were given out elsewhere (say, versions a user removed): the record says so.
    await h.query(`UPDATE ${RECORD} SET highest_surrogate_key = 100`)
    await h.load([ana('North'), bruno, diego], { extractedAt: MAR })
    expect(await keysByCustomer(h)).toEqual([
      [1, 101, 'South'],
      [2, 102, 'North'],
      [101, 101, 'North'],
      [102, 104, 'West'],
    ])
    expect(await recorded(h)).toEqual([102])
  })

  it('a dimension an older dimsync wrote (no record) reads its highest key once, then records it', async () => {
    const h = await setup({ deletes: 'invalidate' })
    await h.load([ana('South'), bruno], { extractedAt: JAN })
    await h.query(`DROP TABLE ${RECORD}`)
    await h.load([ana('North'), bruno, diego], { extractedAt: MAR })
    expect(await keysByCustomer(h)).toEqual([
      [1, 101, 'South'],
      [2, 102, 'North'],
      [3, 101, 'North'],
      [4, 104, 'West'],
    ])
    expect(await recorded(h)).toEqual([4])
  })

  it('append tables record the keys of every appended extract', async () => {
    const h = await setup({ mode: 'append' })
    await h.load([ana('South'), bruno], { extractedAt: JAN })
    await h.query(`UPDATE ${RECORD} SET highest_surrogate_key = 50`)
    await h.load([ana('South'), bruno], { extractedAt: MAR })
    expect((await keysByCustomer(h)).map(([sk]) => sk)).toEqual([1, 2, 51, 52])
    expect(await recorded(h)).toEqual([52])
  })

  it('a batch larger than a bucket is numbered per bucket: unique keys above every earlier one, all recorded', async () => {
    const h = await setup({ deletes: 'invalidate' })
    const customers = (region: string, ids: number[]) =>
      ids.map((id) => ({ customer_id: id, name: `c${id}`, region }))
    const ids = Array.from({ length: 40 }, (_, i) => 1000 + i * 7)
    await h.load(customers('South', ids), { extractedAt: JAN, rowsPerKeyBucket: 8 })
    const first = (await keysByCustomer(h)).map(([sk]) => sk as number)
    // Five buckets of about 8 keys: not the ordered numbering 1 … 40 (which one bucket would give).
    expect(first).not.toEqual(ids.map((_, i) => i + 1))
    expect(new Set(first).size).toBe(40)
    expect(Math.min(...first)).toBeGreaterThan(0)
    const [afterFirst] = await recorded(h)
    expect(afterFirst).toBeGreaterThanOrEqual(Math.max(...first))
    // Half the keys change, ten are new.
    const changed = ids.filter((_, i) => i % 2 === 0)
    const added = Array.from({ length: 10 }, (_, i) => 5000 + i)
    await h.load(
      [
        ...customers('North', [...changed, ...added]),
        ...customers(
          'South',
          ids.filter((_, i) => i % 2 === 1),
        ),
      ],
      {
        extractedAt: MAR,
        rowsPerKeyBucket: 8,
      },
    )
    const all = (await keysByCustomer(h)).map(([sk]) => sk as number)
    const second = all.filter((sk) => !first.includes(sk))
    expect(second).toHaveLength(changed.length + added.length)
    expect(new Set(all).size).toBe(all.length)
    expect(Math.min(...second)).toBeGreaterThan(afterFirst!)
    expect((await recorded(h))[0]).toBeGreaterThanOrEqual(Math.max(...second))
  })
})
