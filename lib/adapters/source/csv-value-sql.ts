/**
 * DuckDB SQL that turns the text of a CSV value into a value of its column's type exactly, or refuses it.
 *
 * DuckDB's own CSV casts round and truncate without a word: `1.5` read as BIGINT is 2, `1.125` as DECIMAL(38,2)
 * is 1.13, `12345678901234567.89` as DOUBLE loses its last digits, `2024-01-01 10:00:00` as DATE drops the time,
 * `10:00:00.1234567` loses its last digit, `+02` after a TIMESTAMP is dropped. So every column is read as text
 * and converted here: a value is accepted only when its type holds it exactly (its text is the value's, up to
 * spelling: `+1`, `1.50`, `T`), and any other value stops the read with a marked error naming the file, the
 * column and the value (`valueError` parses it back). Pure: SQL text only.
 */
import { sqlString } from '../duckdb/parquet-schema.ts'
import type { SourceColumnType } from '../../core/source-types.ts'
import { isNumberType } from '../../core/staged-types.ts'

/** Temporary macros the expressions below call; run once on each connection that reads CSV. */
export const CSV_VALUE_MACROS: readonly string[] = [
  `CREATE OR REPLACE TEMP MACRO dimsync_number_key_digits(sign, digits, point) AS CASE ` +
    `WHEN rtrim(ltrim(digits, '0'), '0') = '' THEN '0' ` +
    `ELSE (CASE WHEN sign = '-' THEN '-' ELSE '' END) || rtrim(ltrim(digits, '0'), '0') || 'e' || ` +
    `(point - (length(digits) - length(ltrim(digits, '0'))))::VARCHAR END`,
  `CREATE OR REPLACE TEMP MACRO dimsync_number_key_of(p, t) AS CASE ` +
    `WHEN NOT regexp_full_match(trim(t), '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?') THEN NULL ` +
    `ELSE dimsync_number_key_digits(p.sign, p.whole || p.fraction, ` +
    `length(p.whole) + coalesce(TRY_CAST(nullif(p.exponent, '') AS BIGINT), 0)) END`,
  // The decimal value of a number's text as (sign, significant digits, exponent): two texts of the same number
  // give the same key (`1.50`, `15e-1`, `+1.5`); anything that is not a plain decimal number gives NULL.
  `CREATE OR REPLACE TEMP MACRO dimsync_number_key(t) AS dimsync_number_key_of(regexp_extract(trim(t), ` +
    `'^([+-]?)([0-9]*)\\.?([0-9]*)(?:[eE]([+-]?[0-9]+))?$', ['sign', 'whole', 'fraction', 'exponent']), t)`,
]

const WHOLE = `'\\s*[+-]?[0-9]+\\s*'`
/**
 * A number's text with a leading zero before another digit of its whole part (`02134`, `-01.5`). DuckDB's sniffer
 * reads such a column as text (a ZIP code, an account number), so a type that was not declared does not hold it:
 * a column first loaded as numbers would otherwise store `02134` as 2134.
 */
const LEADING_ZEROS = `'\\s*[+-]?0[0-9].*'`
const SPECIAL_FLOATS = `('nan', '+nan', '-nan', 'inf', '+inf', '-inf', 'infinity', '+infinity', '-infinity')`
/** Hours, minutes, optional seconds and up to six fraction digits (DuckDB keeps microseconds). */
const CLOCK = `[0-9]{1,2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,6})?)?`
const ISO_DAY = `-?[0-9]{1,}-[0-9]{1,2}-[0-9]{1,2}`
const ZONE = `(\\s*(Z|[+-][0-9]{1,2}(:?[0-9]{2})?|[A-Za-z_]+(/[A-Za-z_+-]+)*))?`

const regex = (text: string) => sqlString(text)

/**
 * The value of `text` (a VARCHAR expression, not NULL) as `column.type`, or NULL when the type does not hold
 * that text exactly.
 */
