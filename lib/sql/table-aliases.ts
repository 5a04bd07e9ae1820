import type { DimensionLayout } from '../core/dimension-layout.ts'
import { presetColumnList, systemTimeColumnList } from '../core/dimension-layout.ts'
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

  /** A column of the table has the name `name` (compared without case). */
  shadows(name: string): boolean {
    return this.#taken.has(name.toLowerCase())
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
 * The names a merge's statements write unquoted for themselves: table aliases, CTE names and the names of
 * working columns of a statement or of a temporary table only the merge reads. Every other name in its SQL is a
 * keyword, a function, a column of dimsync's own tables, or quoted (a source column is always quoted).
 * test/integration/alias-shadowing.emulator.test.ts collects the names the rendered SQL writes and checks each is
 * here.
 */
export const SHORT_NAMES: ReadonlySet<string> = new Set([
  ...'abcdefghijklmnopqrstuvwxyz',
  ...['cur', 'nw', 'tie', 'sample', 'dup', 'seq', 'nseq', 'live', 'gone', 'sk', 'per_key', 'per_instant'],
  ...['versions_in_order', 'same_time_batch', 'new_keys', 'live_keys', 'changed_keys', 'replaced', 'opened'],
  ...['later', 'pairs', 'key_text', 'event_at', 'dimsync_e', 'dimsync_o'],
])

/**
 * `sql` with every short name (SHORT_NAMES) that a column of the table would shadow renamed as `of` gives it,
 * everywhere it is written in the statement: the same renaming in every statement of a merge, so a temporary
 * table's working column is read by the name it was written with. Quoted identifiers, string literals and
 * comments are left as they are; `backslashEscapes`: string literals (and, in GoogleSQL, double-quoted ones and
 * backquoted identifiers) escape with a backslash, as in GoogleSQL, instead of doubling the quote.
 */
export function renameShadowed(aliases: TableAliases, sql: string, backslashEscapes: boolean): string {
  // Most tables have no column with a short name: their SQL is not scanned.
  if (![...SHORT_NAMES].some((name) => aliases.shadows(name))) return sql
  let out = ''
  let i = 0
  const quoted = (quote: string, backslash: boolean): void => {
    let j = i + 1
    for (; j < sql.length; j++) {
      const ch = sql[j]
      if (backslash && ch === '\\') j++
      else if (ch === quote) {
        if (!backslash && sql[j + 1] === quote) j++
        else break
      }
    }
    out += sql.slice(i, j + 1)
    i = j + 1
  }
  while (i < sql.length) {
    const ch = sql[i]!
    if (ch === "'") quoted("'", backslashEscapes)
    else if (ch === '"') quoted('"', backslashEscapes)
    else if (ch === '`') quoted('`', true)
    else if (ch === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i)
      const j = end === -1 ? sql.length : end
      out += sql.slice(i, j)
      i = j
    } else if (ch === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2)
      const j = end === -1 ? sql.length : end + 2
      out += sql.slice(i, j)
      i = j
    } else if (/[A-Za-z0-9_]/.test(ch)) {
      let j = i + 1
      while (j < sql.length && /[A-Za-z0-9_]/.test(sql[j]!)) j++
      const word = sql.slice(i, j)
      // A word followed by a quote prefixes a literal (r'…', b'…'); one starting with a digit is a number.
      const prefixesLiteral = sql[j] === "'" || sql[j] === '"'
      out += SHORT_NAMES.has(word) && !prefixesLiteral && aliases.shadows(word) ? aliases.of(word) : word
      i = j
    } else {
      out += ch
      i++
    }
  }
  return out
}

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
    ...presetColumnList(table).map((c) => c.name),
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
