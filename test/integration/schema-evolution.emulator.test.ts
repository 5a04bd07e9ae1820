import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { BothWarehouses } from '../support/both-warehouses.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * Widened types on both warehouses: where BigQuery stores both types alike (INTEGER and BIGINT are INT64, FLOAT
 * and DOUBLE are FLOAT64) nothing is altered there and the widened staged type is recorded with the merge; the
 * dimension then holds the same rows as DuckDB's, which altered its columns.
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
