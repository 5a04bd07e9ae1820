/**
 * The aggregates of `dimsync report`, rendered with the warehouse's dialect so that the same statements run on
 * DuckDB and BigQuery. Every statement returns a few rows per day, per batch or per depth, never a row per
 * version: the page is built from aggregates whatever the size of the dimension.
 *
 * Days are the first ten characters of a value's canonical text (`YYYY-MM-DD`, UTC), which every dialect renders
 * alike. Formatting a value is the costly part, so per-day counts group by the raw instant first and format
 * each distinct instant once.
 */
import type { FactReference } from '../core/fact-spec.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'
import { storedEnd } from './version-end.ts'
import { knownNowCondition } from './version-predicates.ts'

/** The staged type of dimsync's instants (valid_from, valid_to, system time, the ledger's times). */
const INSTANT_TYPE = 'TIMESTAMP WITH TIME ZONE'

/** `YYYY-MM-DD` of a value of staged type `type` (an instant in UTC, a date, a date-time). */
export function dayOf(d: SqlDialect, expression: string, type: string = INSTANT_TYPE): string {
  return `SUBSTR(${d.canonicalText(expression, type)}, 1, 10)`
}

/** One count per day from per-instant arms: each arm selects `t` and its counts, named as in `counts`. */
function perDay(d: SqlDialect, counts: readonly string[], arms: readonly string[], type?: string): string {
  const sums = counts.map((c) => `SUM(${c}) AS ${c}`).join(', ')
  return (
    `SELECT ${dayOf(d, 't', type)} AS day_text, ${sums}\n` +
    `FROM (\n  ${arms.join('\n  UNION ALL\n  ')}\n) per_instant\nGROUP BY day_text ORDER BY day_text`
  )
}

/**
 * The versions a report counts: those known now (bitemporal tables: not superseded in system time), without the
 * unknown member facts point at (its natural key is NULL, and a version's never is).
 */
function knownNow(d: SqlDialect, table: TableSpec): string {
  const keyed = `${d.quoteIdentifier(table.key[0]!)} IS NOT NULL`
  const now = knownNowCondition(d, table)
  return now === undefined ? keyed : `${keyed} AND ${now}`
}

/**
 * Depth: how many keys have how many versions (`versions`, `keys`), with `live_keys`, the keys among them whose
 * current version is not a deletion.
 */
export function renderDepthQuery(d: SqlDialect, table: TableSpec, dimension: TableRef): string {
  const n = table.columns
  const q = (c: string) => d.quoteIdentifier(c)
  const keys = table.key.map(q).join(', ')
  return (
    `SELECT versions, COUNT(*) AS keys_count, SUM(live) AS live_keys\n` +
    `FROM (\n  SELECT ${keys}, COUNT(*) AS versions,\n` +
    `    MAX(CASE WHEN ${q(n.isCurrent)} AND NOT ${q(n.isDeleted)} THEN 1 ELSE 0 END) AS live\n` +
    `  FROM ${d.table(dimension)} WHERE ${knownNow(d, table)}\n  GROUP BY ${keys}\n) per_key\n` +
    `GROUP BY versions ORDER BY versions`
  )
}

/** Per day: versions opened (`opened`, by valid_from) and closed (`closed`, by valid_to) as the table says now. */
export function renderVersionDaysQuery(d: SqlDialect, table: TableSpec, dimension: TableRef): string {
  const n = table.columns
  const q = (c: string) => d.quoteIdentifier(c)
  const dim = d.table(dimension)
  const now = knownNow(d, table)
  return perDay(
    d,
    ['opened', 'closed'],
    [
      `SELECT ${q(n.validFrom)} AS t, COUNT(*) AS opened, 0 AS closed FROM ${dim} WHERE ${now} GROUP BY ${q(n.validFrom)}`,
      `SELECT ${q(n.validTo)} AS t, 0 AS opened, COUNT(*) AS closed FROM ${dim} WHERE ${now} AND NOT ${q(n.isCurrent)} GROUP BY ${q(n.validTo)}`,
    ],
  )
}

/**
 * Bitemporal tables, per extraction day of the batch that superseded them (`corrected`): rows closed in system
 * time. A row's system_to is the applied time of the merge that superseded it, which the ledger records.
 */
