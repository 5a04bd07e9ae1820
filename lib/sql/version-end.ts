import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * The one rule for how valid_to holds a closed version's end (EndStyle in metadata-columns.ts): every statement
 * that closes a version writes `storedEnd` of the exclusive end, and every read of an end compares through
 * `storedEndAfter`, so windows stay half-open `[valid_from, end)` whatever the table stores. The open end (NULL or
 * the open_end sentinel) is stored as it is.
 */

/** Fivetran's history mode ends a version one millisecond before its successor starts. */
const LAST_MILLISECOND = 1

function shift(table: TableSpec): number {
  return table.endStyle === 'last_millisecond' ? LAST_MILLISECOND : 0
}

/** The valid_to to write for a version that ends (exclusively) at the instant expression `end` (NULL stays NULL). */
export function storedEnd(d: SqlDialect, table: TableSpec, end: string): string {
  const ms = shift(table)
  return ms === 0 ? end : d.addMilliseconds(end, -ms)
}

/**
 * The valid_to to write for a version that ends (exclusively) at the instant expression `end`, where the boolean
 * expression `byDelete` says a delete of the key ends it: Fivetran's history mode writes the delete time itself
 * as `_fivetran_end` of a deleted key's last version (and the next start less a millisecond otherwise). dimsync's
 * reads add the millisecond to it too, so such a version reads as current until a millisecond after its delete, as
 * Fivetran's `BETWEEN _fivetran_start AND _fivetran_end` reads it.
 */
export function storedEndOfChange(d: SqlDialect, table: TableSpec, end: string, byDelete: string): string {
  const shifted = storedEnd(d, table, end)
  return shifted === end ? end : `CASE WHEN ${byDelete} THEN ${end} ELSE ${shifted} END`
}

/** The valid_to to write for a version that ends (exclusively) at the ISO instant `end`. */
export function storedEndInstant(table: TableSpec, end: string): string {
  return new Date(Date.parse(end) - shift(table)).toISOString()
}

/**
 * `stored` (a valid_to, or an expression over it) ends after the instant expression `instant`: the version's
 * window has not ended by then. The millisecond is taken off the instant, not added to the end, so the column
 * stays bare for partition pruning and the open-end sentinel never overflows the timestamp range.
 */
export function storedEndAfter(d: SqlDialect, table: TableSpec, stored: string, instant: string): string {
  const ms = shift(table)
  return `${stored} > ${ms === 0 ? instant : d.addMilliseconds(instant, -ms)}`
}
