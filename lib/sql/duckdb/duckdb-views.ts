import type { TableSpec } from '../../core/table-spec.ts'
import type { CompiledStatement } from '../dialect.ts'
import type { DimensionObjects } from '../render-ddl.ts'
import { duckDbDialect as d } from './duckdb-dialect.ts'

/**
 * `<target>_current`: the live version of every key (deleted keys excluded).
 * `<target>_as_of(ts)`: a table macro returning, for every key, the version valid at `ts` (half-open windows:
 * a version closed at exactly `ts` is not returned, its successor is).
 */
export function renderDuckDbViews(table: TableSpec, objects: DimensionObjects): CompiledStatement[] {
  const n = table.columns
  const q = d.quoteIdentifier
  const dim = d.table(objects.dimension)
  const ts = 'CAST(ts AS TIMESTAMPTZ)'
  const openEnd = table.openEnd === null ? `${q(n.validTo)} IS NULL OR ` : ''
  return [
    {
      label: 'create current view',
      sql: `CREATE OR REPLACE VIEW ${d.table(objects.currentView)} AS\nSELECT * FROM ${dim} WHERE ${q(n.isCurrent)} AND NOT ${q(n.isDeleted)}`,
    },
    {
      label: 'create as-of macro',
      sql:
        `CREATE OR REPLACE MACRO ${d.table(objects.asOfFunction)}(ts) AS TABLE\nSELECT * FROM ${dim}\n` +
        `WHERE ${q(n.validFrom)} <= ${ts} AND (${openEnd}${q(n.validTo)} > ${ts}) AND NOT ${q(n.isDeleted)}`,
    },
  ]
}
