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

export interface SqlDialect {
  readonly name: 'duckdb' | 'bigquery'
  quoteIdentifier(name: string): string
  table(ref: TableRef): string
  stringLiteral(value: string): string
  /** An instant, given as ISO 8601 with an offset or Z. */
  timestampLiteral(iso: string): string
  type(logical: LogicalType): string
  /** The canonical text of any value, used only inside the row hash. */
  castToString(expression: string): string
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
}

/** One statement of a rendered script, labelled so a failure can say which step failed. */
export interface CompiledStatement {
  readonly label: string
  readonly sql: string
}
