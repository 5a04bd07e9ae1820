/**
 * How each PostgreSQL and MySQL/MariaDB column type is read and staged, pure: no I/O.
 *
 * Rows travel as CSV text (PostgreSQL `COPY ... TO STDOUT (FORMAT csv)`; MySQL rows encoded by
 * `row-csv-encoder.ts`) and DuckDB turns the text into typed Parquet. Every value therefore goes through its
 * exact text form, never through a JavaScript number or a millisecond `Date`: int64 above 2^53, DECIMAL digits
 * and microseconds survive unchanged.
 */
import { MAX_DECIMAL_PRECISION } from '../../core/staged-types.ts'
import { quoteIdent } from './db-sql.ts'

/** One column of a database extract: how the server selects it and how DuckDB stages it. */
export interface DbColumn {
  readonly name: string
  /** DuckDB logical type of the staged column (`BIGINT`, `DECIMAL(12,2)`, `TIMESTAMPTZ`, `VARCHAR[]`). */
  readonly type: string
  /** Server-side select expression for the CSV stream (the quoted column, converted where text is not exact). */
  readonly select: string
  /** Type DuckDB's CSV reader parses the field as. */
  readonly csvType: string
  /** DuckDB expression turning the CSV field `ref` into `type`; undefined: the reader's value as is. */
  readonly convert?: (ref: string) => string
  /** The server's name of the type, for messages and casts (`timestamp with time zone`, `DATETIME(6)`). */
  readonly serverType: string
}

/**
 * The DuckDB function (registered by the CSV converter) giving a JSON document's canonical text
 * (lib/core/canonical-json.ts): JSON is staged as BigQuery stores it, keys sorted and no insignificant white
 * space, so reordered keys are no change and both warehouses hash the same text.
 */
export const CANONICAL_JSON_FUNCTION = 'dimsync_canonical_json'
const toJson = (ref: string) => `CAST(${CANONICAL_JSON_FUNCTION}(${ref}) AS JSON)`

// ---- PostgreSQL ------------------------------------------------------------------------------------------

/** A PostgreSQL type resolved through domains: its base type name, modifier and element (arrays). */
export interface PgTypeInfo {
  /** `typname` of the base type (`int8`, `numeric`, `timestamptz`, `_int4` for arrays). */
  readonly name: string
  /** Type modifier (precision/scale of numeric, length of varchar); -1 when none. */
  readonly typmod: number
  /** `typtype = 'e'`. */
  readonly isEnum: boolean
  /** Element type of an array type. */
  readonly element?: PgTypeInfo
  /** `format_type(oid, typmod)`: how the server spells the type in a CAST. */
  readonly formatted: string
}

interface Staging {
  readonly type: string
  readonly csvType: string
  readonly convert?: (ref: string) => string
  /** Server-side conversion of the quoted column (default: the column as is). */
  readonly select?: (quoted: string) => string
}

const same = (type: string): Staging => ({ type, csvType: type })
const viaText = (type: string, convert: (ref: string) => string): Staging => ({
  type,
  csvType: 'VARCHAR',
  convert,
})
/**
 * PostgreSQL writes years before 1 AD with a trailing ` BC` (`0044-03-15 12:00:00+00 BC`); DuckDB reads ` (BC)`
 * after the date part only, and would read the trailing form as AD. Only BC values pay for the rewrite.
 */
const pgTemporal = (type: string): Staging =>
  viaText(
    type,
    (ref) =>
      `CASE WHEN ends_with(${ref}, ' BC') THEN CAST(regexp_replace(${ref}, '^(\\d+-\\d\\d-\\d\\d)(.*) BC$', '\\1 (BC)\\2') AS ${type}) ` +
      `ELSE CAST(${ref} AS ${type}) END`,
  )
/** bytea text output in `bytea_output = hex` is `\x` followed by hex digits. */
const pgBytes = (ref: string) => `from_hex(substr(${ref}, 3))`

const PG_SCALARS: Readonly<Record<string, Staging>> = {
  bool: same('BOOLEAN'),
  int2: same('SMALLINT'),
  int4: same('INTEGER'),
  int8: same('BIGINT'),
  oid: same('UINTEGER'),
  float4: same('FLOAT'),
  float8: same('DOUBLE'),
  text: same('VARCHAR'),
  varchar: same('VARCHAR'),
  bpchar: same('VARCHAR'),
  name: same('VARCHAR'),
  citext: same('VARCHAR'),
  char: same('VARCHAR'),
  uuid: same('UUID'),
  date: pgTemporal('DATE'),
  time: same('TIME'),
  // Parquet keeps a time with zone as a UTC time (12:00+02 would come back as 10:00+00): the server's text keeps
  // the offset.
  timetz: same('VARCHAR'),
  timestamp: pgTemporal('TIMESTAMP'),
  timestamptz: pgTemporal('TIMESTAMPTZ'),
  // Parquet's INTERVAL holds milliseconds in 32 bits (2000 hours wraps, microseconds are lost): the ISO 8601 text
  // (IntervalStyle iso_8601, `P1Y2M3DT4H5M6.0005S`) keeps months, days and microseconds exactly.
  interval: same('VARCHAR'),
  bytea: viaText('BLOB', pgBytes),
  json: viaText('JSON', toJson),
  jsonb: viaText('JSON', toJson),
  // money's text depends on lc_monetary ("$1,234.50"); its numeric value does not.
  money: { type: 'VARCHAR', csvType: 'VARCHAR', select: (q) => `${q}::numeric` },
}

