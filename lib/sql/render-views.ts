import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'
import type { DimensionObjects } from './render-ddl.ts'
import { liveCurrentVersion, liveVersionAt, liveVersionAtKnownAt } from './version-predicates.ts'

/**
 * The read objects of a dimension, in every dialect:
 * - `<target>_current`: a view of the live version of every key (deleted keys excluded);
 * - `<target>_as_of(ts)`: a table function (a table macro in DuckDB) returning, for every key, the version valid
 *   at `ts` (half-open windows: a version closed at exactly `ts` is not returned, its successor is).
 *   `SELECT * FROM dim_customer_as_of(TIMESTAMP '2024-02-01')`.
 *   A bitemporal table's function takes a second instant, `known_at`: the version valid at `ts` as the table
 *   said at `known_at` (NULL, or left out in DuckDB: as it says now). Both read only rows known now by default.
 */
export function renderViews(d: SqlDialect, table: TableSpec, objects: DimensionObjects): CompiledStatement[] {
  const dim = d.table(objects.dimension)
  return [
    {
      label: 'create current view',
      sql: d.createView(
        objects.currentView,
        `SELECT * FROM ${dim} WHERE ${liveCurrentVersion(d, table)}`,
        `dimsync: the live version of every key of ${table.name}`,
      ),
    },
    {
      label: 'create as-of table function',
      sql:
        table.systemTime === undefined
          ? d.createTableFunction(
              objects.asOfFunction,
              [{ name: 'ts', type: 'timestamp' }],
              ([ts]) => `SELECT * FROM ${dim}\nWHERE ${liveVersionAt(d, table, ts!)}`,
              objects.dimension,
            )
          : d.createTableFunction(
              objects.asOfFunction,
              [
                { name: 'ts', type: 'timestamp' },
                { name: 'known_at', type: 'timestamp', optional: true },
              ],
              ([ts, knownAt]) =>
                `SELECT * FROM ${dim}\nWHERE ${liveVersionAtKnownAt(d, table, ts!, knownAt!)}`,
              objects.dimension,
            ),
    },
  ]
}
