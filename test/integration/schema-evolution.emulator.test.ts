import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { dimensionObjects } from '../../lib/sql/render-ddl.ts'
import { evolveColumn } from '../../lib/use-cases/evolve-column.ts'
import { BothWarehouses, type PairedDimension } from '../support/both-warehouses.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * Widened types on both warehouses: where BigQuery stores both types alike (INTEGER and BIGINT are INT64, FLOAT
 * and DOUBLE are FLOAT64) nothing is altered there and the widened staged type is recorded with the merge; the
 * dimension then holds the same rows as DuckDB's, which altered its columns. A decimal that widens is altered in
 * place on both (BigQuery's ALTER COLUMN SET DATA TYPE: NUMERIC(10, 2) → NUMERIC(18, 2) → BIGNUMERIC), and
 * `dimsync evolve` rewrites a column on both (on BigQuery through a new column, DROP COLUMN and RENAME COLUMN).
 */
let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const columns = (types: Record<string, string>): StagedColumn[] =>
  Object.entries(types).map(([name, type]) => ({ name, type }))

describe('a widened type on DuckDB and the BigQuery emulator', () => {
  it('INTEGER → BIGINT and FLOAT → DOUBLE: no version opens, larger values fit, both hold the same rows', async () => {
    const table = tableSpec({ deletes: 'invalidate' })
    const narrow = columns({ customer_id: 'INTEGER', name: 'VARCHAR', score: 'FLOAT' })
    const wide = columns({ customer_id: 'BIGINT', name: 'VARCHAR', score: 'DOUBLE' })
    const dimension = await both.open(table, narrow)
    try {
      const first = await dimension.load([{ customer_id: 1, name: 'Ana', score: 0.5 }], {
        extractedAt: '2024-01-01T00:00:00Z',
      })
      expect(first.bigquery).toEqual(first.duckdb)
      const widened = await dimension.load([{ customer_id: 1, name: 'Ana', score: 0.5 }], {
        extractedAt: '2024-02-01T00:00:00Z',
        columns: wide,
      })
      expect(widened.duckdb).toMatchObject({
        status: 'merged',
        counts: { insertedVersions: 0, closedVersions: 0 },
      })
      expect(widened.bigquery).toEqual(widened.duckdb)
      const larger = await dimension.load(
        [
          { customer_id: 1, name: 'Ana', score: 0.5 },
          { customer_id: 5_000_000_000, name: 'Chen', score: 0.1 },
        ],
        { extractedAt: '2024-03-01T00:00:00Z', columns: wide },
      )
      expect(larger.duckdb).toMatchObject({ status: 'merged', counts: { insertedVersions: 1 } })
      expect(larger.bigquery).toEqual(larger.duckdb)
      const held = await dimension.holdings()
      expect(held.duckdb.dimension).toHaveLength(2)
      expect(held.bigquery).toEqual(held.duckdb)
    } finally {
      await dimension.close()
    }
  }, 300_000)
})

/** A column of the dimension as the emulator stores it (the REST field: BigQuery's type and parameters). */
function storedField(dimension: PairedDimension, column: string) {
  const dataset = dimension.schemaOf('bigquery')
  const tableId = dimensionObjects(dimension.table, dataset).dimension.name
  const stored = dimension.emulator.store.getTable({ projectId: 'acme-dw', datasetId: dataset, tableId })
  return stored?.columns.find((c) => c.field.name === column)?.field
}

describe('a decimal widening and `dimsync evolve` on DuckDB and the BigQuery emulator', () => {
  it('DECIMAL(10,2) → DECIMAL(18,2) → DECIMAL(38,2): the column widens in place (NUMERIC, then BIGNUMERIC), no version opens, larger amounts fit', async () => {
    const table = tableSpec({ deletes: 'invalidate' })
    const typed = (amount: string) => columns({ customer_id: 'BIGINT', name: 'VARCHAR', amount })
    const dimension = await both.open(table, typed('DECIMAL(10,2)'))
    try {
      const first = await dimension.load([{ customer_id: 1, name: 'Ana', amount: '12345678.91' }], {
        extractedAt: '2024-01-01T00:00:00Z',
      })
      expect(first.duckdb).toMatchObject({ status: 'merged', counts: { insertedVersions: 1 } })
      expect(first.bigquery).toEqual(first.duckdb)
      // Each batch is a full extract: it repeats the customers before it and adds one whose amount needs the wider type.
      const rows: Record<string, string | number>[] = [{ customer_id: 1, name: 'Ana', amount: '12345678.91' }]
      expect(storedField(dimension, 'amount')).toMatchObject({ type: 'NUMERIC', precision: '10', scale: '2' })
      for (const [month, type, amount, stored] of [
        ['02', 'DECIMAL(18,2)', '1234567890123456.78', { type: 'NUMERIC', precision: '18', scale: '2' }],
        ['03', 'DECIMAL(38,2)', '123456789012345678901234567890123456.78', { type: 'BIGNUMERIC' }],
      ] as const) {
        rows.push({ customer_id: Number(month), name: 'Chen', amount })
        const widened = await dimension.load(rows, {
          extractedAt: `2024-${month}-01T00:00:00Z`,
          columns: typed(type),
        })
        expect(widened.duckdb).toMatchObject({
          status: 'merged',
          counts: { insertedVersions: 1, closedVersions: 0 },
        })
        expect(widened.bigquery).toEqual(widened.duckdb)
        expect(storedField(dimension, 'amount')).toMatchObject(stored)
      }
      const held = await dimension.holdings()
      expect(held.duckdb.dimension!.map((r) => r.amount)).toEqual(
        expect.arrayContaining(['12345678.91', '123456789012345678901234567890123456.78']),
      )
      expect(held.bigquery).toEqual(held.duckdb)
    } finally {
      await dimension.close()
    }
  }, 300_000)

  it('VARCHAR → BIGINT: both refuse the batch, `dimsync evolve` rewrites the column on each, the batch then merges with no new version; both hold the same rows', async () => {
    const table = tableSpec({ deletes: 'invalidate' })
    const typed = (region: string) => columns({ customer_id: 'BIGINT', name: 'VARCHAR', region })
    const dimension = await both.open(table, typed('VARCHAR'))
    try {
      await dimension.load([{ customer_id: 1, name: 'Ana', region: '7' }], {
        extractedAt: '2024-01-01T00:00:00Z',
      })
      const changed = await dimension.load(
        [
          { customer_id: 1, name: 'Ana', region: '42' },
          { customer_id: 2, name: 'Chen', region: '-3' },
        ],
        { extractedAt: '2024-02-01T00:00:00Z' },
      )
      expect(changed.duckdb).toMatchObject({
        status: 'merged',
        counts: { insertedVersions: 2, closedVersions: 1 },
      })
      expect(changed.bigquery).toEqual(changed.duckdb)
      const numbers = [
        { customer_id: 1, name: 'Ana', region: 42 },
        { customer_id: 2, name: 'Chen', region: -3 },
      ]
      const batchId = await dimension.stage(numbers, {
        extractedAt: '2024-03-01T00:00:00Z',
        columns: typed('BIGINT'),
      })
      const refused = await dimension.merge(batchId)
      for (const side of ['duckdb', 'bigquery'] as const)
        expect(refused[side]).toMatchObject({
          message: expect.stringContaining('column "region" changed type'),
        })
      for (const side of ['duckdb', 'bigquery'] as const) {
        const result = await evolveColumn(
          { warehouse: dimension.warehouses[side], staging: both.batches },
          { table, schema: dimension.schemaOf(side), column: 'region' },
        )
        expect(result).toMatchObject({ from: 'VARCHAR', to: 'BIGINT', batchId, columns: ['region'] })
      }
      const described = await dimension.warehouses.bigquery.describeTable(
        dimensionObjects(table, dimension.schemaOf('bigquery')).dimension,
      )
      // BigQuery rewrites through a new column, so the column moves to the end there; the set of columns is the same.
      expect(described?.map((c) => c.name).sort()).toEqual(
        (await dimension.warehouses.duckdb.describeTable(dimensionObjects(table, 'main').dimension))
          ?.map((c) => c.name)
          .sort(),
      )
      expect(described?.find((c) => c.name === 'region')?.type).toBe('BIGINT')
      expect(storedField(dimension, 'region')).toMatchObject({ type: 'INTEGER' })
      const merged = await dimension.merge(batchId)
      expect(merged.duckdb).toMatchObject({
        status: 'merged',
        counts: { insertedVersions: 0, closedVersions: 0 },
      })
      expect(merged.bigquery).toEqual(merged.duckdb)
      const held = await dimension.holdings()
      expect(held.duckdb.dimension!.map((r) => r.region).sort()).toEqual(['-3', '42', '7'])
      expect(held.bigquery).toEqual(held.duckdb)
    } finally {
      await dimension.close()
    }
  }, 300_000)

  /**
   * BigQuery's rewrite is four statements that do not roll back (ADD COLUMN, UPDATE, DROP COLUMN, RENAME COLUMN):
   * evolve stopped after any of them is run again and finishes the rewrite, instead of failing on the half-done
   * table (before: "has no column region" once the old column was dropped).
   */
  for (const [stoppedAt, statement] of [
    ['after copying the values', /DROP COLUMN IF EXISTS `region`/],
    ['after dropping the old column', /RENAME COLUMN `region__dimsync_evolve` TO `region`/],
  ] as const)
    it(`evolve stopped ${stoppedAt} on BigQuery is finished by running it again`, async () => {
      // Its own table name: evolve reads the new type from the table's staged batches, which tests share.
      const name = `customers_stopped_${stoppedAt.split(' ').at(-2)}`
      const table = tableSpec({ deletes: 'invalidate', name, target: `dim_${name}` })
      const typed = (region: string) => columns({ customer_id: 'BIGINT', name: 'VARCHAR', region })
      const dimension = await both.open(table, typed('VARCHAR'))
      try {
        await dimension.load(
          [
            { customer_id: 1, name: 'Ana', region: '7' },
            { customer_id: 2, name: 'Chen', region: '-3' },
          ],
          { extractedAt: '2024-01-01T00:00:00Z' },
        )
        const numbers = [
          { customer_id: 1, name: 'Ana', region: 7 },
          { customer_id: 2, name: 'Chen', region: -3 },
        ]
        const batchId = await dimension.stage(numbers, {
          extractedAt: '2024-02-01T00:00:00Z',
          columns: typed('BIGINT'),
        })
        const refused = await dimension.merge(batchId)
        expect(refused.bigquery).toMatchObject({
          message: expect.stringContaining('column "region" changed type'),
        })
        const evolve = (side: 'duckdb' | 'bigquery') =>
          evolveColumn(
            { warehouse: dimension.warehouses[side], staging: both.batches },
            { table, schema: dimension.schemaOf(side), column: 'region' },
          )
        await evolve('duckdb')
        dimension.emulator.faults.failStatement((s) => statement.test(s.text), {
          reason: 'accessDenied',
          message: 'Access Denied: the session was stopped here',
        })
        await expect(evolve('bigquery')).rejects.toThrow(/Access Denied/)
        const resumed = await evolve('bigquery')
        expect(resumed).toMatchObject({ to: 'BIGINT', batchId, columns: ['region'] })
        expect(storedField(dimension, 'region')).toMatchObject({ type: 'INTEGER' })
        expect(storedField(dimension, 'region__dimsync_evolve')).toBeUndefined()
        const merged = await dimension.merge(batchId)
        expect(merged.bigquery).toMatchObject({
          status: 'merged',
          counts: { insertedVersions: 0, closedVersions: 0 },
        })
        expect(merged.bigquery).toEqual(merged.duckdb)
        const held = await dimension.holdings()
        expect(held.bigquery).toEqual(held.duckdb)
      } finally {
        await dimension.close()
      }
    }, 300_000)
})