function pgNumeric(typmod: number): Staging {
  if (typmod < 0) return same('VARCHAR') // unconstrained numeric: any number of digits, kept as exact text
  const precision = ((typmod - 4) >> 16) & 0xffff
  const scale = (typmod - 4) & 0xffff
  // PostgreSQL 15 allows a negative scale or one above the precision; DuckDB does not.
  if (precision > MAX_DECIMAL_PRECISION || scale > precision) return same('VARCHAR')
  return same(`DECIMAL(${precision},${scale})`)
}

function pgScalar(info: PgTypeInfo): Staging {
  if (info.isEnum) return same('VARCHAR')
  if (info.name === 'numeric') return pgNumeric(info.typmod)
  // Everything else (inet, xml, ranges, geometric types, bit strings, tsvector) keeps its exact text form.
  return PG_SCALARS[info.name] ?? same('VARCHAR')
}

/**
 * The elements' texts of a one-dimensional array sent as JSON. A column type does not fix the number of
 * dimensions in PostgreSQL; the JSON of a deeper array starts with `[[`, and would otherwise pass as a list of
 * JSON texts. It fails the conversion instead, with a cast error that DuckDB's `try()` can catch (`error()` is
 * volatile, which `try()` refuses), so the converter finds the row and names it.
 */
const oneDimension = (ref: string) =>
  `CASE WHEN starts_with(${ref}, '[[') THEN list_value(CAST(CAST(substr(${ref}, 1, 2) AS INTEGER) AS VARCHAR)) ` +
  `ELSE CAST(CAST(${ref} AS JSON) AS VARCHAR[]) END`

/**
 * How a PostgreSQL column is staged. Arrays (one dimension) become DuckDB lists of the element's staged type:
 * the server sends them as a JSON array of the elements' text forms (`array_to_json(col::text[])`), which keeps
 * every element exact (no JSON number in between) and NULL elements NULL.
 */
export function pgColumn(name: string, info: PgTypeInfo): DbColumn {
  const quoted = quoteIdent('postgres', name)
  if (info.element !== undefined) {
    const element = pgScalar(info.element)
    const toElement = element.convert ?? ((ref: string) => `CAST(${ref} AS ${element.type})`)
    return {
      name,
      type: `${element.type}[]`,
      select: `array_to_json(${quoted}::text[])`,
      csvType: 'VARCHAR',
      convert: (ref) => `list_transform(${oneDimension(ref)}, dimsync_e -> ${toElement('dimsync_e')})`,
      serverType: info.formatted,
    }
  }
  const staging = pgScalar(info)
  return {
    name,
    type: staging.type,
    select: staging.select?.(quoted) ?? quoted,
    csvType: staging.csvType,
    ...(staging.convert ? { convert: staging.convert } : {}),
    serverType: info.formatted,
  }
}

// ---- MySQL / MariaDB -------------------------------------------------------------------------------------

/** The parts of a mysql2 column definition the mapping reads. */
export interface MysqlFieldInfo {
  readonly name: string
  readonly columnType: number
  readonly flags: number
  readonly characterSet: number
  readonly columnLength: number
  readonly decimals: number
  /** MariaDB 10.5+ extended metadata: `json` for JSON columns (stored as LONGTEXT). */
  readonly extendedFormat?: string
  /** MariaDB 10.5+ extended metadata: `uuid`, `inet4`, `inet6`, `point`, ... */
  readonly extendedTypeName?: string
}

const MYSQL_UNSIGNED_FLAG = 32
export const MYSQL_BINARY_CHARSET = 63

/** MySQL protocol column types (include/mysql_com.h `enum_field_types`). */
export const MYSQL_COLUMN_TYPES = {
  DECIMAL: 0,
  TINY: 1,
  SHORT: 2,
  LONG: 3,
  FLOAT: 4,
  DOUBLE: 5,
  NULL: 6,
  TIMESTAMP: 7,
  LONGLONG: 8,
  INT24: 9,
  DATE: 10,
  TIME: 11,
  DATETIME: 12,
  YEAR: 13,
  NEWDATE: 14,
  VARCHAR: 15,
  BIT: 16,
  VECTOR: 0xf2,
  JSON: 245,
  NEWDECIMAL: 246,
  ENUM: 247,
  SET: 248,
  TINY_BLOB: 249,
  MEDIUM_BLOB: 250,
  LONG_BLOB: 251,
  BLOB: 252,
  VAR_STRING: 253,
  STRING: 254,
  GEOMETRY: 255,
} as const
const T = MYSQL_COLUMN_TYPES

