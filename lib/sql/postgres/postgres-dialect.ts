import { RESERVED_PREFIX } from '../../core/dimension-layout.ts'
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
import { listElementType, postgresColumnType } from './postgres-types.ts'

/**
 * What every PostgreSQL session runs before dimsync's SQL: the settings its canonical texts assume (times in UTC,
 * ISO dates) and the functions PostgreSQL lacks that the dialect's SQL calls, created in the session's own schema
 * (`pg_temp`, dropped with the session): nothing is left in the user's schemas, and the views and the as-of
 * function (which outlive the session) never call them.
 */

/** `pg_temp.dimsync_raise(message)`: aborts the statement and its transaction with `message`, intact. */
export const RAISE_FUNCTION = 'pg_temp.dimsync_raise'

/** `pg_temp.dimsync_float_text(x)`: C's printf("%.17g") of a double, the row hash's canonical text of a float. */
export const FLOAT_TEXT_FUNCTION = 'pg_temp.dimsync_float_text'

/**
 * `pg_temp.dimsync_float_piece(x)`: the row hash's piece of a float after its tag, `<length>:<%.17g text>;`, with
 * the text computed once (an expression using it twice would compute it twice, most of a row hash's cost).
 */
export const FLOAT_PIECE_FUNCTION = 'pg_temp.dimsync_float_piece'

/**
 * Prefix of the staging table's columns holding a float column's `%.17g` text (stagedFloatTextColumn), in the prefix
 * no source column may use.
 */
const STAGED_FLOAT_TEXT_PREFIX = `${RESERVED_PREFIX}float_text_`
/** PostgreSQL truncates a longer identifier (NAMEDATALEN - 1). */
const MAX_IDENTIFIER_BYTES = 63

/**
 * C's `%.17g` from the double's exact value: its bits give `m * 2^e` exactly (numeric is exact), the decimal digits
 * of that value are rounded to 17 significant digits half to even (what printf does on an exact binary value), and
 * written in `%g`'s form (exponent form when the exponent is below -4 or at least 17, trailing zeros removed). A
 * whole number below 10^17 is its digits. PostgreSQL's own float output is the shortest round-trip text, or at
 * most 15 digits: neither is `%.17g`. `finish` turns the text into what the function returns.
 */
function floatFunctionSql(name: string, finish: (text: string) => string): string {
  return `CREATE OR REPLACE FUNCTION ${name}(x double precision) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $dimsync$
DECLARE
  bits bigint;
  sign text;
  biased integer;
  mantissa numeric;
  power2 integer;
  digits text;
  exponent integer;
  head numeric;
  tail text;
  result text;
BEGIN
  IF x = 'NaN'::double precision THEN result := 'nan';
  ELSIF x = 'Infinity'::double precision THEN result := 'inf';
  ELSIF x = '-Infinity'::double precision THEN result := '-inf';
  ELSIF x = 0 THEN result := '0';
  ELSIF x = trunc(x) AND abs(x) < 1e17 THEN result := x::bigint::text;
  ELSE
    bits := ('x' || encode(float8send(x), 'hex'))::bit(64)::bigint;
    sign := CASE WHEN bits < 0 THEN '-' ELSE '' END;
    biased := ((bits >> 52) & 2047)::integer;
    mantissa := (bits & 4503599627370495)::numeric;
    IF biased = 0 THEN power2 := -1074; ELSE mantissa := mantissa + 4503599627370496; power2 := biased - 1075; END IF;
    -- value = digits * 10^(exponent - length + 1): m * 2^e, or m * 5^-e * 10^e for e < 0
    IF power2 >= 0 THEN
      digits := trunc(mantissa * (2::numeric ^ power2))::text;
      exponent := length(digits) - 1;
    ELSE
      digits := trunc(mantissa * (5::numeric ^ (-power2)))::text;
      exponent := length(digits) - 1 + power2;
    END IF;
    IF length(digits) > 17 THEN
      head := substr(digits, 1, 17)::numeric;
      tail := substr(digits, 18);
      IF left(tail, 1) > '5' OR (left(tail, 1) = '5' AND (ltrim(substr(tail, 2), '0') <> '' OR mod(head, 2) = 1)) THEN
        head := head + 1;
      END IF;
      digits := head::text;
      IF length(digits) > 17 THEN digits := left(digits, 17); exponent := exponent + 1; END IF;
    ELSE
      digits := rpad(digits, 17, '0');
    END IF;
    IF exponent < -4 OR exponent >= 17 THEN
      result := sign || rtrim(rtrim(left(digits, 1) || '.' || substr(digits, 2), '0'), '.') || 'e' ||
        CASE WHEN exponent < 0 THEN '-' ELSE '+' END || CASE WHEN abs(exponent) < 10 THEN '0' ELSE '' END || abs(exponent)::text;
    ELSIF exponent >= 0 THEN
      result := sign || rtrim(rtrim(left(digits, exponent + 1) || '.' || substr(digits, exponent + 2), '0'), '.');
    ELSE
      result := sign || rtrim('0.' || repeat('0', -exponent - 1) || digits, '0');
    END IF;
  END IF;
  RETURN ${finish('result')};
END
$dimsync$`
}

