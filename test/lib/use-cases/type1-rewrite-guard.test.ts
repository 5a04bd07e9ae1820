import { afterEach, describe, expect, it } from 'vitest'
import type { DuckDbWarehouse } from '../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { probeBefore } from '../../support/guard-check.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/**
 * The type 1 rewrite reads every version of the dimension on BigQuery (closed history included), so it must run
 * only when a version can hold other type 1 values than its key's newest: a type 1 value changed, or a key a delete
 * closed comes back. A new key has no other version, and an ordinary batch of new keys and tracked changes must
 * leave it out (docs/bigquery.md, what a merge costs). Real DuckDB, every guard's verdict recorded.
 */

const REWRITE = 'overwrite type 1 columns'
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'phone', type: 'VARCHAR' },
]
const at = (day: number) => new Date(Date.UTC(2024, 0, day)).toISOString()

/** The verdicts of the guard of statement `label`, one per merge that rendered it. */
function recordGuard(warehouse: DuckDbWarehouse, label: string): boolean[] {
  const verdicts: boolean[] = []
  probeBefore(warehouse, label, async (tx, statement) => {
    if (statement.onlyIf === undefined) return
    const [guard] = await tx.query(`SELECT (${statement.onlyIf}) AS needed`)
    verdicts.push(guard?.needed === true)
  })
  return verdicts
}

let h: ScdHarness | undefined
afterEach(async () => {
  await h?.dispose()
  h = undefined
})

describe('the type 1 rewrite runs only when a version can hold other type 1 values (snapshots, invalidate)', () => {
  it('new keys and tracked changes: no rewrite; a changed type 1 value or a key back after a delete: rewrite', async () => {
    const table = tableSpec({ deletes: 'invalidate', tracked: { kind: 'all_except', columns: ['phone'] } })
    h = await ScdHarness.create(table, COLUMNS)
    const verdicts = recordGuard(h.warehouse, REWRITE)
    const row = (customer_id: number, region: string, phone: string) => ({ customer_id, region, phone })
    const load = async (rows: ReturnType<typeof row>[], day: number) => {
      const result = await h!.load(rows, { extractedAt: at(day), allowMassDelete: true })
      expect(result.status).toBe('merged')
    }
    await load([row(101, 'South', 'a'), row(102, 'North', 'b')], 1)
    // An ordinary batch: Ana moves (tracked), Bruno is unchanged, Chloé is new; no type 1 value changes.
    await load([row(101, 'North', 'a'), row(102, 'North', 'b'), row(103, 'East', 'c')], 2)
    expect(verdicts.at(-1), 'a new key and a tracked change do not rewrite type 1 columns').toBe(false)
    // Bruno's phone changes: every version of Bruno takes it.
    await load([row(101, 'North', 'a'), row(102, 'North', 'b2'), row(103, 'East', 'c')], 3)
    expect(verdicts.at(-1), 'a changed type 1 value rewrites').toBe(true)
    // Chloé is deleted, then comes back with another phone: her closed version takes it.
    await load([row(101, 'North', 'a'), row(102, 'North', 'b2')], 4)
    await load([row(101, 'North', 'a'), row(102, 'North', 'b2'), row(103, 'West', 'c2')], 5)
    expect(verdicts.at(-1), 'a key back after a delete rewrites its closed versions').toBe(true)
    const phones = await h.query(
      'SELECT customer_id, region, phone FROM main.dim_customer WHERE customer_id IS NOT NULL ORDER BY customer_id, valid_from',
    )
    expect(phones.map((r) => `${String(r.customer_id)} ${String(r.region)} ${String(r.phone)}`)).toEqual([
      '101 South a',
      '101 North a',
      '102 North b2',
      '103 East c2',
      '103 West c2',
    ])
  })
})

describe('types 0, 3 and 6 are read from history only when the open partition is not enough (snapshots, invalidate)', () => {
  it('new keys: not from history; a key back after a delete: from history', async () => {
    const table = tableSpec({
      deletes: 'invalidate',
      policies: { keepFirst: ['phone'], currentValue: ['region'], previousValue: ['region'] },
    })
    h = await ScdHarness.create(table, COLUMNS)
    const verdicts = recordGuard(h.warehouse, 'column policies: keys the batch touched')
    const row = (customer_id: number, region: string, phone: string) => ({ customer_id, region, phone })
    const load = async (rows: ReturnType<typeof row>[], day: number) => {
      const result = await h!.load(rows, { extractedAt: at(day), allowMassDelete: true })
      expect(result.status).toBe('merged')
    }
    await load([row(101, 'South', 'a'), row(102, 'North', 'b')], 1)
    const before = verdicts.length
    // A new key, and Bruno unchanged: the open partition holds every value the new versions need.
    await load([row(101, 'South', 'a'), row(102, 'North', 'b'), row(103, 'East', 'c')], 2)
    expect(verdicts.slice(before), 'a new key does not read history').toEqual([false])
    // Chloé is deleted, then comes back elsewhere: her closed version must take the current value.
    await load([row(101, 'South', 'a'), row(102, 'North', 'b')], 3)
    await load([row(101, 'South', 'a'), row(102, 'North', 'b'), row(103, 'West', 'c2')], 4)
    expect(verdicts.at(-1), 'a key back after a delete reads its history').toBe(true)
    const rows = await h.query(
      'SELECT customer_id, region, phone, current_region, previous_region FROM main.dim_customer WHERE customer_id = 103 ORDER BY valid_from',
    )
    expect(rows.map((r) => Object.values(r).map(String).join(' '))).toEqual([
      '103 East c West East',
      '103 West c West East',
    ])
  })
})
