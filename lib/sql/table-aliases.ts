import type { DimensionLayout } from '../core/dimension-layout.ts'
import { dbtIdColumnList, systemTimeColumnList } from '../core/dimension-layout.ts'
import { inferredColumnName } from '../core/inferred-member.ts'
import { metadataColumnList } from '../core/metadata-columns.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { captureRawColumn } from './render-ddl.ts'

/**
 * Table aliases and CTE names that no column can shadow. In GoogleSQL a column whose name is an alias hides the
 * alias wherever that column is in scope: in a correlated subquery reading a table with such a column, and in
 * QUALIFY and ORDER BY after `SELECT *` (whose columns become names of the select list). A short alias (`d`, `s`,
 * `cur`) is kept while no column of the tables a statement reads has its name (compared without case, as both
 * warehouses compare identifiers), so the SQL stays short (BigQuery limits a script's length); otherwise it becomes
 * `__dimsync_as_<alias>`, a name in dimsync's reserved prefix, which a source column cannot have.
 */
export class TableAliases {
  readonly #taken: ReadonlySet<string>
  readonly #resolved = new Map<string, string>()

  constructor(columnNames: Iterable<string>) {
    this.#taken = new Set([...columnNames].map((c) => c.toLowerCase()))
  }

  /** The alias to write for the short alias `name`. */
  of(name: string): string {
    let alias = this.#resolved.get(name)
    if (alias === undefined) {
      alias = name
      for (let i = 0; this.#taken.has(alias.toLowerCase()); i++)
        alias = `${ALIAS_PREFIX}${name}${i === 0 ? '' : `_${i}`}`
      this.#resolved.set(name, alias)
    }
    return alias
  }
}

/** The form of an alias some column would shadow (in the reserved prefix: no source column has it). */
export const ALIAS_PREFIX = '__dimsync_as_'

/**
 * Every column name a table's statements may meet that a user chose: the staged columns (stored, excluded and
 * bookkeeping ones), the dimension's (removed, derived and metadata columns included) and the capture log's raw
 * values (`raw_<column>`).
 */
export function userColumnNames(table: TableSpec, layout?: DimensionLayout): string[] {
  const names: string[] = [
    ...table.key,
    ...table.exclude,
    ...metadataColumnList(table.columns).map((c) => c.name),
    ...dbtIdColumnList(table).map((c) => c.name),
    ...systemTimeColumnList(table).map((c) => c.name),
    inferredColumnName(table.columns),
  ]
  if (table.validFrom.kind === 'column') names.push(table.validFrom.column)
  if (table.softDeleteColumn !== undefined) names.push(table.softDeleteColumn)
  if (table.changes !== undefined) names.push(table.changes.operation.column)
  if (table.changes?.sequence !== undefined) names.push(table.changes.sequence)
  if (table.extract.mode === 'incremental') names.push(table.extract.cursor)
  if (layout !== undefined) {
    for (const c of [...layout.stored, ...layout.removed, ...layout.derived, ...layout.addColumns])
      names.push(c.name, captureRawColumn(c.name))
  }
  return names
}
