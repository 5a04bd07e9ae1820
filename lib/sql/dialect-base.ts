import type { TableRef } from '../core/table-ref.ts'
import { DEFAULT_CAPABILITIES, type DialectCapabilities } from './capabilities.ts'
import type {
  BatchValue,
  ColumnTypeChange,
  ColumnWhere,
  FirstPerGroup,
  SelectReplacing,
  LogicalType,
  RowHashPiece,
  ScriptParts,
  SessionScript,
  SqlDialect,
  TableFunctionParameter,
  TableOptionsRequest,
  TableRole,
} from './dialect.ts'

/**
 * Standard SQL, as the defaults every dialect starts from: a dialect overrides only what its warehouse does
 * differently, and a hook added later gets a default here instead of breaking existing dialects (kysely's
 * DialectAdapterBase). What has no standard form (types, canonical text, raising an error, table functions) is
 * abstract. Call hooks on the dialect (`d.table(ref)`); they are methods and read `this`.
 */
export abstract class SqlDialectBase implements SqlDialect {
  abstract readonly name: string
  readonly capabilities: DialectCapabilities = DEFAULT_CAPABILITIES

  abstract type(logical: LogicalType): string
  abstract canonicalText(expression: string, columnType?: string): string
  abstract raiseError(messageExpression: string): string
  abstract isNan(expression: string): string
  abstract columnType(stagedType: string, where: { readonly table: string; readonly column: string }): string
  abstract createTableFunction(
    ref: TableRef,
    parameters: readonly TableFunctionParameter[],
    body: (args: readonly string[]) => string,
    rowsOf?: TableRef,
  ): string

  /** `QUALIFY` (DuckDB, BigQuery, Snowflake): PostgreSQL and MySQL have none. */
  firstPerGroup({ select, separator, partitionBy, orderBy }: FirstPerGroup): string {
    const order = orderBy === undefined ? '' : ` ORDER BY ${orderBy}`
    return `${select}${separator}QUALIFY ROW_NUMBER() OVER (PARTITION BY ${partitionBy}${order}) = 1`
  }

  /** `LAST_VALUE(… IGNORE NULLS)` (DuckDB, BigQuery, Snowflake): PostgreSQL has no IGNORE NULLS. */
  lastNonNull(expression: string, window: string): string {
    return `LAST_VALUE(${expression} IGNORE NULLS) OVER (${window} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)`
  }

  /** `SELECT alias.* REPLACE (…)` (DuckDB, BigQuery): PostgreSQL lists the columns. */
  selectReplacing({ alias, replacements, separator }: SelectReplacing): string {
    const replaced = replacements.map(
      ([column, expression]) => `${expression} AS ${this.quoteIdentifier(column)}`,
    )
    return `SELECT ${alias}.* REPLACE (${replaced.join(separator)})`
  }

  /** Double quotes, `"` doubled (SQL:2016 delimited identifiers). */
  quoteIdentifier(name: string): string {
    return `"${name.replaceAll('"', '""')}"`
  }

  table(ref: TableRef): string {
    const name = this.quoteIdentifier(ref.name)
    return ref.schema === undefined ? name : `${this.quoteIdentifier(ref.schema)}.${name}`
  }

  /** Single quotes, `'` doubled; no backslash escapes. */
  stringLiteral(value: string): string {
    return `'${value.replaceAll("'", "''")}'`
  }

  timestampLiteral(iso: string): string {
    return `${this.type('timestamp')} ${this.stringLiteral(iso)}`
  }

  /** The subquery in place: read once per statement (no partitions to prune). */
  earliestEventTime(query: string): BatchValue {
    return { statements: [], value: `(${query})` }
  }

  /** `LIMIT` with a scalar subquery (DuckDB, PostgreSQL): the scan stops at the bound. */
  countUpTo(select: string, bound: string): string {
    return `(SELECT COUNT(*) FROM (${select} LIMIT ${bound}) AS counted)`
  }

  castToString(expression: string): string {
    return `CAST(${expression} AS ${this.type('string')})`
  }