export function renderSupersededDaysQuery(
  d: SqlDialect,
  table: TableSpec,
  dimension: TableRef,
  batches: TableRef,
): string {
  const systemTime = table.systemTime
  const known = knownNowCondition(d, table)
  if (systemTime === undefined || known === undefined)
    throw new Error(`table ${table.name} has no system time (system_time: true)`)
  const to = d.quoteIdentifier(systemTime.systemTo)
  return perDay(
    d,
    ['corrected'],
    [
      `SELECT b.extracted_at AS t, SUM(s.superseded) AS corrected FROM (\n` +
        `    SELECT ${to} AS system_to, COUNT(*) AS superseded FROM ${d.table(dimension)}\n` +
        `    WHERE ${d.quoteIdentifier(table.key[0]!)} IS NOT NULL AND NOT (${known}) GROUP BY ${to}\n` +
        `  ) s JOIN ${d.table(batches)} b ON b.applied_at = s.system_to AND b.target = ${d.stringLiteral(table.target)}\n` +
        `  GROUP BY b.extracted_at`,
    ],
  )
}

/**
 * How keys that come back after a delete can be counted: `gaps` (a version that starts after its predecessor
 * ended, or after a deletion version: one window over the versions of each key), `deletion-versions` (under
 * `deletes: new_record` a deletion version that is no longer current was followed by a return: no window), or
 * `none` when the table cannot delete keys.
 */
export function restoredCounting(table: TableSpec): 'gaps' | 'deletion-versions' | 'none' {
  if (table.mode !== 'history') return 'none'
  const feed = table.changes !== undefined || table.softDeleteColumn !== undefined
  if (table.deletes === 'new_record' && !feed) return 'deletion-versions'
  if (table.deletes === 'ignore' && !feed) return 'none'
  return 'gaps'
}

/** Per day (`restored`): versions that bring a key back after a delete, by their valid_from. */
export function renderRestoredDaysQuery(d: SqlDialect, table: TableSpec, dimension: TableRef): string {
  const n = table.columns
  const q = (c: string) => d.quoteIdentifier(c)
  const dim = d.table(dimension)
  const now = knownNow(d, table)
  if (restoredCounting(table) === 'deletion-versions')
    return perDay(
      d,
      ['restored'],
      [
        `SELECT ${q(n.validTo)} AS t, COUNT(*) AS restored FROM ${dim} WHERE ${now} AND ${q(n.isDeleted)} AND NOT ${q(n.isCurrent)} GROUP BY ${q(n.validTo)}`,
      ],
    )
  const keys = table.key.map(q).join(', ')
  const previous = (c: string) => `LAG(${q(c)}) OVER (PARTITION BY ${keys} ORDER BY ${q(n.validFrom)})`
  // A version follows a gap when its predecessor's stored end is before the end a linked predecessor stores;
  // only `deletes: new_record` writes deletion versions, which a return follows without a gap.
  const gap = `previous_end < ${storedEnd(d, table, 'valid_from')}`
  const deletionVersions = table.deletes === 'new_record'
  return perDay(
    d,
    ['restored'],
    [
      `SELECT valid_from AS t, COUNT(*) AS restored FROM (\n` +
        `    SELECT ${q(n.validFrom)} AS valid_from, ${previous(n.validTo)} AS previous_end` +
        `${deletionVersions ? `, ${previous(n.isDeleted)} AS previous_deleted` : ''}\n` +
        `    FROM ${dim} WHERE ${now}\n  ) versions_in_order\n` +
        `  WHERE ${gap}${deletionVersions ? ' OR previous_deleted' : ''} GROUP BY valid_from`,
    ],
  )
}

/**
 * Per extraction day of the batches merged into `target`: `batches`, `deleted_keys`, `late_keys` (the ledger's
 * counts).
 */
export function renderLedgerDaysQuery(d: SqlDialect, batches: TableRef, target: string): string {
  return perDay(
    d,
    ['batches', 'deleted_keys', 'late_keys'],
    [
      `SELECT extracted_at AS t, COUNT(*) AS batches, SUM(deleted_keys) AS deleted_keys, SUM(late_keys) AS late_keys ` +
        `FROM ${d.table(batches)} WHERE target = ${d.stringLiteral(target)} GROUP BY extracted_at`,
    ],
  )
}

/**
 * Per extraction day of the batch that retired them (`corrected`): versions moved to the retired-versions table
 * because a later event corrected the state they held.
 */
