import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'
import { knownAt, knownNowCondition, liveVersionAt, liveVersionAtKnownAt } from './version-predicates.ts'

export interface HistoryQuery {
  /** Key columns and the text of their values: versions of that key only (compared as text). */
  readonly key?: readonly (readonly [column: string, value: string])[]
  /** ISO instant: only the version of each key valid then (what `<target>_as_of` returns). */
  readonly asOf?: string
  /**
   * Bitemporal tables, ISO instant: the rows as the table said then (absent: as it says now). Every table: the
   * rows known now.
   */
  readonly knownAt?: string
}

/** The versions of a dimension, ordered by key and valid_from. */
export function renderHistoryQuery(
  d: SqlDialect,
  table: TableSpec,
  dimension: TableRef,
  query: HistoryQuery,
): string {
  const where: string[] = []
  for (const [column, value] of query.key ?? [])
    where.push(`${d.castToString(d.quoteIdentifier(column))} = ${d.stringLiteral(value)}`)
  const knownAtInstant = query.knownAt === undefined ? undefined : d.timestampLiteral(query.knownAt)
  if (query.asOf !== undefined) {
    const asOf = d.timestampLiteral(query.asOf)
    where.push(
      knownAtInstant === undefined
        ? liveVersionAt(d, table, asOf)
        : liveVersionAtKnownAt(d, table, asOf, knownAtInstant),
    )
  } else if (knownAtInstant !== undefined) where.push(knownAt(d, table, knownAtInstant))
  else {
    const now = knownNowCondition(d, table)
    if (now !== undefined) where.push(now)
  }
  const order = [...table.key, table.columns.validFrom].map((c) => d.quoteIdentifier(c)).join(', ')
  return `SELECT * FROM ${d.table(dimension)}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order}`
}
