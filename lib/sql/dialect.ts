import type { CompiledStatement, SessionScript } from '../core/compiled-sql.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { DialectCapabilities } from './capabilities.ts'

export type { CompiledScript, CompiledStatement, SessionScript } from '../core/compiled-sql.ts'
export type { TableRef } from '../core/table-ref.ts'

export type LogicalType = 'string' | 'int64' | 'bool' | 'timestamp'

/** One tracked column in the row hash: its tag literal, the column, and the canonical text of its value. */
export interface RowHashPiece {
  /** SQL string literal of `<name length>:<name>=`. */
  readonly tag: string
  readonly column: string
  /** The column's canonical text (`canonicalText`). */
  readonly text: string
  /** The column's staged type (DuckDB type names), when known: a dialect may render a cheaper form of the same text. */
  readonly type?: string
  /**
   * A float column's C `%.17g` text (NULL where the value is), read from a column of the row that holds it
   * (`SqlDialect.stagedFloatTextColumn`), where the hash is of a staged row that carries one.
   */
  readonly floatText?: string
}

/** The tables whose physical layout a dialect may tune (partitioning, clustering). */
export type TableRole = 'dimension' | 'captures' | 'ledger' | 'fact'

/**
 * Everything that differs between the warehouses dimsync renders SQL for: lib/sql is the only place they
 * differ. The merge, DDL, view, ledger and history renderers are shared and call these hooks; a dialect extends
 * `SqlDialectBase` (standard SQL defaults) and overrides quoting, literals, types, hashing, raising errors and
 * creating functions where its warehouse differs (kysely's compiler-with-hooks design). What a warehouse can or
 * cannot do is a named flag in `capabilities`, never a test of `name`. Identifiers from config are validated
 * upstream and always quoted here.
 */
export interface SqlDialect {
  /** The warehouse's name, for messages only: renderers read `capabilities`, never the name. */
  readonly name: string
  readonly capabilities: DialectCapabilities
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
  /**
   * The row hash of tagged values, at least one (see row-hash.ts for the definition): the hex MD5 of the
   * concatenation, in order, of `tag || LENGTH(text) || ':' || text || ';'` for every piece whose `column` is not
   * NULL. Every dialect must give the same hex; a dialect may render it shorter (BigQuery limits a script's length).
   */
  rowHashOf(pieces: readonly RowHashPiece[]): string
  /**
   * The text `rowHashOf` takes the MD5 of, never NULL: the concatenation of the pieces' parts. The texts of
   * consecutive runs of pieces, concatenated, are the text of all of them, so a row hash over more columns than
   * one statement can name is computed in column groups (MergePlan.maxStatementLength).
   */
  rowHashText(pieces: readonly RowHashPiece[]): string
  /**
   * The column of the staging table that holds float column `name`'s C `%.17g` text, where this warehouse's staging
   * load writes one (a dialect whose own `%.17g` is slow); undefined where it writes none.
   */
  stagedFloatTextColumn?(name: string): string | undefined
  /** SQL condition: the float expression is NaN. */
  isNan(expression: string): string
  /** Casts a source column to the instant type used for valid_from / valid_to. */
  castToTimestamp(expression: string): string
  /**
   * The text dbt's snapshot_hash_arguments hashes for the instant expression `expression` on this warehouse: its
   * cast to text of the instant as dbt's adapter types a snapshot's time (dbt-bigquery: TIMESTAMP,
   * `2024-03-01 10:00:00+00`; dbt-duckdb: `now()::timestamp`, `2024-03-01 10:00:00`).
   */
  dbtSnapshotTimeText(expression: string): string
  /** The instant `milliseconds` (negative: earlier) after the instant expression `expression` (NULL stays NULL). */
  addMilliseconds(expression: string, milliseconds: number): string
  /** An expression that aborts the statement (and the transaction) with `message` (a STRING expression). */
  raiseError(messageExpression: string): string
  /** `CREATE TEMP TABLE name AS select` in this dialect. */
  createTempTableAs(name: string, select: string): string
  /**
   * The batch's earliest event time (`query`: one row, one TIMESTAMP column, NULL without events), which reads of
   * the capture log compare its partition column with: `statements` compute it once (run them after `query`'s
   * tables exist) and `value` reads it. BigQuery prunes partitions only on a constant filter such as a script
   * variable, not on a subquery; a warehouse without partitions reads the subquery in place.
   */
  earliestEventTime(query: string): BatchValue
  /**
   * The number of rows `select` returns, counted up to `bound` (a scalar expression that reads nothing of
   * `select`): the count may stop reading once it reaches the bound, so it is exact only below it.
   */
  countUpTo(select: string, bound: string): string
  /** `DROP TABLE IF EXISTS`: staging tables that a failed run may have left behind. */
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
   * Statements that widen a column's type in place (schema evolution: staged type `change.from` → `change.to`,
   * a widening by lib/core/type-widening.ts), each idempotent; none where the warehouse stores both staged types
   * alike.
   */
  alterColumnType(ref: TableRef, column: string, change: ColumnTypeChange, where: ColumnWhere): string[]
  /**
   * `expression` cast to the column type of staged type `stagedType`, NULL where the value does not convert
   * (DuckDB `TRY_CAST`, BigQuery `SAFE_CAST`).
   */
  tryCast(expression: string, stagedType: string, where: ColumnWhere): string
  /**
   * Statements that rewrite a column's values cast to a new type (`dimsync evolve`, after a check that every value
   * converts without loss): the column keeps its name and position where the warehouse allows it.
   */
  rewriteColumnType(
    ref: TableRef,
    column: string,
    change: ColumnTypeChange,
    where: ColumnWhere,
    oldColumnDropped?: boolean,
  ): string[]
  /**
   * The column a rewrite that is not transactional copies the values into before it replaces `column`: a rewrite
   * stopped half-way leaves it behind, and `oldColumnDropped` then asks for only what is left of the rewrite.
   * Undefined where the rewrite is one transactional statement.
   */
  evolveWorkColumn(column: string): string | undefined
  /** `CREATE OR REPLACE VIEW` of `select`, described as `description` where the warehouse keeps descriptions. */
  createView(ref: TableRef, select: string, description: string): string
  /**
   * `CREATE OR REPLACE` a table-valued function (a DuckDB table macro, a BigQuery table function) returning
   * `body(args)`, where `args[i]` is the expression that reads parameter `i` inside the body. `rowsOf`: the table
   * whose rows the body selects, for warehouses that declare a function's row type (PostgreSQL).
   */
  createTableFunction(
    ref: TableRef,
    parameters: readonly TableFunctionParameter[],
    body: (args: readonly string[]) => string,
    rowsOf?: TableRef,
  ): string
  /**
   * `select` (a `SELECT …` with no ORDER BY or LIMIT) keeping only the first row of each group of rows with the
   * same `partitionBy`, the first in `orderBy` (any row when undefined); `separator` goes before the added clause.
   * DuckDB and BigQuery: `QUALIFY ROW_NUMBER() OVER (…) = 1`.
   */
  firstPerGroup(request: FirstPerGroup): string
  /**
   * The newest non-NULL value of `expression` among the rows of `window` (`PARTITION BY … ORDER BY …`) up to the
   * current row, NULL when there is none. DuckDB and BigQuery: `LAST_VALUE(… IGNORE NULLS)`.
   */
  lastNonNull(expression: string, window: string): string
  /**
   * `SELECT` of every column of `alias` (`columns`, in order: its row's columns) with the `replacements` (column →
   * expression) in place of those columns. DuckDB and BigQuery: `SELECT alias.* REPLACE (…)`.
   */
  selectReplacing(request: SelectReplacing): string
  /**
   * The text of a merge as one multi-statement script, for warehouses that run a merge as one job (BigQuery's
   * `applyWork`, `BatchWork.asScript`): `ddl`, then `merge` inside one transaction that rolls back and re-raises on any error,
   * then `after`. Dialects without scripting throw.
   */
  scriptText(script: ScriptParts): string
  /**
   * The merge of `script` as the queries of one session, each at most `maxCharacters` long, for a script over the
   * warehouse's query length (capabilities.maxQueryCharacters). Dialects without sessions throw.
   */
  sessionScript(script: ScriptParts, maxCharacters: number): SessionScript
}

