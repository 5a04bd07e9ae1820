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
