/** `warehouse: { type: duckdb, path, schema }`, the default warehouse: its keys and its spec. */
import path from 'node:path'
import type { DuckDbWarehouseSpec } from '../../core/table-spec.ts'
import { IDENTIFIER_PATTERN, IDENTIFIER_TEXT, nonEmpty, patterned } from '../schema-primitives.ts'
import type { WarehouseConfig } from '../warehouse-configs.ts'

export const DEFAULT_WAREHOUSE = Object.freeze({
  type: 'duckdb',
  path: '.dimsync/warehouse.duckdb',
  schema: 'main',
})

const shape = {
  path: nonEmpty('a file path').optional().describe("DuckDB file, relative to the config file's folder."),
  schema: patterned(IDENTIFIER_PATTERN, `a schema name (${IDENTIFIER_TEXT})`).optional(),
}

export const duckDbWarehouseConfig: WarehouseConfig<DuckDbWarehouseSpec, typeof shape> = {
  type: 'duckdb',
  shape,
  resolve(section, baseDir) {
    const file = section?.path ?? DEFAULT_WAREHOUSE.path
    return {
      type: 'duckdb',
      // DuckDB's in-memory database is a name, not a file; resolving it would create a file called ":memory:".
      path: file === ':memory:' ? file : path.resolve(baseDir, file),
      schema: section?.schema ?? DEFAULT_WAREHOUSE.schema,
    }
  },
}
