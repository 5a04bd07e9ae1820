import { typeFamily } from '../core/staged-types.ts'
import type { RowHashPiece, SqlDialect } from './dialect.ts'

/** State marker used instead of a row hash for deletion events; cannot collide with a hex MD5. */
export const DELETED_STATE = 'deleted'

/** A tracked column: its name, and its staged type (DuckDB type names) when known. */
export type HashedColumn = string | { readonly name: string; readonly type: string }

/**
 * A NULL-safe, unambiguous hash of the tracked columns.
 *
 * Columns are taken in name order, so the source's column order does not matter. Each non-NULL value adds
 * `<name length>:<name>=<value length>:<value>;` and a NULL adds nothing. Because every value is tagged with its
 * column and its length, NULL differs from '' and from 'NULL', and moving a value to another column changes the
 * hash. Because a NULL adds nothing, adding a new nullable column to a dimension does not re-version every key.
 * (dbt's `coalesce(cast(x as string), '')` makes NULL equal ''; `concat_ws` skips NULLs: both miss changes.)
 *
 * Values are rendered with the dialect's canonical text of their type (lib/core/staged-types.ts), so the same row
 * gives the same hex in DuckDB and BigQuery. Lengths count characters (DuckDB `length`, BigQuery `LENGTH` of a
 * STRING both count Unicode code points).
 */
export function renderRowHash(
  dialect: SqlDialect,
  columns: readonly HashedColumn[],
  qualifier?: string,
  options: RowHashOptions = {},
): string {
  const pieces = rowHashPieces(dialect, columns, qualifier, options)
  if (pieces.length === 0) return dialect.md5Hex(dialect.stringLiteral(''))
  return dialect.rowHashOf(pieces)
}

/**
 * The pieces of the row hash of `columns`, in hashing order (by name): the text of any run of consecutive pieces
 * (`SqlDialect.rowHashText`) is that run's share of the hashed text.
 */
export function rowHashPieces(
  dialect: SqlDialect,
  columns: readonly HashedColumn[],
  qualifier?: string,
  options: RowHashOptions = {},
): RowHashPiece[] {
  const typed = columns.map((c) => (typeof c === 'string' ? { name: c, type: undefined } : c))
  const sorted = [...typed].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const qualified = (name: string) => (qualifier ? `${qualifier}.` : '') + dialect.quoteIdentifier(name)
  return sorted.map(({ name, type }) => {
    const column = qualified(name)
    const textColumn =
      options.readsStagedFloatTexts && type !== undefined && typeFamily(type).kind === 'float'
        ? dialect.stagedFloatTextColumn?.(name)
        : undefined
    return {
      tag: dialect.stringLiteral(`${name.length}:${name}=`),
      column,
      text: dialect.canonicalText(column, type),
      type,
      ...(textColumn !== undefined ? { floatText: qualified(textColumn) } : {}),
    }
  })
}

export interface RowHashOptions {
  /**
   * The row is a row of the staging table as the warehouse loaded it: a float's text may be read from the column
   * the load wrote it to (`SqlDialect.stagedFloatTextColumn`).
   */
  readonly readsStagedFloatTexts?: boolean
}
