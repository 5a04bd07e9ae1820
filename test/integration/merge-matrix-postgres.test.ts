import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DuckDbAndPostgres } from '../support/duckdb-and-postgres.ts'
import type { Value } from '../support/staged-batches.ts'
import { withoutEmptyDimension, kind } from '../support/warehouse-contract-scenarios.ts'
import { mergeConfigMatrix, STAGED } from '../support/zetasql/merge-config-matrix.ts'

/**
 * Every table configuration of the BigQuery merge matrix (both key shapes, every delete policy, both open ends,
 * every preset, snapshots, change times, deltas, change feeds with and without a sequence, mirror and append
 * modes, column policies, bitemporal tables) merged into DuckDB and PostgreSQL: three batches with
 * changes, a new key, a vanished or deleted key, a soft delete and a late event, values of every staged type. After
 * every merge both report the same outcome, and at the end they hold the same rows.
 */

const day = (d: number, minutes = 0) => new Date(Date.UTC(2024, 2, d, 0, minutes)).toISOString()

function row(
  id: number,
  at: string,
  options: { op?: string; region?: string; seq?: number; deleted?: boolean; score?: number } = {},
): Record<string, Value> {
  return {
    tenant_id: id % 2 === 0 ? 'even' : 'odd',
    customer_id: id,
    name: `customer ${id}`,
    region: options.region ?? 'South',
    balance: `${id}.50`,
    score: options.score ?? id / 10,
    visits: id * 3,
    signup: '2020-01-0' + String(id),
    opens_at: '09:0' + String(id) + ':00.25',
    photo: `\\x0${id}FF`,
    active: id % 2 === 0,
    last_login: day(1, id),
    local_seen: '2024-03-01 10:00:00.000001',
    updated_at: at,
    changed_at: at,
    deleted_at: options.deleted ? at : null,
    Op: options.op ?? 'U',
    change_seq: options.seq ?? id,
  }
}

/** Three batches: a first load; changes, a new key and a vanished one; a late event, a soft delete and a change. */
const BATCHES: { rows: Record<string, Value>[]; extractedAt: string }[] = [
  {
    extractedAt: day(2),
    rows: [1, 2, 3, 4].map((id) => row(id, day(1, id * 10), { op: 'I' })),
  },
  {
    extractedAt: day(4),
    rows: [
      row(1, day(3, 10), { region: 'North', score: 1e20 }),
      row(2, day(3, 20), { region: 'East' }),
      row(3, day(1, 30)),
      row(5, day(3, 50), { op: 'I' }),
      row(4, day(3, 40), { op: 'D' }),
    ],
  },
  {
    extractedAt: day(6),
    rows: [
      row(1, day(2, 10), { region: 'West', seq: 11 }),
      row(2, day(5, 20), { region: 'East', deleted: true, seq: 12 }),
      row(3, day(5, 30), { region: 'North', score: 0.25, seq: 13 }),
      row(5, day(3, 50), { op: 'I' }),
    ],
  },
]

let pair: DuckDbAndPostgres
beforeAll(async () => {
  pair = await DuckDbAndPostgres.start()
})
afterAll(async () => {
  await pair?.stop()
})

const cases = mergeConfigMatrix().filter((c) => c.existing === undefined)

describe('every merge configuration: DuckDB and PostgreSQL agree', () => {
  const merged = new Set<string>()

  // The cases share nothing but the staging store: they run side by side, so that one waits on PostgreSQL while
  // another works in DuckDB.
  it.concurrent.for(cases.map((c) => [c.title, c] as const))('%s', async ([_title, c], { expect }) => {
    const dimension = await pair.open(c.table, STAGED)
    try {
      for (const [i, batch] of BATCHES.entries()) {
        // A snapshot holds no delete event: key 4 vanishes instead.
        const rows = c.table.changes === undefined ? batch.rows.filter((r) => r.Op !== 'D') : batch.rows
        const batchId = await dimension.stage(rows, { extractedAt: batch.extractedAt })
        const outcome = await dimension.merge(batchId, { allowMassDelete: true })
        expect(outcome.postgres, `batch ${i + 1}: the same outcome on PostgreSQL`).toEqual(outcome.duckdb)
        if (kind(outcome.duckdb) === 'merged') merged.add(`${c.title} ${i}`)
      }
      const held = await dimension.holdings([day(1, 35), day(3, 45), day(7)])
      expect(withoutEmptyDimension(held.postgres), 'the same rows on PostgreSQL').toEqual(
        withoutEmptyDimension(held.duckdb),
      )
    } finally {
      await dimension.close()
    }
  })

  it('merged most batches (the comparison is not of refusals only)', () => {
    expect(merged.size).toBeGreaterThan(cases.length * 2)
  })
})
