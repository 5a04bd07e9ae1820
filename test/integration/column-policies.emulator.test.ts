import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { BothWarehouses } from '../support/both-warehouses.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/*
 * On BigQuery the rewrite of types 0, 3 and 6 and of removed columns from every version runs only under its guard
 * (render-carried-values.ts); otherwise a new version takes its values from its key's current version before the
 * batch. The emulator evaluates the guards (DuckDB runs every statement, and its harness fails a guarded
 * statement that changes rows while its guard is false), so the same rows on both prove the values taken without
 * reading history. Each batch below is one of the cases: guard false, a changed type 3/6 value, a late event,
 * several events of a key in one batch.
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const COLUMNS: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'born', type: 'DATE' },
  { name: 'changed_at', type: 'TIMESTAMP WITH TIME ZONE' },
]
const day = (n: number) => `2024-01-${String(n + 1).padStart(2, '0')}T00:00:00Z`
const row = (customer_id: number, name: string, region: string, born: string, at: number) => ({
  customer_id,
  name,
  region,
  born,
  changed_at: day(at),
})

function versions(table: TableSpec, columns: readonly string[]) {
  return (d: SqlDialect, schema: string) => {
    const n = table.columns
    const text = (c: string) => `${d.castToString(d.quoteIdentifier(c))} AS ${d.quoteIdentifier(c)}`
    const list = [n.surrogateKey, ...table.key, ...columns, n.validFrom]
    return (
      `SELECT ${list.map(text).join(', ')} FROM ${d.table({ schema, name: table.target })} ` +
      `ORDER BY ${[...table.key, n.validFrom].map((c) => d.quoteIdentifier(c)).join(', ')}`
    )
  }
}

describe('values carried to new versions without reading history: the same rows on DuckDB and the emulator', () => {
  it('types 0, 3 and 6 over change times: no change of a derived value, a change, a late event, two events of a key', async () => {
    const table = tableSpec({
      validFrom: { kind: 'column', column: 'changed_at' },
      extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
      policies: { keepFirst: ['born'], previousValue: ['region'], currentValue: ['region'] },
    })
    const dimension = await both.open(table, COLUMNS)
    const read = versions(table, ['name', 'region', 'born', 'previous_region', 'current_region'])
    const project = (rows: readonly Record<string, unknown>[]) =>
      rows.map((r) => [r.customer_id, r.name, r.region, String(r.born), r.previous_region, r.current_region])
    try {
      const batches = [
        [row(1, 'Ann', 'South', '1980-01-01', 1), row(2, 'Bob', 'East', '1970-07-07', 1)],
        // Only a name changes: the new version takes born, previous_region and current_region from its key's
        // current version (no guard holds).
        [row(1, 'Anna', 'South', '1999-09-09', 3)],
        // A region changes: every version of key 1 takes the new current_region and previous_region.
        [row(1, 'Anna', 'North', '1999-09-09', 5)],
        // A late event of key 1 before its first version: born becomes the late event's.
        [row(1, 'A.', 'West', '1975-05-05', 0)],
        // Two events of key 2 in one batch.
        [row(2, 'Bobby', 'East', '1971-01-01', 6), row(2, 'Bobby', 'South', '1971-01-01', 7)],
      ]
      const seen = []
      for (const rows of batches) {
        const outcome = await dimension.load(rows, { extractedAt: day(20 + seen.length) })
        for (const o of [outcome.duckdb, outcome.bigquery]) if ('error' in o) throw new Error(o.message)
        const { duckdb, bigquery } = await dimension.read(read)
        expect(bigquery).toEqual(duckdb)
        seen.push(project(duckdb))
      }
      expect(seen[1]).toEqual([
        ['1', 'Ann', 'South', '1980-01-01', null, 'South'],
        ['1', 'Anna', 'South', '1980-01-01', null, 'South'],
        ['2', 'Bob', 'East', '1970-07-07', null, 'East'],
      ])
      expect(seen.at(-1)).toEqual([
        ['1', 'A.', 'West', '1975-05-05', 'South', 'North'],
        ['1', 'Ann', 'South', '1975-05-05', 'South', 'North'],
        ['1', 'Anna', 'South', '1975-05-05', 'South', 'North'],
        ['1', 'Anna', 'North', '1975-05-05', 'South', 'North'],
        ['2', 'Bob', 'East', '1970-07-07', 'East', 'South'],
        ['2', 'Bobby', 'East', '1970-07-07', 'East', 'South'],
        ['2', 'Bobby', 'South', '1970-07-07', 'East', 'South'],
      ])
    } finally {
      await dimension.close()
    }
  })

  it('removed_columns: keep_last over a change feed: the new version takes the current value, late ones the last', async () => {
    const table = tableSpec({
      validFrom: { kind: 'column', column: 'changed_at' },
      extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
      removedColumns: 'keep_last',
    })
    const wide = [...COLUMNS, { name: 'legacy', type: 'VARCHAR' }]
    const dimension = await both.open(table, wide)
    const read = versions(table, ['name', 'legacy'])
    try {
      const first = await dimension.load(
        [
          { ...row(1, 'Ann', 'South', '1980-01-01', 1), legacy: 'X1' },
          { ...row(2, 'Bob', 'East', '1970-07-07', 1), legacy: 'X2' },
        ],
        { extractedAt: day(20) },
      )
      expect(first.bigquery).toEqual(first.duckdb)
      const later = [
        [row(1, 'Anna', 'South', '1980-01-01', 3)],
        [row(2, 'Bobby', 'East', '1970-07-07', 4), row(2, 'Robert', 'East', '1970-07-07', 5)],
        [row(1, 'A.', 'South', '1980-01-01', 2)],
      ]
      for (const [i, rows] of later.entries()) {
        const outcome = await dimension.load(rows, { extractedAt: day(21 + i), columns: COLUMNS })
        for (const o of [outcome.duckdb, outcome.bigquery]) if ('error' in o) throw new Error(o.message)
      }
      const { duckdb, bigquery } = await dimension.read(read)
      expect(duckdb.map((r) => [r.customer_id, r.name, r.legacy])).toEqual([
        ['1', 'Ann', 'X1'],
        ['1', 'A.', 'X1'],
        ['1', 'Anna', 'X1'],
        ['2', 'Bob', 'X2'],
        ['2', 'Bobby', 'X2'],
        ['2', 'Robert', 'X2'],
      ])
      expect(bigquery).toEqual(duckdb)
    } finally {
      await dimension.close()
    }
  })
})
