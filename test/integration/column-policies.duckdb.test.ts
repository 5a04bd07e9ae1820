import { afterEach, describe, expect, it } from 'vitest'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'born', type: 'DATE' },
]
const row = (customer_id: number, name: string, region: string | null, born: string) => ({
  customer_id,
  name,
  region,
  born,
})
const day = (n: number) => `2024-01-${String(n).padStart(2, '0')}T00:00:00Z`

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function setup(overrides: Partial<TableSpec> = {}, columns = COLUMNS): Promise<ScdHarness> {
  harness = await ScdHarness.create(
    tableSpec({
      policies: { keepFirst: ['born'], previousValue: ['region'], currentValue: ['region'] },
      ...overrides,
    }),
    columns,
  )
  return harness
}

/** [sk, key, name, region, born, previous_region, current_region, valid_from day]. */
async function versions(h: ScdHarness) {
  const rows = await h.history()
  return rows.map((r) => [
    r.dimsync_sk,
    r.customer_id,
    r.name,
    r.region,
    String(r.born).slice(0, 10),
    r.previous_region,
    r.current_region,
    String(r.valid_from).slice(0, 10),
  ])
}

describe('column policies beside type 2 and type 1', () => {
  it('type 0 keeps the first value and opens nothing; type 3 keeps the value before the last change; type 6 writes the newest value on every version', async () => {
    const h = await setup()
    await h.load([row(1, 'Ann', 'South', '1980-01-01')], { extractedAt: day(1) })
    expect(await versions(h)).toEqual([[1, 1, 'Ann', 'South', '1980-01-01', null, 'South', '2024-01-01']])

    await h.load([row(1, 'Ann', 'North', '1999-09-09')], { extractedAt: day(2) })
    await h.load([row(1, 'Anna', 'North', '1999-09-09')], { extractedAt: day(3) })
    const bornOnly = await h.load(
      [row(1, 'Anna', 'North', '2000-02-02'), row(2, 'Bob', 'East', '1970-07-07')],
      {
        extractedAt: day(4),
      },
    )
    expect(bornOnly.counts).toMatchObject({ insertedVersions: 1, closedVersions: 0 })
    expect(await versions(h)).toEqual([
      [1, 1, 'Ann', 'South', '1980-01-01', 'South', 'North', '2024-01-01'],
      [2, 1, 'Ann', 'North', '1980-01-01', 'South', 'North', '2024-01-02'],
      [3, 1, 'Anna', 'North', '1980-01-01', 'South', 'North', '2024-01-03'],
      [4, 2, 'Bob', 'East', '1970-07-07', null, 'East', '2024-01-04'],
    ])
    // One table answers "as it was" (region) and "as it is" (current_region).
    expect(
      await h.query(
        "SELECT region, current_region FROM dim_customer_as_of(TIMESTAMPTZ '2024-01-01 12:00:00+00') WHERE customer_id = 1",
      ),
    ).toEqual([{ region: 'South', current_region: 'North' }])
  })

  it('a change back to an earlier value: previous is the value just before it; a NULL counts as a value', async () => {
    const h = await setup()
    await h.load([row(1, 'Ann', 'South', '1980-01-01')], { extractedAt: day(1) })
    await h.load([row(1, 'Ann', 'North', '1980-01-01')], { extractedAt: day(2) })
    await h.load([row(1, 'Ann', 'South', '1980-01-01')], { extractedAt: day(3) })
    expect((await versions(h)).map((v) => v.slice(3, 7))).toEqual([
      ['South', '1980-01-01', 'North', 'South'],
      ['North', '1980-01-01', 'North', 'South'],
      ['South', '1980-01-01', 'North', 'South'],
    ])
    await h.load([row(1, 'Ann', null, '1980-01-01')], { extractedAt: day(4) })
    expect((await versions(h)).map((v) => v.slice(5, 7))).toEqual([
      ['South', null],
      ['South', null],
      ['South', null],
      ['South', null],
    ])
  })

  it('a late event before the first version: the earliest version is the first, its value is kept everywhere', async () => {
    const h = await setup({ validFrom: { kind: 'column', column: 'changed_at' } }, [
      ...COLUMNS,
      { name: 'changed_at', type: 'TIMESTAMP' },
    ])
    const at = (d: number) => `2024-01-0${d} 00:00:00`
    await h.load([{ ...row(1, 'Ann', 'North', '1999-09-09'), changed_at: at(5) }], {
      extractedAt: day(10),
    })
    await h.load([{ ...row(1, 'Ann', 'South', '1980-01-01'), changed_at: at(2) }], {
      extractedAt: day(11),
    })
    expect((await versions(h)).map((v) => v.slice(3, 7))).toEqual([
      ['South', '1980-01-01', 'South', 'North'],
      ['North', '1980-01-01', 'South', 'North'],
    ])
  })
})
