import type { CompiledStatement, SqlDialect, TableRef } from './dialect.ts'
import { HIGHEST_KEY_COLUMN } from './render-ddl.ts'
import { renderRowHash, type HashedColumn } from './row-hash.ts'

/**
 * Surrogate keys (invariant 5, docs/invariants.md: unique, never reused, never changed). Every writer of new keys follows one rule:
 *
 * 1. `seed`: a dimension whose record (objects.keys, render-ddl.ts) holds no row yet (a new dimension, or one an
 *    older dimsync wrote) gets one: the highest key in the tables that hold given-out keys, read once.
 * 2. `number`: new rows are numbered after the recorded highest key, which is read from the one-row record (not
 *    from the dimension's key column: on BigQuery a MAX there reads every version).
 * 3. `advance`: in the same transaction, the record moves past every key the statement may have given out.
 *
 * Numbering a large batch with one `ROW_NUMBER() OVER (ORDER BY key)` makes one worker sort every row (BigQuery
 * runs an unpartitioned window on one worker: `resourcesExceeded` at around 100M rows). A batch of more rows than
 * a bucket holds is numbered per bucket instead: bucket b of B (from the MD5 of the key, the same in every
 * warehouse) numbers its rows 1, 2, … in key order, and row n of bucket b gets `highest + (n - 1) * B + b + 1`.
 * Keys stay unique (b and n decide the key) and above every key given out before; a bucket fuller than the
 * others leaves gaps, which are never filled. With one bucket this is the ordered numbering `highest + n`.
 */
export interface SurrogateKeyRecord {
  readonly dialect: SqlDialect
  /** The one-row record of the dimension (objects.keys). */
  readonly record: TableRef
  /** The surrogate-key column. */
  readonly surrogateKey: string
  /** Tables holding keys given out before the record existed: the dimension, its retired versions, … */
  readonly givenOutIn: readonly TableRef[]
}

/** How a batch's new keys are numbered: in one ordered sequence (1) or per bucket of the key's hash. */
export interface KeyNumbering {
  readonly buckets: number
}

/**
 * Buckets for numbering about `rows` rows, at most `rowsPerBucket` a bucket on average; one when the dialect
 * numbers in one sequence (`rowsPerBucket` undefined: DuckDB sorts in parallel on one machine).
 */
export function keyBucketsFor(rows: number, rowsPerBucket: number | undefined): number {
  if (rowsPerBucket === undefined || !(rows > rowsPerBucket)) return 1
  return Math.ceil(rows / rowsPerBucket)
}

/**
 * Gives the record its row when it has none: the highest key in `givenOutIn` (0 when empty). To run before a
 * writer's first `number`; `onlyIf` keeps BigQuery from reading the key columns when the row is there, and the
 * statement itself inserts nothing then (the test harnesses run it regardless, to check that).
 */
export function seedRecordedHighestKey(r: SurrogateKeyRecord, label: string): CompiledStatement {
  const d = r.dialect
  const sk = d.quoteIdentifier(r.surrogateKey)
  const absent = `NOT EXISTS (SELECT 1 FROM ${d.table(r.record)})`
  // The condition inside the MAX too: a statement run regardless of its guard then reads no key column when the
  // row is there (10 ms of a 10M-version dimension with the merge's updates pending, against 1 ms).
  const highest = r.givenOutIn.map(
    (t) => `(SELECT COALESCE(MAX(${sk}), 0) FROM ${d.table(t)} WHERE ${absent})`,
  )
  const value = highest.length === 1 ? highest[0]! : `GREATEST(${highest.join(', ')})`
  return {
    label,
    sql:
      `INSERT INTO ${d.table(r.record)} (${HIGHEST_KEY_COLUMN})\n` +
      `SELECT ${value}\nFROM (SELECT 1 AS one) x\nWHERE ${absent}`,
    onlyIf: absent,
  }
}

/** The highest key given out so far, as a scalar SQL expression (the record has its row: see `seed…`). */
export function recordedHighestKey(r: SurrogateKeyRecord): string {
  return `(SELECT ${HIGHEST_KEY_COLUMN} FROM ${r.dialect.table(r.record)})`
}

/**
 * The new surrogate key of each row of a SELECT (a window expression): numbered after the recorded highest key
 * in the order of `order` (expressions; the first ones are the key columns), per bucket of the key columns
 * `key` (qualified by `alias`) when `numbering` has more than one.
 */
export function newSurrogateKey(
  r: SurrogateKeyRecord,
  numbering: KeyNumbering,
  key: readonly HashedColumn[],
  alias: string,
  order: readonly string[],
): string {
  const base = recordedHighestKey(r)
  const by = order.join(', ')
  if (numbering.buckets <= 1) return `${base} + ROW_NUMBER() OVER (ORDER BY ${by})`
  const bucket = keyBucket(r.dialect, numbering, key, alias)
  return `${base} + (ROW_NUMBER() OVER (PARTITION BY ${bucket} ORDER BY ${by}) - 1) * ${numbering.buckets} + ${bucket} + 1`
}

/**
 * Moves the record past every key `newSurrogateKey` gave the rows of `rows` (`<table or subquery> <alias>
 * [WHERE …]`, the same rows the numbered SELECT read): their count, or with buckets, the buckets times the
 * fullest bucket's count.
 */
export function advanceRecordedHighestKey(
  r: SurrogateKeyRecord,
  numbering: KeyNumbering,
  key: readonly HashedColumn[],
  alias: string,
  rows: string,
  label: string,
): CompiledStatement {
  const span =
    numbering.buckets <= 1
      ? `(SELECT COUNT(*) FROM ${rows})`
      : `(SELECT ${numbering.buckets} * COALESCE(MAX(n), 0) FROM (\n  SELECT ${keyBucket(r.dialect, numbering, key, alias)} AS b, COUNT(*) AS n FROM ${rows} GROUP BY b\n) buckets)`
  return {
    label,
    sql: `UPDATE ${r.dialect.table(r.record)} SET ${HIGHEST_KEY_COLUMN} = ${HIGHEST_KEY_COLUMN} + ${span} WHERE TRUE`,
  }
}

/**
 * The bucket of a row, 0 … buckets - 1: the first 32 bits of the MD5 of its key columns (the row hash of the key:
 * the same hex in every warehouse, so both number the same rows alike) modulo the buckets. Both warehouses cast a
 * `0x` hex string to an integer (BigQuery: "Casting hex strings to integers",
 * https://cloud.google.com/bigquery/docs/reference/standard-sql/conversion_functions#cast_as_int64).
 */
function keyBucket(
  d: SqlDialect,
  numbering: KeyNumbering,
  key: readonly HashedColumn[],
  alias: string,
): string {
  const hex = renderRowHash(d, key, alias)
  return `MOD(CAST('0x' || SUBSTR(${hex}, 1, 8) AS ${d.type('int64')}), ${numbering.buckets})`
}

/** `keyBucketsFor` at the dialect's bucket size (capabilities.rowsPerKeyBucket) unless `rowsPerBucket` is given. */
export function dialectKeyBuckets(d: SqlDialect, rows: number, rowsPerBucket?: number): number {
  return keyBucketsFor(rows, rowsPerBucket ?? d.capabilities.rowsPerKeyBucket)
}
