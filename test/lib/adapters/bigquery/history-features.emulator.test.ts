import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TableSpec } from '../../../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../../../lib/sql/dialect.ts'
import { BothWarehouses } from '../../../support/both-warehouses.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

/** Every version of dim_customer as text, ordered the same way in both dialects. */
function versions(table: TableSpec, columns: readonly string[]) {
  return (d: SqlDialect, schema: string) => {
    const n = table.columns
    const text = (c: string) => `${d.castToString(d.quoteIdentifier(c))} AS ${d.quoteIdentifier(c)}`
    const list = [n.surrogateKey, ...table.key, ...columns, n.validFrom, n.validTo, n.isCurrent, n.isDeleted]
    return (
      `SELECT ${list.map(text).join(', ')} FROM ${d.table({ schema, name: table.target })} ` +
      `ORDER BY ${[...table.key, n.validFrom].map((c) => d.quoteIdentifier(c)).join(', ')}`
    )
  }
}

describe('history features give the same rows on DuckDB and on the BigQuery emulator', () => {
  it('a sequenced change feed with late events, deletes and a correction at the same change time', async () => {
    const table = tableSpec({
      validFrom: { kind: 'column', column: 'changed_at' },
      changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] }, sequence: 'seq' },
      deletes: 'new_record',
    })
    const columns = [
      { name: 'Op', type: 'VARCHAR' },
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
      { name: 'changed_at', type: 'TIMESTAMP' },
      { name: 'seq', type: 'BIGINT' },
    ]
    const e = (Op: string, customer_id: number, region: string | null, day: number, seq = 1) => ({
      Op,
      customer_id,
      region,
      changed_at: `2024-01-0${day} 00:00:00`,
      seq,
    })
    const { duckdb, bigquery } = await both.run(
      table,
      columns,
      [
        {
          rows: [e('I', 1, 'South', 1), e('U', 1, 'West', 3), e('U', 1, 'North', 3, 2), e('I', 2, 'East', 1)],
          extractedAt: '2024-02-01T00:00:00Z',
        },
        { rows: [e('D', 2, null, 4), e('U', 1, 'East', 5)], extractedAt: '2024-02-02T00:00:00Z' },
        // Late: an update of key 2 before its delete, and a correction of key 1 on day 3.
        { rows: [e('U', 2, 'West', 2), e('U', 1, 'South', 3, 3)], extractedAt: '2024-02-03T00:00:00Z' },
      ],
      versions(table, ['region']),
    )
    expect(duckdb.map((r) => [r.customer_id, r.region, r.valid_from, r.valid_to, r.is_deleted])).toEqual([
      ['1', 'South', '2024-01-01 00:00:00+00', '2024-01-05 00:00:00+00', 'false'],
      ['1', 'East', '2024-01-05 00:00:00+00', null, 'false'],
      ['2', 'East', '2024-01-01 00:00:00+00', '2024-01-02 00:00:00+00', 'false'],
      ['2', 'West', '2024-01-02 00:00:00+00', '2024-01-04 00:00:00+00', 'false'],
      ['2', 'West', '2024-01-04 00:00:00+00', null, 'true'],
    ])
    expect(bigquery).toEqual(duckdb)
  })

  it('a mirror: updates overwrite in place, deletes remove the row, a returning key gets a new surrogate key', async () => {
    const table = tableSpec({ mode: 'mirror', tracked: { kind: 'list', columns: [] }, deletes: 'invalidate' })
    const columns = [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
    ]
    const r = (customer_id: number, region: string) => ({ customer_id, region })
    const { duckdb, bigquery } = await both.run(
      table,
      columns,
      [
        { rows: [r(1, 'South'), r(2, 'East'), r(3, 'West')], extractedAt: '2024-02-01T00:00:00Z' },
        { rows: [r(1, 'North'), r(3, 'West')], extractedAt: '2024-02-02T00:00:00Z' },
        { rows: [r(1, 'North'), r(2, 'East'), r(3, 'West')], extractedAt: '2024-02-03T00:00:00Z' },
      ],
      versions(table, ['region']),
    )
    expect(duckdb.map((x) => [x.dimsync_sk, x.customer_id, x.region, x.valid_from, x.is_current])).toEqual([
      ['1', '1', 'North', '2024-02-01 00:00:00+00', 'true'],
      ['4', '2', 'East', '2024-02-03 00:00:00+00', 'true'],
      ['3', '3', 'West', '2024-02-01 00:00:00+00', 'true'],
    ])
    expect(bigquery).toEqual(duckdb)
  })

  it('a mirror reports the rows a batch overwrote in place, the same on both warehouses', async () => {
    const table = tableSpec({ mode: 'mirror', tracked: { kind: 'list', columns: [] }, deletes: 'invalidate' })
    const columns = [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
    ]
    const r = (customer_id: number, region: string | null) => ({ customer_id, region })
    const dimension = await both.open(table, columns)
    try {
      await dimension.load([r(1, 'South'), r(2, 'East'), r(3, null)], { extractedAt: '2024-02-01T00:00:00Z' })
      // 1 overwritten, 2 unchanged, 3 overwritten from NULL, 4 new.
      const second = await dimension.load([r(1, 'North'), r(2, 'East'), r(3, 'West'), r(4, 'East')], {
        extractedAt: '2024-02-02T00:00:00Z',
      })
      for (const outcome of [second.duckdb, second.bigquery])
        expect(outcome).toMatchObject({
          status: 'merged',
          counts: { insertedVersions: 1, unchangedEvents: 3 },
          keys: { newKeys: 1, changedKeys: 0, deletedKeys: 0, overwrittenKeys: 2 },
        })
    } finally {
      await dimension.close()
    }
  })

  it('append: every extract appended, the rows it replaces ended at its extraction time', async () => {
    const table = tableSpec({ mode: 'append' })
    const columns = [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
    ]
    const r = (customer_id: number, region: string) => ({ customer_id, region })
    const { duckdb, bigquery } = await both.run(
      table,
      columns,
      [
        { rows: [r(1, 'South'), r(2, 'East')], extractedAt: '2024-02-01T00:00:00Z' },
        { rows: [r(1, 'South')], extractedAt: '2024-02-02T00:00:00Z' },
        { rows: [r(2, 'West')], extractedAt: '2024-02-03T00:00:00Z', mode: 'incremental' },
      ],
      versions(table, ['region']),
    )
    expect(duckdb.map((x) => [x.customer_id, x.region, x.valid_from, x.valid_to, x.is_current])).toEqual([
      ['1', 'South', '2024-02-01 00:00:00+00', '2024-02-02 00:00:00+00', 'false'],
      ['1', 'South', '2024-02-02 00:00:00+00', null, 'true'],
      ['2', 'East', '2024-02-01 00:00:00+00', '2024-02-02 00:00:00+00', 'false'],
      ['2', 'West', '2024-02-03 00:00:00+00', null, 'true'],
    ])
    expect(bigquery).toEqual(duckdb)
  })

  it('column policies: keep-first (type 0), previous (type 3) and current (type 6) values', async () => {
    const table = tableSpec({
      policies: { keepFirst: ['born'], previousValue: ['region'], currentValue: ['region'] },
    })
    const columns = [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
      { name: 'born', type: 'DATE' },
    ]
    const r = (customer_id: number, region: string, born: string) => ({ customer_id, region, born })
    const { duckdb, bigquery } = await both.run(
      table,
      columns,
      [
        {
          rows: [r(1, 'South', '1980-01-01'), r(2, 'East', '1970-07-07')],
          extractedAt: '2024-02-01T00:00:00Z',
        },
        {
          rows: [r(1, 'North', '1999-09-09'), r(2, 'East', '1971-01-01')],
          extractedAt: '2024-02-02T00:00:00Z',
        },
        { rows: [r(1, 'West', '1999-09-09')], extractedAt: '2024-02-03T00:00:00Z' },
      ],
      versions(table, ['region', 'born', 'previous_region', 'current_region']),
    )
    expect(duckdb.map((x) => [x.customer_id, x.region, x.born, x.previous_region, x.current_region])).toEqual(
      [
        ['1', 'South', '1980-01-01', 'North', 'West'],
        ['1', 'North', '1980-01-01', 'North', 'West'],
        ['1', 'West', '1980-01-01', 'North', 'West'],
        ['2', 'East', '1970-07-07', null, 'East'],
      ],
    )
    expect(bigquery).toEqual(duckdb)
  })

  it('partial updates: events of a key fold in time order, NULLs ignored where configured', async () => {
    const table = tableSpec({
      validFrom: { kind: 'column', column: 'changed_at' },
      changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } },
      deletes: 'invalidate',
      partialUpdates: {
        ignoreNulls: { kind: 'list', columns: ['region'] },
        columnsToUpdate: ['region', 'score'],
      },
    })
    const columns = [
      { name: 'Op', type: 'VARCHAR' },
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
      { name: 'score', type: 'BIGINT' },
      { name: 'born', type: 'DATE' },
      { name: 'changed_at', type: 'TIMESTAMP' },
    ]
    const e = (Op: string, region: string | null, score: number | null, born: string, day: number) => ({
      Op,
      customer_id: 1,
      region,
      score,
      born,
      changed_at: `2024-01-0${day} 00:00:00`,
    })
    const { duckdb, bigquery } = await both.run(
      table,
      columns,
      [
        { rows: [e('I', 'South', 20, '1980-01-01', 1)], extractedAt: '2024-02-01T00:00:00Z' },
        {
          rows: [e('U', null, 30, '1999-09-09', 3), e('U', 'North', null, '1999-09-09', 2)],
          extractedAt: '2024-02-02T00:00:00Z',
        },
      ],
      versions(table, ['region', 'score', 'born']),
    )
    expect(duckdb.map((x) => [x.region, x.score, x.born, x.valid_from])).toEqual([
      ['South', '20', '1980-01-01', '2024-01-01 00:00:00+00'],
      ['North', null, '1980-01-01', '2024-01-02 00:00:00+00'],
      ['North', '30', '1980-01-01', '2024-01-03 00:00:00+00'],
    ])
    expect(bigquery).toEqual(duckdb)
  })

  it('partial updates: a late event folds into the state at its time and the later versions follow (the same rows on both)', async () => {
    const table = tableSpec({
      validFrom: { kind: 'column', column: 'changed_at' },
      changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } },
      deletes: 'invalidate',
      partialUpdates: { ignoreNulls: { kind: 'all' } },
    })
    const columns = [
      { name: 'Op', type: 'VARCHAR' },
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
      { name: 'tier', type: 'VARCHAR' },
      { name: 'changed_at', type: 'TIMESTAMP' },
    ]
    const e = (Op: string, region: string | null, tier: string | null, hour: number) => ({
      Op,
      customer_id: 1,
      region,
      tier,
      changed_at: `2024-01-01 0${hour}:00:00`,
    })
    const { duckdb, bigquery } = await both.run(
      table,
      columns,
      [
        { rows: [e('I', 'A', 'gold', 1), e('U', 'B', null, 5)], extractedAt: '2024-02-01T00:00:00Z' },
        { rows: [e('U', null, 'silver', 3)], extractedAt: '2024-02-02T00:00:00Z' },
      ],
      versions(table, ['region', 'tier']),
    )
    expect(duckdb.map((x) => [x.region, x.tier, x.valid_from, x.valid_to])).toEqual([
      ['A', 'gold', '2024-01-01 01:00:00+00', '2024-01-01 03:00:00+00'],
      ['A', 'silver', '2024-01-01 03:00:00+00', '2024-01-01 05:00:00+00'],
      ['B', 'silver', '2024-01-01 05:00:00+00', null],
    ])
    expect(bigquery).toEqual(duckdb)
  })

  it.each([
    ['NULL on new versions', undefined, null],
    ['its last value on new versions (removed_columns: keep_last)', 'keep_last', 'X2'],
  ] as const)(
    'a column the source stopped sending is kept, %s, and opens no versions',
    async (_what, removedColumns, carried) => {
      const table = tableSpec(removedColumns === undefined ? {} : { removedColumns })
      const wide = [
        { name: 'customer_id', type: 'BIGINT' },
        { name: 'region', type: 'VARCHAR' },
        { name: 'legacy_code', type: 'VARCHAR' },
      ]
      const dimension = await both.open(table, wide)
      try {
        await dimension.load(
          [
            { customer_id: 1, region: 'South', legacy_code: 'X1' },
            { customer_id: 2, region: 'East', legacy_code: 'X2' },
          ],
          { extractedAt: '2024-02-01T00:00:00Z' },
        )
        const narrower = await dimension.load(
          [
            { customer_id: 1, region: 'South' },
            { customer_id: 2, region: 'West' },
          ],
          { extractedAt: '2024-02-02T00:00:00Z', columns: wide.filter((c) => c.name !== 'legacy_code') },
        )
        expect(narrower.duckdb).toMatchObject({ counts: { insertedVersions: 1, closedVersions: 1 } })
        expect(narrower.bigquery).toEqual(narrower.duckdb)
        const { duckdb, bigquery } = await dimension.read(versions(table, ['region', 'legacy_code']))
        expect(duckdb.map((x) => [x.customer_id, x.region, x.legacy_code, x.is_current])).toEqual([
          ['1', 'South', 'X1', 'true'],
          ['2', 'East', 'X2', 'false'],
          ['2', 'West', carried, 'true'],
        ])
        expect(bigquery).toEqual(duckdb)
      } finally {
        await dimension.close()
      }
    },
  )
})
