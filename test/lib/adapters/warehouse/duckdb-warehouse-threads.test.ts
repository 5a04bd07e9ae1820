import { describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { threadsInTransaction as threadsIn, threadsNow } from '../../../support/warehouse-threads.ts'

/**
 * A first load streams the batch once through statements that parallelize (the numbering of the keys, the join
 * back, the INSERT), so it may run on more threads than a merge that diffs against a dimension, whose hash joins
 * hold every thread's share in memory (bench/results/log.md).
 */
describe('the DuckDB warehouse runs first loads on their own thread count', () => {
  it('runs a first load on firstLoadThreads and every other transaction on threads', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: ':memory:', threads: 1, firstLoadThreads: 2 })
    try {
      expect(await threadsNow(warehouse)).toBe(1)
      expect(await threadsIn(warehouse, true)).toBe(2)
      expect(await threadsNow(warehouse), 'back to one after the first load').toBe(1)
      expect(await threadsIn(warehouse, false)).toBe(1)
      expect(await threadsIn(warehouse, undefined)).toBe(1)
    } finally {
      await warehouse.close()
    }
  })

  it('goes back to its thread count after a first load that failed', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: ':memory:', threads: 1, firstLoadThreads: 2 })
    try {
      const failed = warehouse.transaction(
        (tx) => tx.execute({ label: 'fail', sql: 'SELECT * FROM nowhere' }),
        {
          commit: true,
          firstLoad: true,
        },
      )
      await expect(failed).rejects.toThrow(/nowhere/)
      expect(await threadsNow(warehouse)).toBe(1)
    } finally {
      await warehouse.close()
    }
  })

  it('runs first loads on its one thread count when no other is given', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: ':memory:', threads: 1 })
    try {
      expect(await threadsIn(warehouse, true)).toBe(1)
    } finally {
      await warehouse.close()
    }
  })
})
