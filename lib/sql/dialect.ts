/**
 * What differs between the warehouses dimsync renders SQL for. The merge, DDL and view renderers are shared and
 * call these hooks; a dialect overrides only quoting, literals, types, hashing and raising errors (kysely's
 * compiler-with-hooks design). Identifiers from config are validated upstream and always quoted here.
 */
export interface TableRef {
  /** Dataset / schema; omitted for temporary tables. */
  readonly schema?: string
  readonly name: string
}

export type LogicalType = 'string' | 'int64' | 'bool' | 'timestamp'

/** The tables whose physical layout a dialect may tune (partitioning, clustering). */
export type TableRole = 'dimension' | 'captures' | 'ledger'

export interface SqlDialect {
  readonly name: 'duckdb' | 'bigquery'
  quoteIdentifier(name: string): string
  table(ref: TableRef): string
  stringLiteral(value: string): string
  /** An instant, given as ISO 8601 with an offset or Z. */
  timestampLiteral(iso: string): string
  type(logical: LogicalType): string
  /** Text of any value for messages and key lookups (not used by the row hash, see `canonicalText`). */
  castToString(expression: string): string
  /**
   * The canonical text of a value of the staged column type `columnType` (DuckDB type names, see
   * DimensionColumn), used inside the row hash. Every dialect must render the same text for the same value, so
   * that the same row hashes to the same hex in every warehouse (see row-hash.ts for the rules per type).
   * `columnType` undefined: the value is rendered by `castToString` (callers that do not know types).
   */
  canonicalText(expression: string, columnType?: string): string
  /** Concatenation of STRING expressions (NULL if any is NULL); `multiline` puts each part on its own line. */
  concat(parts: readonly string[], multiline?: boolean): string
  /** Hex MD5 of a STRING expression, same bytes → same text in every dialect. */
  md5Hex(expression: string): string
  /** Casts a source column to the instant type used for valid_from / valid_to. */
  castToTimestamp(expression: string): string
  /** An expression that aborts the statement (and the transaction) with `message` (a STRING expression). */
  raiseError(messageExpression: string): string
  /** `CREATE TEMP TABLE name AS select` in this dialect. */
  createTempTableAs(name: string, select: string): string
  /** `CREATE OR REPLACE TEMP TABLE` is used for staging tables that may survive a failed script. */
  dropTableIfExists(ref: TableRef): string
  /**
   * The column type written in DDL for a staged column type (DuckDB type names). Throws naming the table and
   * column when the warehouse cannot store the type.
   */
  columnType(stagedType: string, where: { readonly table: string; readonly column: string }): string
  /** The primary key clause of a CREATE TABLE (BigQuery only accepts unenforced keys). */
  primaryKey(quotedColumns: readonly string[]): string
  /** Text appended after a column definition to describe it ('' when the warehouse keeps no descriptions). */
  columnDescription(text: string): string
  /** Text appended after a CREATE TABLE's column list (partitioning, clustering, options); '' when none. */
  tableOptions(role: TableRole, options: TableOptionsRequest): string
  /**
   * True when the dimension is partitioned on valid_to, so that filters on current versions also filter on
   * valid_to (`valid_to IS NULL` or `= open end`) and read only the partition of open versions.
   */
  readonly filterCurrentOnValidTo: boolean
}

export interface TableOptionsRequest {
  /** Quoted valid_to column (dimension only). */
  readonly validTo?: string
  /** Key columns with their staged types, for clustering. */
  readonly key: readonly { readonly name: string; readonly type: string }[]
  /** Human description of the table. */
  readonly description?: string
}

/** One statement of a rendered script, labelled so a failure can say which step failed. */
export interface CompiledStatement {
  readonly label: string
  readonly sql: string
}
