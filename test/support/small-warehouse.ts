import type { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { openMemoryWarehouse } from '../../lib/adapters/warehouse/duckdb-memory-warehouse.ts'

/**
 * The in-memory DuckDB warehouse the test harnesses merge into, on one thread, as the CLI's merges run
 * (DEFAULT_WAREHOUSE_THREADS): a test's tables fit in one of DuckDB's morsels, so a second thread finds no work to
 * share and only adds its hand-overs to every statement (a fifth of a property test's CPU).
 */
export function openSmallWarehouse(): Promise<DuckDbWarehouse> {
  return openMemoryWarehouse({ threads: 1 })
}