const FLOAT_TEXT_SQL = floatFunctionSql(FLOAT_TEXT_FUNCTION, (text) => text)
const FLOAT_PIECE_SQL = floatFunctionSql(
  FLOAT_PIECE_FUNCTION,
  (text) => `length(${text}) || ':' || ${text} || ';'`,
)

const RAISE_SQL = `CREATE OR REPLACE FUNCTION ${RAISE_FUNCTION}(message text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $dimsync$
BEGIN
  RAISE EXCEPTION USING MESSAGE = message, ERRCODE = 'P0001';
END
$dimsync$`

/**
 * `pg_temp.dimsync_try_cast(text, NULL::type)`: the text cast to the type of the second argument, NULL where it
 * does not convert (DuckDB's TRY_CAST; pg_input_is_valid is PostgreSQL 16+). One dynamic statement a value: for
 * `dimsync evolve`'s check, not for merges.
 */
export const TRY_CAST_FUNCTION = 'pg_temp.dimsync_try_cast'

const TRY_CAST_SQL = `CREATE OR REPLACE FUNCTION ${TRY_CAST_FUNCTION}(value text, target anyelement) RETURNS anyelement
LANGUAGE plpgsql STABLE AS $dimsync$
DECLARE
  result target%TYPE;
BEGIN
  EXECUTE format('SELECT CAST(%L AS %s)', value, pg_typeof(target)) INTO result;
  RETURN result;
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$dimsync$`

/**
 * `pg_temp.dimsync_last_non_null(x)`: an aggregate whose value is the last non-NULL `x` it was given; as a window
 * function over the rows up to the current one, what `LAST_VALUE(x IGNORE NULLS)` is elsewhere (PostgreSQL has no
 * IGNORE NULLS). Any type, arrays included.
 */
export const LAST_NON_NULL_AGGREGATE = 'pg_temp.dimsync_last_non_null'

const LAST_NON_NULL_SQL = [
  `CREATE OR REPLACE FUNCTION pg_temp.dimsync_keep_non_null(state anyelement, value anyelement) RETURNS anyelement
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $dimsync$ SELECT COALESCE(value, state) $dimsync$`,
  `CREATE OR REPLACE AGGREGATE ${LAST_NON_NULL_AGGREGATE}(anyelement) (SFUNC = pg_temp.dimsync_keep_non_null, STYPE = anyelement)`,
]

/** Statements to run first on every connection (idempotent). */
export const POSTGRES_SESSION_SETUP: readonly string[] = Object.freeze([
  // Literals are rendered with `''` as the only escape (stringLiteral): a backslash must stay a backslash.
  'SET standard_conforming_strings = on',
  "SET TimeZone = 'UTC'",
  "SET DateStyle = 'ISO, YMD'",
  'SET IntervalStyle = postgres',
  FLOAT_TEXT_SQL,
  FLOAT_PIECE_SQL,
  RAISE_SQL,
  TRY_CAST_SQL,
  ...LAST_NON_NULL_SQL,
])

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
 * lacks (raising an error, C's `%.17g`) live in the session's own schema (the session functions above).
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
   * The staging load (PostgresWarehouse.loadStaging) writes each float's `%.17g` text, which the embedded DuckDB
   * prints, beside it: FLOAT_PIECE_FUNCTION took 3.3 s of a 1M-row merge's 5.3 s diff, in PL/pgSQL. None for a
   * name too long for PostgreSQL's 63-byte identifiers with the prefix: its hash computes the text.
   */
  stagedFloatTextColumn(name: string): string | undefined {
    const column = `${STAGED_FLOAT_TEXT_PREFIX}${name}`
    return new TextEncoder().encode(column).length <= MAX_IDENTIFIER_BYTES ? column : undefined
  }

  /**
   * The base's hash text, with a float's `<length>:<text>;` from one call (FLOAT_PIECE_FUNCTION) instead of its text
   * computed twice, once for its length: C's `%.17g` is most of a row hash's cost here. A staged row's float reads
   * its text from the staging table where the load wrote it (RowHashPiece.floatText).
   */
  override rowHashText(pieces: readonly RowHashPiece[]): string {
    const isFloat = (p: RowHashPiece) => p.type !== undefined && typeFamily(p.type).kind === 'float'
    if (!pieces.some(isFloat)) return super.rowHashText(pieces)
    const parts = pieces.map((p) =>
      p.floatText !== undefined
        ? `CASE WHEN ${p.column} IS NULL THEN '' ELSE ${p.tag} || CAST(LENGTH(${p.floatText}) AS TEXT) || ':' || ${p.floatText} || ';' END`
        : isFloat(p)
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

  /** No `TRY_CAST`: the value's text cast to the type, NULL where it does not convert (the session functions above). */
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

  /** No `IGNORE NULLS`: a running aggregate that keeps the last non-NULL value (the session functions above). */
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
