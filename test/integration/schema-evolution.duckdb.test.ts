import { afterEach, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const columns = (types: Record<string, string>): StagedColumn[] =>
  Object.entries(types).map(([name, type]) => ({ name, type }))
const BEFORE = columns({ customer_id: 'INTEGER', name: 'VARCHAR', balance: 'DECIMAL(10,2)', score: 'FLOAT' })
const WIDENED = columns({ customer_id: 'BIGINT', name: 'VARCHAR', balance: 'DECIMAL(18,2)', score: 'DOUBLE' })
const JAN = '2024-01-01T00:00:00Z'
const FEB = '2024-02-01T00:00:00Z'
const MAR = '2024-03-01T00:00:00Z'

async function columnTypes(h: ScdHarness): Promise<Record<string, string>> {
  const rows = await h.query(
    `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'dim_customer' AND column_name IN ('customer_id', 'balance', 'score')`,
  )
  return Object.fromEntries(rows.map((r) => [String(r.column_name), String(r.data_type)]))
}

describe('schema evolution: a widened type is applied in place (real DuckDB)', () => {
  it('int → bigint, decimal precision up, float → double: the dimension takes the wider type, no version opens, values stay', async () => {
    const h = (harness = await ScdHarness.create(tableSpec({ deletes: 'invalidate' }), BEFORE))
    await h.load(
      [
        { customer_id: 1, name: 'Ana', balance: '12.50', score: 0.5 },
        { customer_id: 2, name: 'Bruno', balance: '99999999.99', score: 1.25 },
      ],
      { extractedAt: JAN },
    )
    const before = await h.history()
    const unchanged = await h.load(
      [
        { customer_id: 1, name: 'Ana', balance: '12.50', score: 0.5 },
        { customer_id: 2, name: 'Bruno', balance: '99999999.99', score: 1.25 },
      ],
      { extractedAt: FEB, columns: WIDENED } as never,
    )
    expect(unchanged.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
    expect(await columnTypes(h)).toEqual({ customer_id: 'BIGINT', balance: 'DECIMAL(18,2)', score: 'DOUBLE' })
    expect((await h.history()).map((r) => ({ ...r }))).toEqual(before)
    // The wider values fit now.
    await h.load(
      [
        { customer_id: 1, name: 'Ana', balance: '12.50', score: 0.5 },
        { customer_id: 2, name: 'Bruno', balance: '1234567890123456.78', score: 1.25 },
        { customer_id: 5_000_000_000, name: 'Chen', balance: '1.00', score: 2 },
      ],
      { extractedAt: MAR, columns: WIDENED } as never,
    )
    const current = await h.query(
      'SELECT customer_id, CAST(balance AS VARCHAR) AS balance FROM dim_customer WHERE is_current ORDER BY customer_id',
    )
    expect(current.map((r) => [String(r.customer_id), r.balance])).toEqual([
      ['1', '12.50'],
      ['2', '1234567890123456.78'],
      ['5000000000', '1.00'],
    ])
  })

  it('a narrowed or incompatible type still stops the run, naming table, column, both types and the two ways out', async () => {
    const h = (harness = await ScdHarness.create(tableSpec(), BEFORE))
    await h.load([{ customer_id: 1, name: 'Ana', balance: '12.50', score: 0.5 }], { extractedAt: JAN })
    const before = await h.history()
    for (const [column, type] of [
      ['balance', 'DECIMAL(8,2)'],
      ['balance', 'DECIMAL(12,3)'],
      ['customer_id', 'SMALLINT'],
      ['score', 'VARCHAR'],
    ] as const) {
      const changed = BEFORE.map((c) => (c.name === column ? { ...c, type } : c))
      const from = BEFORE.find((c) => c.name === column)!.type
      await expect(
        h.load([{ customer_id: 1, name: 'Ana', balance: '12.50', score: 0.5 }], {
          extractedAt: FEB,
          columns: changed,
        } as never),
      ).rejects.toThrow(
        `table customers: column "${column}" changed type from ${from} (dimension dim_customer) to ${type} (source); ` +
          'nothing was written. Either give the new type a new column name in the source (the dimension keeps the ' +
          `old column), or rewrite the column in the dimension: dimsync evolve --table customers --column ${column}`,
      )
    }
    expect(await h.history()).toEqual(before)
  })
})
