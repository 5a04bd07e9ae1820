import { DuckDbWarehouse, type DuckDbWarehouseOptions } from './duckdb-warehouse.ts'

/**
 * The in-memory warehouse: the embedded DuckDB warehouse opened at ':memory:', so nothing of the dimension reaches a
 * file (tests of the use-cases, the fast test tier). It is the same adapter as the file-backed one, so it runs the
 * same merge; the warehouse contract (test/lib/adapters/warehouse/warehouse-contract-memory.test.ts) holds it to
 * the file-backed DuckDB's outcomes and rows. It lives as long as it is open: `close` drops everything.
 */
export function openMemoryWarehouse(
  options: Omit<DuckDbWarehouseOptions, 'path' | 'readOnly'> = {},
): Promise<DuckDbWarehouse> {
  return DuckDbWarehouse.open({ ...options, path: ':memory:' })
}
