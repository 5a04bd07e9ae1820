import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'
import { storedEndAfter } from './version-end.ts'
import { andKnownNow, liveVersionAt } from './version-predicates.ts'

/** Later than any instant a fact can have, in every dialect (BigQuery's largest TIMESTAMP). */
const END_OF_TIME = '9999-12-31T23:59:59.999999Z'

/**
 * `alias` is the live version valid at `instant` (liveVersionAt), written for the ON clause of a join of facts
 * to versions: the open end of a dimension whose open versions hold NULL is compared through COALESCE, not
 * `valid_to IS NULL OR valid_to > t`: an OR in the join condition makes DuckDB plan a nested-loop join (every
 * fact against every version) instead of a hash join on the key with the window as a filter. Same rows. On a
 * bitemporal dimension only rows known now count (a superseded row's window may overlap its correction's).
 */
export function versionAtInJoin(d: SqlDialect, table: TableSpec, instant: string, alias: string): string {
  if (table.openEnd !== null) return liveVersionAt(d, table, instant, alias)
  const col = (name: string) => `${alias}.${d.quoteIdentifier(name)}`
  const n = table.columns
  return (
    `${col(n.validFrom)} <= ${instant} AND ` +
    storedEndAfter(d, table, `COALESCE(${col(n.validTo)}, ${d.timestampLiteral(END_OF_TIME)})`, instant) +
    ` AND NOT ${col(n.isDeleted)}` +
    andKnownNow(d, table, alias)
  )
}

/**
 * The versions of `table` (stored in `ref`) a join of facts whose event times are all at or after the instant
 * expression `earliest` can match (versionAtInJoin), as a derived table of the columns that join reads: the open
 * versions and those whose window had not ended by `earliest`. A version valid at a fact's time has not ended by
 * then, so none is left out; the bound is a filter on the bare valid_to compared with a constant (a script
 * variable on BigQuery), so a dimension partitioned on valid_to is read from the partition `earliest` falls in
 * on (and the open versions' partition), not through its whole history. A NULL open end is read as its own
 * branch (`valid_to IS NULL`) rather than through an OR, each branch pruning on its own filter. `otherColumns` are
 * read besides. The merge's check of invariant 2 reads the versions a batch can have written through it too.
 */
export function versionsNotEndedBy(
  d: SqlDialect,
  table: TableSpec,
  ref: TableRef,
  earliest: string,
  otherColumns: readonly string[] = [],
): string {
  const n = table.columns
  const columns = [
    ...table.key,
    n.surrogateKey,
    n.validFrom,
    n.validTo,
    n.isDeleted,
    ...(table.systemTime === undefined ? [] : [table.systemTime.systemTo]),
    ...otherColumns,
  ]
    .map((c) => d.quoteIdentifier(c))
    .join(', ')
  const from = (where: string) => `SELECT ${columns} FROM ${d.table(ref)} WHERE ${where}`
  const validTo = d.quoteIdentifier(n.validTo)
  const notEnded = storedEndAfter(d, table, validTo, earliest)
  if (table.openEnd !== null) return `(${from(notEnded)})`
  return `(\n    ${from(`${validTo} IS NULL`)}\n    UNION ALL ${from(notEnded)}\n  )`
}
