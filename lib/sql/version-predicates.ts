import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * The predicates that say which versions a statement or a read means, written once for every renderer (the
 * merge, the views, history reads): `alias` qualifies the dimension's columns (none: unqualified), `instant` is
 * any expression of the instant type (a literal, a parameter, a column of another table).
 */

/**
 * The key's current version (a deletion version under `deletes: new_record` included). Where the dialect
 * partitions the dimension on valid_to, the equivalent filter on the open end (invariant 2) is added so that
 * only the partition of open versions is read.
 */
export function currentVersion(d: SqlDialect, table: TableSpec, alias?: string): string {
  const col = qualify(d, alias)
  const flag = col(table.columns.isCurrent)
  if (!d.capabilities.partitionedOnValidTo) return flag
  const validTo = col(table.columns.validTo)
  const open =
    table.openEnd === null ? `${validTo} IS NULL` : `${validTo} = ${d.timestampLiteral(table.openEnd)}`
  return `${flag} AND ${open}`
}

/** The key's current version, unless it records a deletion: what `<target>_current` shows. */
export function liveCurrentVersion(d: SqlDialect, table: TableSpec, alias?: string): string {
  return `${currentVersion(d, table, alias)} AND ${notDeleted(d, table, alias)}`
}

/**
 * The version valid at `instant`, unless it records a deletion (invariant 8). Windows are half-open: a version
 * closed at exactly `instant` is not returned, its successor is. An open end given as a sentinel instant is later
 * than any instant asked for, so only a NULL open end needs its own test.
 */
export function liveVersionAt(d: SqlDialect, table: TableSpec, instant: string, alias?: string): string {
  const col = qualify(d, alias)
  const validTo = col(table.columns.validTo)
  const notEnded =
    table.openEnd === null ? `(${validTo} IS NULL OR ${validTo} > ${instant})` : `${validTo} > ${instant}`
  return `${col(table.columns.validFrom)} <= ${instant} AND ${notEnded} AND ${notDeleted(d, table, alias)}`
}

function notDeleted(d: SqlDialect, table: TableSpec, alias?: string): string {
  return `NOT ${qualify(d, alias)(table.columns.isDeleted)}`
}

function qualify(d: SqlDialect, alias: string | undefined): (column: string) => string {
  return (column) => (alias === undefined ? '' : `${alias}.`) + d.quoteIdentifier(column)
}