export function exactValue(
  column: SourceColumnType,
  text: string,
  numbers: 'any spelling' | 'no leading zeros' = 'any spelling',
): string {
  const { type, format } = column
  if (numbers === 'no leading zeros' && isNumberType(type)) {
    const value = exactValue(column, text)
    return `CASE WHEN NOT regexp_full_match(${text}, ${LEADING_ZEROS}) THEN ${value} END`
  }
  const trimmed = `trim(${text})`
  const when = (condition: string, value: string) => `CASE WHEN ${condition} THEN ${value} END`
  switch (type) {
    case 'VARCHAR':
      return text
    case 'BOOLEAN':
      return `TRY_CAST(${trimmed} AS BOOLEAN)`
    case 'TINYINT':
    case 'SMALLINT':
    case 'INTEGER':
    case 'BIGINT':
    case 'HUGEINT':
    case 'UTINYINT':
    case 'USMALLINT':
    case 'UINTEGER':
    case 'UBIGINT':
      return when(`regexp_full_match(${text}, ${WHOLE})`, `TRY_CAST(${text} AS ${type})`)
    case 'FLOAT':
    case 'DOUBLE': {
      const value = `TRY_CAST(${text} AS ${type})`
      // Short texts are exact when the number is finite and normal: a DOUBLE keeps 15 significant digits, a
      // FLOAT 6 (the text has no more digits than characters); longer ones are compared digit by digit.
      const [digits, smallest] = type === 'DOUBLE' ? [15, '2.2250738585072014e-308'] : [6, '1.1754944e-38']
      return (
        `CASE WHEN ${value} IS NULL THEN NULL ` +
        `WHEN length(${text}) <= ${digits} AND isfinite(${value}) AND abs(${value}) >= ${smallest} THEN ${value} ` +
        `WHEN lower(${trimmed}) IN ${SPECIAL_FLOATS} OR ` +
        `dimsync_number_key(${text}) = dimsync_number_key(CAST(${value} AS VARCHAR)) THEN ${value} END`
      )
    }
    case 'DATE':
      if (format !== undefined) {
        const parsed = `try_strptime(${text}, ${sqlString(format)})`
        // A format with a time of day must not lose it: only midnight is a date.
        return when(`CAST(${parsed} AS TIME) = TIME '00:00:00'`, `CAST(${parsed} AS DATE)`)
      }
      return when(
        `regexp_full_match(${text}, ${regex(`\\s*${ISO_DAY}\\s*`)})`,
        `TRY_CAST(${trimmed} AS DATE)`,
      )
    case 'TIME':
      if (format !== undefined) return `CAST(try_strptime(${text}, ${sqlString(format)}) AS TIME)`
      return when(`regexp_full_match(${text}, ${regex(`\\s*${CLOCK}\\s*`)})`, `TRY_CAST(${trimmed} AS TIME)`)
    case 'TIMESTAMP':
    case 'TIMESTAMPTZ': {
      if (format !== undefined) return `CAST(try_strptime(${text}, ${sqlString(format)}) AS ${type})`
      const zone = type === 'TIMESTAMPTZ' ? ZONE : ''
      return when(
        `regexp_full_match(${text}, ${regex(`\\s*${ISO_DAY}([T ]${CLOCK}${zone})?\\s*`)})`,
        `TRY_CAST(${trimmed} AS ${type})`,
      )
    }
    default: {
      const decimal = /^DECIMAL\((\d+),(\d+)\)$/.exec(type)
      if (decimal === null) throw new Error(`no exact CSV reading for type ${type}`)
      const scale = Number(decimal[2])
      // Digits past the scale must all be zeros: DuckDB would round them away.
      const pattern = `\\s*[+-]?([0-9]+(\\.[0-9]{0,${scale}}0*)?|\\.[0-9]{0,${scale}}0*)\\s*`
      return when(`regexp_full_match(${text}, ${regex(pattern)})`, `TRY_CAST(${trimmed} AS ${type})`)
    }
  }
}

const MARKER = 'dimsync-csv-value'

/**
 * The column as read: NULL stays NULL, a value its type holds exactly is converted, any other value stops the
 * read with an error that names file `file`, column `columnIndex` and the value (at most 200 characters).
 */
export function readColumn(
  column: SourceColumnType,
  text: string,
  file: number,
  columnIndex: number,
  numbers: 'any spelling' | 'no leading zeros',
): string {
  if (column.type === 'VARCHAR') return text
  const refusal = `error('[${MARKER} ${file} ${columnIndex}] ' || CAST(to_json(left(${text}, 200)) AS VARCHAR))`
  return `CASE WHEN ${text} IS NULL THEN NULL ELSE coalesce(${exactValue(column, text, numbers)}, ${refusal}) END`
}

