import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'
import { storedEndAfter } from './version-end.ts'

/**
 * The predicates that say which versions a statement or a read means, written once for every renderer (the
 * merge, the views, history reads): `alias` qualifies the dimension's columns (none: unqualified), `instant` is
 * any expression of the instant type (a literal, a parameter, a column of another table).
 */

/**
 * The key's current version (a deletion version under `deletes: new_record` included). Where the dialect
 * partitions the dimension on valid_to, the equivalent filter on the open end (invariant 2, docs/invariants.md) is added so that
 * only the partition of open versions is read.
 */
export function currentVersion(d: SqlDialect, table: TableSpec, alias?: string): string {
  const col = qualify(d, alias)
  const flag = col(table.columns.isCurrent) + andKnownNow(d, table, alias)
  if (!d.capabilities.partitionedOnValidTo) return flag
  return `${flag} AND ${isOpen(d, table, col(table.columns.validTo))}`
}

/**
 * What the merge's check of invariant 2 counts as a key's current version: a version either flag calls current
 * (`is_current`, or an open `valid_to`), known now.
 */
export function currentByEitherFlag(d: SqlDialect, table: TableSpec, alias?: string): string {
  const col = qualify(d, alias)
  return (
    `(${col(table.columns.isCurrent)} OR ${isOpen(d, table, col(table.columns.validTo))})` +
    andKnownNow(d, table, alias)
  )
}

/**
 * What a merge about to change a key finds current in the dimension (the check of bent keys): a version either flag
 * calls current, known now; where the dimension is partitioned on valid_to, an open version only, so that the read
 * stays in the open partition and does not grow with history.
 */
export function currentBeforeTheBatch(d: SqlDialect, table: TableSpec, alias?: string): string {
  if (!d.capabilities.partitionedOnValidTo) return currentByEitherFlag(d, table, alias)
  return isOpen(d, table, qualify(d, alias)(table.columns.validTo)) + andKnownNow(d, table, alias)
}

/** The version's `is_current` and its `valid_to` disagree on whether it is current (invariant 2). */
export function currentFlagsDisagree(d: SqlDialect, table: TableSpec, alias?: string): string {
  const col = qualify(d, alias)
  return `${col(table.columns.isCurrent)} <> (${isOpen(d, table, col(table.columns.validTo))})`
}

/**
 * Bitemporal tables: ` AND <row not superseded in system time>` (what the table says now); '' for other tables,
 * whose rows are all known now. Every predicate that means "now" includes it.
 */
export function andKnownNow(d: SqlDialect, table: TableSpec, alias?: string): string {
  const open = knownNowCondition(d, table, alias)
  return open === undefined ? '' : ` AND ${open}`
}

/** Bitemporal tables: the row is not superseded in system time; undefined for other tables. */
export function knownNowCondition(d: SqlDialect, table: TableSpec, alias?: string): string | undefined {
  if (table.systemTime === undefined) return undefined
  return isOpen(d, table, qualify(d, alias)(table.systemTime.systemTo))
}

/**
 * Bitemporal tables: the row was known at `instant` (an instant expression): learned at or before it and not
 * superseded by then (half-open, like business windows).
 */
export function knownAt(d: SqlDialect, table: TableSpec, instant: string, alias?: string): string {
  const systemTime = table.systemTime
  if (systemTime === undefined) throw new Error(`table ${table.name} has no system time (system_time: true)`)
  const col = qualify(d, alias)
  const after = `${col(systemTime.systemTo)} > ${instant}`
  return `${col(systemTime.systemFrom)} <= ${instant} AND ${notEndedBy(table, col(systemTime.systemTo), after)}`
}

/** `column` holds the table's open end (NULL or the sentinel instant). */
function isOpen(d: SqlDialect, table: TableSpec, column: string): string {
  return table.openEnd === null ? `${column} IS NULL` : `${column} = ${d.timestampLiteral(table.openEnd)}`
}

/**
 * The end column `end` has not ended by an instant, `after` saying that of a closed end. An open end given as a
 * sentinel instant is later than any instant asked for, so only a NULL open end needs its own test.
 */
function notEndedBy(table: TableSpec, end: string, after: string): string {
  return table.openEnd === null ? `(${end} IS NULL OR ${after})` : after
}

/** The key's current version, unless it records a deletion: what `<target>_current` shows. */
export function liveCurrentVersion(d: SqlDialect, table: TableSpec, alias?: string): string {
  return `${currentVersion(d, table, alias)} AND ${notDeleted(d, table, alias)}`
}

/**
 * The version valid at `instant`, unless it records a deletion (invariant 8, docs/invariants.md), as the table says now. Windows are
 * half-open: a version closed at exactly `instant` is not returned, its successor is.
 */
export function liveVersionAt(d: SqlDialect, table: TableSpec, instant: string, alias?: string): string {
  return liveValidAt(d, table, instant, alias) + andKnownNow(d, table, alias)
}

/**
 * Bitemporal tables: the version valid at business instant `validAt` as the table said at system instant
 * `knownAtInstant` (both instant expressions; a NULL `knownAtInstant` means now), unless it records a deletion.
 */
export function liveVersionAtKnownAt(
  d: SqlDialect,
  table: TableSpec,
  validAt: string,
  knownAtInstant: string,
  alias?: string,
): string {
  const now = `${knownAtInstant} IS NULL${andKnownNow(d, table, alias)}`
  return `${liveValidAt(d, table, validAt, alias)} AND ((${now}) OR (${knownAt(d, table, knownAtInstant, alias)}))`
}

function liveValidAt(d: SqlDialect, table: TableSpec, instant: string, alias?: string): string {
  const col = qualify(d, alias)
  const validTo = col(table.columns.validTo)
  const notEnded = notEndedBy(table, validTo, storedEndAfter(d, table, validTo, instant))
  return `${col(table.columns.validFrom)} <= ${instant} AND ${notEnded} AND ${notDeleted(d, table, alias)}`
}

function notDeleted(d: SqlDialect, table: TableSpec, alias?: string): string {
  return `NOT ${qualify(d, alias)(table.columns.isDeleted)}`
}

function qualify(d: SqlDialect, alias: string | undefined): (column: string) => string {
  return (column) => (alias === undefined ? '' : `${alias}.`) + d.quoteIdentifier(column)
}