export interface SelectReplacing {
  readonly alias: string
  readonly columns: readonly string[]
  readonly replacements: readonly (readonly [column: string, expression: string])[]
  /** Goes between the replacements (their expressions may be long). */
  readonly separator: string
}

export interface FirstPerGroup {
  readonly select: string
  readonly separator: string
  /** Comma-separated expressions. */
  readonly partitionBy: string
  /** Comma-separated expressions with their direction. */
  readonly orderBy?: string
}

export interface ColumnTypeChange {
  readonly from: string
  readonly to: string
}

/** Where a column is, for messages. */
export interface ColumnWhere {
  readonly table: string
  readonly column: string
}

export interface TableFunctionParameter {
  readonly name: string
  readonly type: LogicalType
  /**
   * May be left out of a call, and is then NULL (DuckDB macros; BigQuery table functions take every argument,
   * so a caller passes NULL there). Optional parameters come last.
   */
  readonly optional?: boolean
}

/** The parts of a merge script, before the dialect renders them as one text. */
export interface ScriptParts {
  /** One line saying what the script does (rendered as a comment). */
  readonly title: string
  readonly ddl: readonly CompiledStatement[]
  readonly merge: readonly CompiledStatement[]
  readonly after: readonly CompiledStatement[]
  /**
   * A batch script: what it does instead when the batch is already in the ledger, checked first (after creating
   * the ledger), so a script retried after its COMMIT answers the recorded counts instead of merging again.
   */
  readonly committed?: CommittedBatch
}

/** See renderCommittedBatch. */
export interface CommittedBatch {
  /** Creates the ledger when missing (idempotent DDL). */
  readonly ledger: CompiledStatement
  /** True when the ledger holds the batch (a SQL expression). */
  readonly isCommitted: string
  /** The statements run then: clean-up, and last the recorded counts (the script's result). */
  readonly after: readonly CompiledStatement[]
}

/** A value computed once per batch: the statements that compute it and the expression that reads it. */
export interface BatchValue {
  readonly statements: readonly string[]
  readonly value: string
}

export interface TableOptionsRequest {
  /** Quoted valid_to column (dimension only). */
  readonly validTo?: string
  /** Quoted captured_at column (capture log only): the log is read from a batch's earliest event time on. */
  readonly capturedAt?: string
  /** Key columns with their staged types, for clustering. */
  readonly key: readonly { readonly name: string; readonly type: string }[]
  /** Human description of the table. */
  readonly description?: string
}
