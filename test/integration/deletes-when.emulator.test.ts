import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { BothWarehouses, type PairedDimension } from '../support/both-warehouses.ts'
import type { Value } from '../support/staged-batches.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/*
 * Deletes by a condition on a column (deletes: { when: "<column> = <value>" }) for sources that soft-delete, on
 * DuckDB and the BigQuery emulator: a snapshot, a delta and a change feed. Times are hours of 2024-01-01 (change
 * times) or days of February (extraction times).
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const hour = (h: number) => `2024-01-01T${String(h).padStart(2, '0')}:00:00Z`
const day = (d: number) => `2024-02-${String(d).padStart(2, '0')}T00:00:00Z`

async function merged(
  dimension: PairedDimension,
  rows: readonly Record<string, Value>[],
  extractedAt: string,
  mode: 'full' | 'incremental' = 'full',
): Promise<void> {
  const outcome = await dimension.load(rows, { extractedAt, mode })
  expect(outcome.bigquery, 'the same outcome on BigQuery').toEqual(outcome.duckdb)
  if ('error' in outcome.duckdb) throw new Error(outcome.duckdb.message)
}

/** Every version as [id, a, valid_from, valid_to (null: open), deleted], checked equal on both warehouses. */
async function stored(dimension: PairedDimension): Promise<unknown[][]> {
  const table = dimension.table
  const c = table.columns
  const select = (d: SqlDialect, schema: string) => {
    const text = (name: string) => `${d.castToString(d.quoteIdentifier(name))} AS ${d.quoteIdentifier(name)}`
    return (
      `SELECT ${['id', 'a', c.validFrom, c.validTo, c.isDeleted].map(text).join(', ')} ` +
      `FROM ${d.table({ schema, name: table.target })} ORDER BY ${d.quoteIdentifier('id')}, ${d.quoteIdentifier(c.validFrom)}`
    )
  }
  const { duckdb, bigquery } = await dimension.read(select)
  expect(bigquery, 'the same rows on BigQuery').toEqual(duckdb)
  const time = (v: unknown) => (v === null ? null : String(v).slice(0, 13).replace(' ', 'T'))
  return duckdb.map((r) => [
    Number(r.id),
    r.a,
    time(r[c.validFrom]),
    time(r[c.validTo]),
    r[c.isDeleted] === 'true',
  ])
}

describe('deletes: { when: "<column> = <value>" }', () => {
  it("a snapshot: a row whose status = 'D' deletes its key; the status column is not stored", async () => {
    const table = tableSpec({
      name: 'snap',
      target: 'dim_snap',
      key: ['id'],
      softDeleteColumn: 'status',
      softDeleteEquals: { kind: 'text', value: 'D' },
      deletes: 'invalidate',
    })
    const columns = [
      { name: 'id', type: 'BIGINT' },
      { name: 'a', type: 'VARCHAR' },
      { name: 'status', type: 'VARCHAR' },
    ]
    await both.withDimension(table, columns, async (dimension) => {
      await merged(
        dimension,
        [
          { id: 1, a: 'x', status: 'A' },
          { id: 2, a: 'y', status: 'A' },
          { id: 3, a: 'z', status: 'S' },
        ],
        day(1),
      )
      await merged(
        dimension,
        [
          { id: 1, a: 'x', status: 'A' },
          { id: 2, a: 'y', status: 'D' },
          { id: 3, a: 'z', status: null },
        ],
        day(2),
      )
      expect(await stored(dimension)).toEqual([
        [1, 'x', '2024-02-01T00', null, false],
        [2, 'y', '2024-02-01T00', '2024-02-02T00', false],
        [3, 'z', '2024-02-01T00', null, false],
      ])
    })
  })

  it('a change feed whose source flag is named is_deleted, like the metadata column: is_deleted = true is a delete', async () => {
    const table = tableSpec({
      name: 'feed',
      target: 'dim_feed',
      key: ['id'],
      validFrom: { kind: 'column', column: 'changed_at' },
      changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } },
      softDeleteColumn: 'is_deleted',
      softDeleteEquals: { kind: 'boolean', value: true },
      deletes: 'new_record',
    })
    const columns = [
      { name: 'Op', type: 'VARCHAR' },
      { name: 'id', type: 'BIGINT' },
      { name: 'a', type: 'VARCHAR' },
      { name: 'is_deleted', type: 'BOOLEAN' },
      { name: 'changed_at', type: 'TIMESTAMP' },
    ]
    await both.withDimension(table, columns, async (dimension) => {
      await merged(
        dimension,
        [
          { Op: 'I', id: 1, a: 'x', is_deleted: false, changed_at: hour(1) },
          { Op: 'U', id: 1, a: 'x', is_deleted: true, changed_at: hour(3) },
          { Op: 'I', id: 2, a: 'y', is_deleted: null, changed_at: hour(1) },
        ],
        day(1),
      )
      expect(await stored(dimension)).toEqual([
        [1, 'x', '2024-01-01T01', '2024-01-01T03', false],
        [1, 'x', '2024-01-01T03', null, true],
        [2, 'y', '2024-01-01T01', null, false],
      ])
    })
  })

  it('a delta (incremental extract): deleted = 1 on an integer flag closes the key at its change time', async () => {
    const table = tableSpec({
      name: 'delta',
      target: 'dim_delta',
      key: ['id'],
      extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
      validFrom: { kind: 'column', column: 'changed_at' },
      softDeleteColumn: 'deleted',
      softDeleteEquals: { kind: 'number', value: '1' },
      deletes: 'invalidate',
    })
    const columns = [
      { name: 'id', type: 'BIGINT' },
      { name: 'a', type: 'VARCHAR' },
      { name: 'deleted', type: 'INTEGER' },
      { name: 'changed_at', type: 'TIMESTAMP' },
    ]
    await both.withDimension(table, columns, async (dimension) => {
      await merged(
        dimension,
        [
          { id: 1, a: 'x', deleted: 0, changed_at: hour(1) },
          { id: 2, a: 'y', deleted: 0, changed_at: hour(1) },
        ],
        day(1),
        'incremental',
      )
      await merged(dimension, [{ id: 2, a: 'y', deleted: 1, changed_at: hour(4) }], day(2), 'incremental')
      expect(await stored(dimension)).toEqual([
        [1, 'x', '2024-01-01T01', null, false],
        [2, 'y', '2024-01-01T01', '2024-01-01T04', false],
      ])
    })
  })
})