  concat(parts: readonly string[], multiline = false): string {
    return parts.join(multiline ? '\n    || ' : ' || ')
  }

  rowHashOf(pieces: readonly RowHashPiece[]): string {
    return this.md5Hex(this.rowHashText(pieces))
  }

  rowHashText(pieces: readonly RowHashPiece[]): string {
    const parts = pieces.map(({ tag, column, text }) => {
      const piece = this.concat([tag, this.castToString(`LENGTH(${text})`), "':'", text, "';'"])
      return `CASE WHEN ${column} IS NULL THEN '' ELSE ${piece} END`
    })
    return parts.length === 1 ? parts[0]! : this.concat(parts, true)
  }

  /** `md5()` returning lowercase hex text (DuckDB, PostgreSQL, Snowflake, MySQL). */
  md5Hex(expression: string): string {
    return `md5(${expression})`
  }

  castToTimestamp(expression: string): string {
    return `CAST(${expression} AS ${this.type('timestamp')})`
  }

  /** The instant type's own cast to text (BigQuery's TIMESTAMP, dbt-bigquery's current_timestamp()). */
  dbtSnapshotTimeText(expression: string): string {
    return this.castToString(this.castToTimestamp(expression))
  }

  /** Standard interval arithmetic (DuckDB, PostgreSQL). */
  addMilliseconds(expression: string, milliseconds: number): string {
    const sign = milliseconds < 0 ? '-' : '+'
    return `(${expression} ${sign} INTERVAL '${Math.abs(milliseconds)} milliseconds')`
  }

  createTempTableAs(name: string, select: string): string {
    return `CREATE OR REPLACE TEMP TABLE ${this.quoteIdentifier(name)} AS\n${select}`
  }

  dropTableIfExists(ref: TableRef): string {
    return `DROP TABLE IF EXISTS ${this.table(ref)}`
  }

  primaryKey(quotedColumns: readonly string[]): string {
    return `PRIMARY KEY (${quotedColumns.join(', ')})`
  }

  columnDescription(_text: string): string {
    return ''
  }

  tableOptions(_role: TableRole, _options: TableOptionsRequest): string {
    return ''
  }

  /** `TRY_CAST` (DuckDB; SQL Server). */
  tryCast(expression: string, stagedType: string, where: ColumnWhere): string {
    return `TRY_CAST(${expression} AS ${this.columnType(stagedType, where)})`
  }

  /** DuckDB's rewrite is one statement inside the transaction: nothing is left half-way. */
  evolveWorkColumn(_column: string): string | undefined {
    return undefined
  }

  /** `ALTER TABLE … ALTER COLUMN … TYPE … USING CAST(…)` (DuckDB, PostgreSQL). */
  rewriteColumnType(ref: TableRef, column: string, change: ColumnTypeChange, where: ColumnWhere): string[] {
    const name = this.quoteIdentifier(column)
    const type = this.columnType(change.to, where)
    return [`ALTER TABLE ${this.table(ref)} ALTER COLUMN ${name} TYPE ${type} USING CAST(${name} AS ${type})`]
  }

  /** `ALTER TABLE … ALTER COLUMN … TYPE` (DuckDB, PostgreSQL). */
  alterColumnType(ref: TableRef, column: string, change: ColumnTypeChange, where: ColumnWhere): string[] {
    const type = this.columnType(change.to, where)
    return [`ALTER TABLE ${this.table(ref)} ALTER COLUMN ${this.quoteIdentifier(column)} TYPE ${type}`]
  }

  createView(ref: TableRef, select: string, _description: string): string {
    return `CREATE OR REPLACE VIEW ${this.table(ref)} AS\n${select}`
  }

  scriptText(_script: ScriptParts): string {
    throw new Error(`the ${this.name} dialect does not render merges as one script`)
  }

  sessionScript(_script: ScriptParts, _maxCharacters: number): SessionScript {
    throw new Error(`the ${this.name} dialect does not run merges as the queries of a session`)
  }
}