export function renderRetiredDaysQuery(
  d: SqlDialect,
  retired: TableRef,
  batches: TableRef,
  target: string,
): string {
  return perDay(
    d,
    ['corrected'],
    [
      `SELECT b.extracted_at AS t, COUNT(*) AS corrected FROM ${d.table(retired)} r\n` +
        `  JOIN ${d.table(batches)} b ON b.batch_id = r.retired_by AND b.target = ${d.stringLiteral(target)}\n` +
        `  GROUP BY b.extracted_at`,
    ],
  )
}

/** The latest `limit` batches merged into `target`, newest first, with the ledger's counts. */
export function renderRecentBatchesQuery(
  d: SqlDialect,
  batches: TableRef,
  target: string,
  limit: number,
): string {
  return (
    `SELECT batch_id, ${d.castToString('extracted_at')} AS extracted_at, ${d.castToString('applied_at')} AS applied_at, mode,\n` +
    `  events, inserted_versions, closed_versions, deleted_keys, unchanged_events, late_keys\n` +
    `FROM ${d.table(batches)} WHERE target = ${d.stringLiteral(target)}\n` +
    `ORDER BY applied_at DESC, batch_id DESC LIMIT ${Math.trunc(limit)}`
  )
}

/** A fact reference as the per-day query reads it: its column, and the dimension's inferred flag if counted. */
export interface FactReferenceColumns {
  readonly reference: FactReference
  readonly dimension: TableRef
  readonly dimensionSurrogateKey: string
  /** The dimension's inferred-member flag column, when inferred members are counted. */
  readonly inferredFlag?: string
}

/**
 * Per event day of a fact table: `rows`, and per reference i `unknown_<i>` (facts on the unknown member) and
 * `inferred_<i>` (facts on an inferred member: a version whose flag is set).
 */
export function renderFactDaysQuery(
  d: SqlDialect,
  fact: TableRef,
  eventTime: { readonly name: string; readonly type: string },
  references: readonly FactReferenceColumns[],
): string {
  const q = (c: string) => d.quoteIdentifier(c)
  const counts = ['fact_rows']
  const selected = ['COUNT(*) AS fact_rows']
  const joins: string[] = []
  references.forEach((r, i) => {
    const sk = `f.${q(r.reference.surrogateKeyColumn)}`
    counts.push(`unknown_${i}`, `inferred_${i}`)
    selected.push(
      `SUM(CASE WHEN ${sk} = ${Math.trunc(r.reference.unknownMemberKey)} THEN 1 ELSE 0 END) AS unknown_${i}`,
    )
    if (r.inferredFlag === undefined) {
      selected.push(`0 AS inferred_${i}`)
      return
    }
    selected.push(`SUM(CASE WHEN i${i}.sk IS NULL THEN 0 ELSE 1 END) AS inferred_${i}`)
    joins.push(
      `\n    LEFT JOIN (SELECT DISTINCT ${q(r.dimensionSurrogateKey)} AS sk FROM ${d.table(r.dimension)} WHERE ${q(r.inferredFlag)}) i${i} ON i${i}.sk = ${sk}`,
    )
  })
  const t = `f.${q(eventTime.name)}`
  return perDay(
    d,
    counts,
    [
      `SELECT ${t} AS t, ${selected.join(', ')}\n    FROM ${d.table(fact)} f${joins.join('')}\n    GROUP BY ${t}`,
    ],
    eventTime.type,
  )
}

/**
 * Every row of one key, superseded rows of bitemporal tables included (the key's timeline draws both time axes),
 * ordered by valid_from and, for bitemporal tables, system_from.
 */
export function renderKeyVersionsQuery(
  d: SqlDialect,
  table: TableSpec,
  dimension: TableRef,
  key: readonly (readonly [column: string, value: string])[],
): string {
  const q = (c: string) => d.quoteIdentifier(c)
  const where = key.map(([column, value]) => `${d.castToString(q(column))} = ${d.stringLiteral(value)}`)
  const order = [table.columns.validFrom, ...(table.systemTime ? [table.systemTime.systemFrom] : [])]
  return (
    `SELECT * FROM ${d.table(dimension)} WHERE ${where.join(' AND ')}\n` +
    `ORDER BY ${[...order, table.columns.surrogateKey].map(q).join(', ')}`
  )
}
