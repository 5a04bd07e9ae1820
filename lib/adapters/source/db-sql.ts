/**
 * SQL text of database extracts (PostgreSQL and MySQL/MariaDB), pure: no I/O. Identifiers come from the
 * server's own column list or from validated config and are always quoted; values are rendered as literals by
 * the caller's `literal` function (PostgreSQL's COPY takes no bind parameters).
 */
import type { DatabaseSourceSpec } from '../../core/table-spec.ts'

export type SqlFlavor = 'postgres' | 'mysql'

/** A value the extract compares against: a watermark part or a chunk boundary (as read from the server). */
export type SqlValue = string | number | Uint8Array

/** Renders a value as a literal of the flavor (the server coerces it to the compared column's type). */
export type LiteralFn = (value: SqlValue) => string

/** Alias of a query source inside the generated SQL. */
export const SOURCE_ALIAS = 'dimsync_source'

/** `"name"` (PostgreSQL) or `` `name` `` (MySQL), the quote character doubled inside the name. */
export function quoteIdent(flavor: SqlFlavor, name: string): string {
  return flavor === 'postgres' ? `"${name.replaceAll('"', '""')}"` : `\`${name.replaceAll('`', '``')}\``
}

/**
 * The FROM item of a source: a (schema-qualified) table, quoted part by part, or the user's SELECT as a
 * derived table. A trailing semicolon of the query is dropped; anything else is left to the server to parse.
 */
export function relationSql(flavor: SqlFlavor, spec: DatabaseSourceSpec): string {
  if (spec.table !== undefined) {
    return spec.table
      .split('.')
      .map((part) => quoteIdent(flavor, part))
      .join('.')
  }
  return `(${normalizeQuery(spec.query ?? '')}) AS ${quoteIdent(flavor, SOURCE_ALIAS)}`
}

/** Drops trailing semicolons and blanks, which would end the derived table early. */
export function normalizeQuery(query: string): string {
  return query.replace(/[\s;]+$/u, '')
}

/**
 * `(a, b, c) <op> (v1, v2, v3)` in lexicographic order, written out as ORs of equalities so that both servers use
 * an index on the leading column: `a > v1 OR (a = v1 AND (b > v2 OR (b = v2 AND c <op> v3)))`.
 * `op` is the comparison of the last column: `>` (strictly after the tuple) or `>=` (at or after).
 */
export function tupleAfter(
  columns: readonly string[],
  values: readonly SqlValue[],
  op: '>' | '>=',
  literal: LiteralFn,
): string {
  if (columns.length === 0 || columns.length !== values.length) {
    throw new Error(`tupleAfter: ${columns.length} columns but ${values.length} values`)
  }
  const last = columns.length - 1
  let sql = `${columns[last]} ${op} ${literal(values[last]!)}`
  for (let i = last - 1; i >= 0; i--) {
    const v = literal(values[i]!)
    sql = `${columns[i]} > ${v} OR (${columns[i]} = ${v} AND (${sql}))`
  }
  return `(${sql})`
}

export interface DeltaInput {
  readonly flavor: SqlFlavor
  /** Quoted cursor column. */
  readonly cursor: string
  /** Quoted key columns. */
  readonly key: readonly string[]
  readonly watermark?: { readonly cursor: SqlValue; readonly key: readonly SqlValue[] }
  readonly lookbackMinutes: number
  /** Server type of the cursor, for the look-back arithmetic (`timestamp with time zone`, `DATETIME(6)`). */
  readonly cursorCastType: string
  readonly literal: LiteralFn
}

/**
 * Which rows an incremental extract reads: everything on the first run; then every row whose cursor is at or
 * after the watermark's cursor. The rows at the watermark's own cursor value are read again on purpose: a row
 * committed after the last extract with that same cursor (a second-precision DATETIME ties all the time) and a
 * key below the watermark's would be skipped for good by a strict (cursor, key) comparison. The merge drops
 * re-read rows that did not change. With a look-back window, every row whose cursor is at most N minutes before
 * the watermark's is re-read as well (rows a transaction committed late with an older cursor value). Returns
 * undefined when every row qualifies.
 */
export function deltaPredicate(input: DeltaInput): string | undefined {
  const { watermark, literal } = input
  if (watermark === undefined) return undefined
  if (watermark.key.length !== input.key.length) {
    throw new Error(
      `the stored watermark has ${watermark.key.length} key values but the table has ${input.key.length} key columns`,
    )
  }
  if (input.lookbackMinutes > 0) {
    const from =
      input.flavor === 'postgres'
        ? `CAST(${literal(watermark.cursor)} AS ${input.cursorCastType}) - INTERVAL '${input.lookbackMinutes} minutes'`
        : `CAST(${literal(watermark.cursor)} AS ${input.cursorCastType}) - INTERVAL ${input.lookbackMinutes} MINUTE`
    return `${input.cursor} >= ${from}`
  }
  return `${input.cursor} >= ${literal(watermark.cursor)}`
}