/** MySQL writes invalid ("zero") dates as 0000-00-00; they are not dates, and are staged as NULL. */
const zeroDateAsNull = (type: string) => (ref: string) =>
  `CASE WHEN starts_with(${ref}, '0000-00-00') THEN NULL ELSE CAST(${ref} AS ${type}) END`

/**
 * How a MySQL/MariaDB column is staged. The session runs with `time_zone = '+00:00'`, so TIMESTAMP values arrive
 * in UTC and are staged as TIMESTAMPTZ; DATETIME has no zone and is staged as TIMESTAMP, as stored. FLOAT is
 * selected as `col + 0E0` (a DOUBLE holding the float's exact value): the text protocol prints FLOAT with 6
 * significant digits only. TINYINT(1)/BOOLEAN stays TINYINT (it can hold 2..127); BIT(1) becomes BOOLEAN.
 */
export function mysqlColumn(field: MysqlFieldInfo): DbColumn {
  const quoted = quoteIdent('mysql', field.name)
  const unsigned = (field.flags & MYSQL_UNSIGNED_FLAG) !== 0
  const binary = field.characterSet === MYSQL_BINARY_CHARSET
  const u = (signed: string, unsignedType: string) => same(unsigned ? unsignedType : signed)
  let staging: Staging
  let serverType: string
  switch (field.columnType) {
    case T.TINY:
      ;[staging, serverType] = [u('TINYINT', 'UTINYINT'), 'TINYINT']
      break
    case T.SHORT:
      ;[staging, serverType] = [u('SMALLINT', 'USMALLINT'), 'SMALLINT']
      break
    case T.INT24:
    case T.LONG:
      ;[staging, serverType] = [u('INTEGER', 'UINTEGER'), 'INT']
      break
    case T.LONGLONG:
      ;[staging, serverType] = [u('BIGINT', 'UBIGINT'), 'BIGINT']
      break
    case T.YEAR:
      ;[staging, serverType] = [same('SMALLINT'), 'YEAR']
      break
    case T.DECIMAL:
    case T.NEWDECIMAL: {
      const scale = field.decimals
      const precision = field.columnLength - (scale > 0 ? 1 : 0) - (unsigned ? 0 : 1)
      staging =
        precision >= 1 && precision <= MAX_DECIMAL_PRECISION
          ? same(`DECIMAL(${precision},${scale})`)
          : same('VARCHAR')
      serverType = `DECIMAL(${precision},${scale})`
      break
    }
    case T.FLOAT:
      staging = {
        type: 'FLOAT',
        csvType: 'DOUBLE',
        select: (q) => `(${q} + 0E0)`,
        convert: (r) => `CAST(${r} AS FLOAT)`,
      }
      serverType = 'FLOAT'
      break
    case T.DOUBLE:
      ;[staging, serverType] = [same('DOUBLE'), 'DOUBLE']
      break
    case T.DATE:
    case T.NEWDATE:
      ;[staging, serverType] = [viaText('DATE', zeroDateAsNull('DATE')), 'DATE']
      break
    case T.DATETIME:
      staging = viaText('TIMESTAMP', zeroDateAsNull('TIMESTAMP'))
      serverType = `DATETIME(${Math.min(field.decimals, 6)})`
      break
    case T.TIMESTAMP:
      staging = viaText('TIMESTAMPTZ', (ref) => zeroDateAsNull('TIMESTAMPTZ')(`(${ref} || '+00')`))
      serverType = `DATETIME(${Math.min(field.decimals, 6)})`
      break
    case T.TIME:
      ;[staging, serverType] = [same('TIME'), 'TIME']
      break
    case T.BIT:
      staging =
        field.columnLength === 1
          ? viaText('BOOLEAN', (ref) => `(${ref} <> '00')`)
          : viaText('BLOB', (ref) => `from_hex(${ref})`)
      serverType = `BIT(${field.columnLength})`
      break
    case T.JSON:
      ;[staging, serverType] = [viaText('JSON', toJson), 'JSON']
      break
    case T.GEOMETRY:
      // Well-known binary (the internal format prefixes an SRID that no other reader understands).
      staging = {
        type: 'BLOB',
        csvType: 'VARCHAR',
        select: (q) => `ST_AsBinary(${q})`,
        convert: (ref) => `from_hex(${ref})`,
      }
      serverType = 'GEOMETRY'
      break
    default:
      // Strings, ENUM, SET and blobs: the character set tells text from bytes.
      if (binary) {
        ;[staging, serverType] = [viaText('BLOB', (ref) => `from_hex(${ref})`), 'BLOB']
      } else if (field.extendedFormat === 'json') {
        ;[staging, serverType] = [viaText('JSON', toJson), 'JSON']
      } else if (field.extendedTypeName === 'uuid') {
        ;[staging, serverType] = [same('UUID'), 'UUID']
      } else {
        ;[staging, serverType] = [same('VARCHAR'), 'VARCHAR']
      }
  }
  return {
    name: field.name,
    type: staging.type,
    select: staging.select?.(quoted) ?? quoted,
    csvType: staging.csvType,
    ...(staging.convert ? { convert: staging.convert } : {}),
    serverType,
  }
}
