import type { TableSpec } from '../../core/table-spec.ts'
import type { CompiledStatement, SqlDialect } from '../dialect.ts'
import type { DimensionObjects } from '../render-ddl.ts'

/**
 * `<target>_current`: a view of the live version of every key (deleted keys excluded); it filters on valid_to
 * as well, so it reads only the partition of open versions.
 * `<target>_as_of(ts TIMESTAMP)`: a table function returning, for every key, the version valid at `ts`
 * (half-open windows: a version closed at exactly `ts` is not returned, its successor is).
 * `SELECT * FROM dataset.dim_customer_as_of(TIMESTAMP '2024-02-01')`.
 */
export function renderBigQueryViews(
  d: SqlDialect,
  table: TableSpec,
  objects: DimensionObjects,
): CompiledStatement[] {
  const n = table.columns
  const q = d.quoteIdentifier
  const dim = d.table(objects.dimension)
  const open =
    table.openEnd === null
      ? `${q(n.validTo)} IS NULL`
      : `${q(n.validTo)} = ${d.timestampLiteral(table.openEnd)}`
  const notYetClosed = table.openEnd === null ? `${q(n.validTo)} IS NULL OR ` : ''
  return [
    {
      label: 'create current view',
      sql:
        `CREATE OR REPLACE VIEW ${d.table(objects.currentView)}\n` +
        `OPTIONS(description = ${d.stringLiteral(`dimsync: the live version of every key of ${table.name}`)}) AS\n` +
        `SELECT * FROM ${dim} WHERE ${q(n.isCurrent)} AND ${open} AND NOT ${q(n.isDeleted)}`,
    },
    {
      label: 'create as-of table function',
      sql:
        `CREATE OR REPLACE TABLE FUNCTION ${d.table(objects.asOfFunction)}(ts TIMESTAMP) AS\n` +
        `SELECT * FROM ${dim}\n` +
        `WHERE ${q(n.validFrom)} <= ts AND (${notYetClosed}${q(n.validTo)} > ts) AND NOT ${q(n.isDeleted)}`,
    },
  ]
}