/**
 * `(a, b) < (v1, v2)` in lexicographic order, written out so that both servers use an index on the leading
 * column: `a < v1 OR (a = v1 AND b < v2)`. The complement of `tupleAfter(..., '>=')` for keys without NULLs.
 */
export function tupleBefore(
  columns: readonly string[],
  values: readonly SqlValue[],
  literal: LiteralFn,
): string {
  if (columns.length === 0 || columns.length !== values.length) {
    throw new Error(`tupleBefore: ${columns.length} columns but ${values.length} values`)
  }
  const last = columns.length - 1
  let sql = `${columns[last]} < ${literal(values[last]!)}`
  for (let i = last - 1; i >= 0; i--) {
    const v = literal(values[i]!)
    sql = `${columns[i]} < ${v} OR (${columns[i]} = ${v} AND (${sql}))`
  }
  return `(${sql})`
}

/**
 * Predicates of the chunks of a key-range split. `bounds` are the first keys of chunks 2..n, ascending in the
 * server's order. Every row lands in exactly one chunk, so the completeness check covers the split: a key
 * without NULLs by its order against the bounds, a key with a NULL part in chunk 1 (NULL keys are refused
 * later with their count). Each predicate is a range on the key's leading column, so the server reads only its
 * chunk through the key's index instead of scanning the table.
 */
export function chunkPredicates(
  key: readonly string[],
  bounds: readonly (readonly SqlValue[])[],
  literal: LiteralFn,
): string[] {
  if (bounds.length === 0) return ['TRUE']
  const anyNull = key.map((k) => `${k} IS NULL`).join(' OR ')
  const noNull = key.map((k) => `${k} IS NOT NULL`).join(' AND ')
  return [
    `${tupleBefore(key, bounds[0]!, literal)} OR ${anyNull}`,
    ...bounds.map((lower, i) => {
      const from = `${noNull} AND ${tupleAfter(key, lower, '>=', literal)}`
      return i + 1 < bounds.length ? `${from} AND ${tupleBefore(key, bounds[i + 1]!, literal)}` : from
    }),
  ]
}

/** `WHERE a AND b` of the non-empty conditions, or ''. */
export function whereClause(conditions: readonly (string | undefined)[]): string {
  const present = conditions.filter((c): c is string => c !== undefined && c !== 'TRUE')
  return present.length === 0 ? '' : ` WHERE ${present.map((c) => `(${c})`).join(' AND ')}`
}

/**
 * `count` names for generated columns, `prefix0`, `prefix1`, ..., none equal to a column of the relation
 * (compared case-insensitively, as MySQL does). A generated alias that equals a source column would capture
 * references to it: both servers resolve a name in ORDER BY to an output alias first.
 */
export function freshAliases(prefix: string, count: number, columns: Iterable<string>): string[] {
  const taken = new Set([...columns].map((c) => c.toLowerCase()))
  let base = prefix
  const collides = (b: string) =>
    Array.from({ length: count }, (_, i) => `${b}${i}`).some((alias) => taken.has(alias))
  for (let n = 1; collides(base); n++) base = `${prefix}${'_'.repeat(n)}`
  return Array.from({ length: count }, (_, i) => `${base}${i}`)
}

/**
 * The query whose rows are the first keys of chunks 2..n: every `step`-th key of the (filtered) relation in key
 * order. One ordered pass over the key (an index-only scan when the key is indexed), in the extract's snapshot.
 * `columns` are the relation's columns, which the generated aliases avoid.
 */
export function chunkBoundsSql(
  relation: string,
  keySelect: readonly string[],
  key: readonly string[],
  where: string,
  step: number,
  columns: Iterable<string>,
): string {
  const aliases = freshAliases('dimsync_k', keySelect.length + 1, columns)
  const rowNumber = aliases.pop()!
  const texts = keySelect.map((expr, i) => `${expr} AS ${aliases[i]}`).join(', ')
  return (
    `SELECT ${aliases.join(', ')} FROM (SELECT ${texts}, ROW_NUMBER() OVER (ORDER BY ${key.join(', ')}) AS ${rowNumber}` +
    ` FROM ${relation}${where}) dimsync_keys WHERE ${rowNumber} > 1 AND MOD(${rowNumber} - 1, ${step}) = 0` +
    ` ORDER BY ${rowNumber}`
  )
}
