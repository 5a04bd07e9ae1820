/** What `dimsync validate` checks for a PostgreSQL warehouse: the staged types it has no column type for. */
import type { StagedColumn } from '../../core/batch.ts'
import { storesEveryStagedType, type WarehouseChecks } from '../../core/warehouse-checks.ts'
import { postgresColumnType } from './postgres-types.ts'

export const postgresChecks: WarehouseChecks = {
  ...storesEveryStagedType('PostgreSQL'),
  unstorableColumns: (columns) => columns.filter((c) => !storable(c)),
}

function storable(column: StagedColumn): boolean {
  try {
    postgresColumnType(column.type, { table: '', column: column.name })
    return true
  } catch {
    return false
  }
}
