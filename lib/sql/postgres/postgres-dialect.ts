import { typeFamily } from '../../core/staged-types.ts'
import type { TableRef } from '../../core/table-ref.ts'
import { DEFAULT_CAPABILITIES, type DialectCapabilities } from '../capabilities.ts'
import { SqlDialectBase } from '../dialect-base.ts'
import type {
  FirstPerGroup,
  LogicalType,
  RowHashPiece,
  SelectReplacing,
  TableFunctionParameter,
} from '../dialect.ts'
import {
  FLOAT_PIECE_FUNCTION,
  FLOAT_TEXT_FUNCTION,
  LAST_NON_NULL_AGGREGATE,
  RAISE_FUNCTION,
  TRY_CAST_FUNCTION,
} from './postgres-session.ts'
import { listElementType, postgresColumnType } from './postgres-types.ts'

const TYPES = Object.freeze({
  string: 'TEXT',
  int64: 'BIGINT',
  bool: 'BOOLEAN',
  // Instants: with the session zone pinned to UTC (see PostgresWarehouse) TIMESTAMPTZ prints in UTC.
  timestamp: 'TIMESTAMPTZ',
} as const) satisfies Record<LogicalType, string>

const TIMESTAMP_FORMAT = "'YYYY-MM-DD HH24:MI:SS.US'"

/**
 * PostgreSQL SQL (https://www.postgresql.org/docs/current/sql-syntax-lexical.html): standard quoting and literals
 * (standard_conforming_strings is on by default), `||` and `md5()` hex from the base. Helper functions PostgreSQL
 * lacks (raising an error, C's `%.17g`) live in the session's own schema (postgres-session.ts).
 */
class PostgresDialect extends SqlDialectBase {
  readonly name = 'postgres'
  override readonly capabilities: DialectCapabilities = Object.freeze({
    ...DEFAULT_CAPABILITIES,
    transactionalDdl: true,
  })

  type(logical: LogicalType): string {
    return TYPES[logical]
  }

  /** The wall time in UTC without an offset, as dbt-postgres types a snapshot's time (`now()::timestamp`). */
  override dbtSnapshotTimeText(expression: string): string {
    return this.castToString(`CAST(${this.castToTimestamp(expression)} AS TIMESTAMP)`)
  }

  /**
   * DuckDB's canonical text per type family (see lib/core/staged-types.ts; the session's DateStyle is ISO and its
   * zone UTC). An infinite timestamp's text is `infinity` as in DuckDB (to_char gives '' for it); a date before
   * year 1 ends in ` (BC)` as in DuckDB.
   */
  canonicalText(expression: string, columnType?: string): string {
    if (columnType === undefined) return this.castToString(expression)
    const element = listElementType(columnType)
    if (element !== undefined) return this.#listText(expression, element)
    const family = typeFamily(columnType)
    switch (family.kind) {
      case 'instant':
        return `CASE WHEN isfinite(${expression}) THEN to_char(${expression} AT TIME ZONE 'UTC', ${TIMESTAMP_FORMAT}) ELSE CAST(${expression} AS TEXT) END`
      case 'datetime':
        return `CASE WHEN isfinite(${expression}) THEN to_char(${expression}, ${TIMESTAMP_FORMAT}) ELSE CAST(${expression} AS TEXT) END`
      case 'date':
        return `replace(CAST(${expression} AS TEXT), ' BC', ' (BC)')`
      case 'time':
        return `to_char(${expression}, 'HH24:MI:SS.US')`
      case 'float':
        return `${FLOAT_TEXT_FUNCTION}(CAST(${expression} AS DOUBLE PRECISION))`
      case 'bytes':
        return `encode(${expression}, 'hex')`
      // string, integer, bool, JSON: the cast is DuckDB's text; a NUMERIC(p,s) prints exactly s decimals.
      default:
        return this.castToString(expression)
    }
  }