/** The value is a number written with a leading zero before another digit (as LEADING_ZEROS). */
export function hasLeadingZeros(value: string): boolean {
  return /^\s*[+-]?0[0-9]/.test(value)
}

/** `02134` → `2134`, `-01.5` → `-1.5`: what a number type makes of a number written with leading zeros. */
export function withoutLeadingZeros(value: string): string {
  return value.trim().replace(/^([+-]?)0+(?=[0-9])/, '$1')
}

/** A value `readColumn` refused: the file's and the column's index, and the value (its first 200 characters). */
export interface RefusedValue {
  readonly file: number
  readonly column: number
  readonly value: string
}

/** The refused value in a DuckDB error raised by `readColumn`, or undefined for any other error. */
export function refusedValue(message: string): RefusedValue | undefined {
  const found = new RegExp(`\\[${MARKER} (\\d+) (\\d+)\\] ("(?:[^"\\\\]|\\\\.)*")`).exec(message)
  if (found === null) return undefined
  return { file: Number(found[1]), column: Number(found[2]), value: JSON.parse(found[3]!) as string }
}

/** What a value of `column` must look like, for the refusal (`a DATE written as %d/%m/%Y`). */
export function expectedText(column: SourceColumnType): string {
  const { type, format } = column
  if (format !== undefined) return `a ${type} written as ${format}`
  switch (type) {
    case 'DATE':
      return 'a DATE written YYYY-MM-DD'
    case 'TIMESTAMP':
      return 'a TIMESTAMP written YYYY-MM-DD HH:MM:SS[.ffffff] (no time zone, at most microseconds)'
    case 'TIMESTAMPTZ':
      return 'a TIMESTAMPTZ written YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM] (at most microseconds)'
    case 'TIME':
      return 'a TIME written HH:MM[:SS[.ffffff]]'
    case 'FLOAT':
    case 'DOUBLE':
      return `a number a ${type} holds exactly`
    default:
      return /^DECIMAL/.test(type) ? `a number a ${type} holds exactly` : `a ${type}`
  }
}

/** The date part templates DuckDB's CSV sniffer tries, in its order (`-` stands for the separator). */
const DATE_TEMPLATES = ['%m-%d-%Y', '%m-%d-%y', '%d-%m-%Y', '%d-%m-%y', '%Y-%m-%d', '%y-%m-%d'] as const
const TIMESTAMP_TEMPLATES = [
  '%m-%d-%Y %I:%M:%S %p',
  '%m-%d-%y %I:%M:%S %p',
  '%d-%m-%Y %H:%M:%S',
  '%d-%m-%y %H:%M:%S',
  '%Y-%m-%d %H:%M:%S',
  '%y-%m-%d %H:%M:%S',
] as const
/** Separators of the sniffer's date formats. */
export const DATE_SEPARATORS = ['-', '/', '.', ' '] as const

/**
 * The formats DuckDB's sniffer may choose for a DATE or TIMESTAMP column whose parts are separated by
 * `separator` (ISO 8601 is not among them: DuckDB reads it without a format).
 */
export function sniffedFormats(type: 'DATE' | 'TIMESTAMP', separator: string): string[] {
  const templates = type === 'DATE' ? DATE_TEMPLATES : TIMESTAMP_TEMPLATES
  return templates
    .map((template) => template.replace(/^(%.)-(%.)-(%.)/, `$1${separator}$2${separator}$3`))
    .filter((format) => !format.includes('%Y-%m-%d'))
}

/**
 * The other readings of values written in `format`: the same format with its day, month and year in another
 * order (`%d/%m/%Y` → `%m/%d/%Y`, `%y/%m/%d`, ...), time of day unchanged. A value that parses in two of them to
 * two different instants is ambiguous: `01/02/2024` is 1 February or 2 January.
 */
export function otherReadings(format: string): string[] {
  const parts = /^(%[dmYy])([-/. ])(%[dmYy])\2(%[dmYy])(.*)$/.exec(format)
  if (parts === null) return []
  const separator = parts[2]!
  const timeOfDay = parts[5]!
  return DATE_TEMPLATES.map((template) => template.replaceAll('-', separator) + timeOfDay).filter(
    (candidate) => candidate !== format,
  )
}
