import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { ColumnRename } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * `renamed: { old: new }`: the dimension's columns take their new names in place (values kept; DuckDB and
 * BigQuery both write `ALTER TABLE … RENAME COLUMN … TO …`). The merge after it hashes the current versions
 * again (the tracked set moved to the new names), so the rename opens no version.
 */
export function renderColumnRenames(
  d: SqlDialect,
  dimension: TableRef,
  renames: readonly ColumnRename[],
): CompiledStatement[] {
  return renames.map(({ from, to }) => ({
    label: `rename column ${from} to ${to}`,
    sql: `ALTER TABLE ${d.table(dimension)} RENAME COLUMN ${d.quoteIdentifier(from)} TO ${d.quoteIdentifier(to)}`,
  }))
}