  /**
   * DuckDB's text of a list (as BigQuery's dialect renders it): `[a, 'b, c', NULL, 1.50]`, elements joined by `, `,
   * a NULL element as `NULL`, a text element in single quotes (with `'` and `\\` escaped by a backslash) when it is
   * empty, is `null` in any case, starts or ends with ASCII white space, or holds one of `,[]{}()'":=`.
   */
  #listText(expression: string, elementType: string): string {
    const e = 'dimsync_e'
    const family = typeFamily(elementType).kind
    const element =
      family === 'string'
        ? `CASE WHEN ${e} = '' OR lower(${e}) = 'null' OR ${e} ~ ${this.stringLiteral(String.raw`^[ \t\n\r\v\f]|[ \t\n\r\v\f]$|[,\[\]{}()'":=]`)} ` +
          `THEN '''' || regexp_replace(${e}, ${this.stringLiteral(String.raw`(['\\])`)}, ${this.stringLiteral(String.raw`\\\1`)}, 'g') || '''' ELSE ${e} END`
        : family === 'date'
          ? `replace(CAST(${e} AS TEXT), ' BC', ' (BC)')`
          : `CAST(${e} AS TEXT)`
    return (
      `CASE WHEN ${expression} IS NULL THEN NULL ELSE '[' || COALESCE((SELECT string_agg(COALESCE(${element}, 'NULL'), ', ' ORDER BY dimsync_o) ` +
      `FROM unnest(${expression}) WITH ORDINALITY AS dimsync_u(${e}, dimsync_o)), '') || ']' END`
    )
  }

  /**
   * The base's hash text, with a float's `<length>:<text>;` from one call (FLOAT_PIECE_FUNCTION) instead of its text
   * computed twice, once for its length: C's `%.17g` is most of a row hash's cost here.
   */
  override rowHashText(pieces: readonly RowHashPiece[]): string {
    const isFloat = (p: RowHashPiece) => p.type !== undefined && typeFamily(p.type).kind === 'float'
    if (!pieces.some(isFloat)) return super.rowHashText(pieces)
    const parts = pieces.map((p) =>
      isFloat(p)
        ? `CASE WHEN ${p.column} IS NULL THEN '' ELSE ${p.tag} || ${FLOAT_PIECE_FUNCTION}(CAST(${p.column} AS DOUBLE PRECISION)) END`
        : super.rowHashText([p]),
    )
    return parts.length === 1 ? parts[0]! : this.concat(parts, true)
  }

  raiseError(messageExpression: string): string {
    return `${RAISE_FUNCTION}(${messageExpression})`
  }

  /** PostgreSQL's NaN equals itself (and sorts above every number). */
  isNan(expression: string): string {
    return `(${expression} = 'NaN'::double precision)`
  }

  columnType(stagedType: string, where: { readonly table: string; readonly column: string }): string {
    return postgresColumnType(stagedType, where)
  }

  /** No `TRY_CAST`: the value's text cast to the type, NULL where it does not convert (postgres-session.ts). */
  override tryCast(
    expression: string,
    stagedType: string,
    where: { readonly table: string; readonly column: string },
  ): string {
    return `${TRY_CAST_FUNCTION}(CAST(${expression} AS TEXT), CAST(NULL AS ${this.columnType(stagedType, where)}))`
  }

  /** No `CREATE OR REPLACE TEMP TABLE`: the session's table of that name (`pg_temp`, never the user's) is dropped first. */
  override createTempTableAs(name: string, select: string): string {
    const table = this.quoteIdentifier(name)
    return `DROP TABLE IF EXISTS pg_temp.${table};\nCREATE TEMP TABLE ${table} AS\n${select}`
  }

  /** No `QUALIFY`: `DISTINCT ON` keeps the first row of each group in the ORDER BY that follows it. */
  override firstPerGroup({ select, separator, partitionBy, orderBy }: FirstPerGroup): string {
    if (!select.startsWith('SELECT ') || select.startsWith('SELECT DISTINCT'))
      throw new Error(`the postgres dialect cannot keep the first row per group of: ${select.slice(0, 80)}`)
    const order = orderBy === undefined ? partitionBy : `${partitionBy}, ${orderBy}`
    return `SELECT DISTINCT ON (${partitionBy}) ${select.slice('SELECT '.length)}${separator}ORDER BY ${order}`
  }

  /** No `IGNORE NULLS`: a running aggregate that keeps the last non-NULL value (postgres-session.ts). */
  override lastNonNull(expression: string, window: string): string {
    return `${LAST_NON_NULL_AGGREGATE}(${expression}) OVER (${window} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)`
  }

  /** No `* REPLACE`: every column listed, the replaced ones as their expressions. */
  override selectReplacing({ alias, columns, replacements, separator }: SelectReplacing): string {
    const replaced = new Map(replacements)
    const list = columns.map((column) => {
      const expression = replaced.get(column)
      return expression === undefined
        ? `${alias}.${this.quoteIdentifier(column)}`
        : `${expression} AS ${this.quoteIdentifier(column)}`
    })
    for (const [column] of replacements)
      if (!columns.includes(column))
        throw new Error(
          `the postgres dialect cannot replace column ${column}, which is not among the columns listed`,
        )
    return `SELECT ${list.join(separator)}`
  }

  /**
   * A SQL function (https://www.postgresql.org/docs/current/xfunc-sql.html) returning rows of `rowsOf`'s type; its
   * body is planned at each call, so `SELECT *` reads the table's columns of the moment. Parameters are read by
   * position: in a SQL function a column of the same name would win over the parameter's name.
   */
  createTableFunction(
    ref: TableRef,
    parameters: readonly TableFunctionParameter[],
    body: (args: readonly string[]) => string,
    rowsOf?: TableRef,
  ): string {
    if (rowsOf === undefined)
      throw new Error('the postgres dialect needs the table whose rows a table function returns')
    const declared = parameters.map(
      (p) => `${this.quoteIdentifier(p.name)} ${this.type(p.type)}${p.optional ? ' DEFAULT NULL' : ''}`,
    )
    const args = parameters.map((p, i) => `CAST($${i + 1} AS ${this.type(p.type)})`)
    return (
      `CREATE OR REPLACE FUNCTION ${this.table(ref)}(${declared.join(', ')}) RETURNS SETOF ${this.table(rowsOf)}
` + `LANGUAGE sql STABLE AS ${dollarQuoted(body(args))}`
    )
  }
}

/** `text` as a dollar-quoted literal whose tag does not occur in it. */
function dollarQuoted(text: string): string {
  let tag = '$dimsync$'
  for (let i = 1; text.includes(tag); i++) tag = `$dimsync${i}$`
  return `${tag}\n${text}\n${tag}`
}

export const postgresDialect = Object.freeze(new PostgresDialect())
