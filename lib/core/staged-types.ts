/**
 * The types a batch stages (DuckDB logical type names, as written in batch manifests and stored in dimensions),
 * in one table: each name's family, and for whole numbers their width and sign. The sources stage into these
 * types, the row hash defines one canonical text per family, and each warehouse stores each family in a type of
 * its own. Pure, no I/O.
 *
 * | family    | canonical text (the row hash's)                     | example                       |
 * | --------- | --------------------------------------------------- | ----------------------------- |
 * | string    | the value                                           | `Ana`                         |
 * | integer   | decimal digits, `-` for negatives                   | `-42`                         |
 * | bool      | `true` / `false`                                    | `true`                        |
 * | date      | `YYYY-MM-DD`                                        | `2024-03-10`                  |
 * | time      | `HH:MM:SS.ffffff`                                   | `14:30:00.000000`             |
 * | instant   | `YYYY-MM-DD HH:MM:SS.ffffff` in UTC                 | `2024-03-10 14:30:00.120000`  |
 * | datetime  | `YYYY-MM-DD HH:MM:SS.ffffff` (no zone)              | `2024-03-10 14:30:00.000000`  |
 * | decimal   | fixed point with exactly `scale` digits             | `1.50` for DECIMAL(10,2)      |
 * | float     | C `%.17g` (round-trips every double), -0 as `0`     | `0.10000000000000001`         |
 * | bytes     | lowercase hex                                       | `00ff`                        |
 * | other     | DuckDB's CAST to VARCHAR (DuckDB only; BigQuery refuses these types) |              |
 *
 * Both zeros of a float read `0`: DuckDB keeps no sign of zero apart from the other (its Parquet writer's
 * dictionary and its storage's compression store every zero of a column chunk as the first one written,
 * duckdb/duckdb#25781), so the zero a row is staged with depends on the rows beside it, and a hash that told them
 * apart opened versions for rows the source never changed.
 */
export type TypeFamily =
  | {
      readonly kind:
        'string' | 'integer' | 'bool' | 'date' | 'time' | 'instant' | 'datetime' | 'float' | 'bytes'
    }
  | { readonly kind: 'decimal'; readonly precision: number; readonly scale: number }
  | { readonly kind: 'other' }

type ScalarKind = Exclude<TypeFamily['kind'], 'decimal' | 'other'>

/** A whole-number type: its width in bits and whether it holds negative numbers. */
interface WholeNumber {
  readonly bits: 8 | 16 | 32 | 64 | 128
  readonly signed: boolean
}

type StagedType =
  { readonly kind: Exclude<ScalarKind, 'integer'> } | ({ readonly kind: 'integer' } & WholeNumber)

const whole = (bits: WholeNumber['bits'], signed: boolean): StagedType => ({ kind: 'integer', bits, signed })
const of = (kind: Exclude<ScalarKind, 'integer'>): StagedType => ({ kind })

/** Every scalar type name a batch may carry (DuckDB's names and aliases), upper case. */
const STAGED_TYPES: Readonly<Record<string, StagedType>> = Object.freeze({
  VARCHAR: of('string'),
  TEXT: of('string'),
  STRING: of('string'),
  TINYINT: whole(8, true),
  INT1: whole(8, true),
  SMALLINT: whole(16, true),
  INT2: whole(16, true),
  SHORT: whole(16, true),
  INTEGER: whole(32, true),
  INT4: whole(32, true),
  INT: whole(32, true),
  BIGINT: whole(64, true),
  INT8: whole(64, true),
  LONG: whole(64, true),
  HUGEINT: whole(128, true),
  UTINYINT: whole(8, false),
  USMALLINT: whole(16, false),
  UINTEGER: whole(32, false),
  UBIGINT: whole(64, false),
  UHUGEINT: whole(128, false),
  BOOLEAN: of('bool'),
  BOOL: of('bool'),
  DATE: of('date'),
  TIME: of('time'),
  TIMESTAMPTZ: of('instant'),
  'TIMESTAMP WITH TIME ZONE': of('instant'),
  TIMESTAMP: of('datetime'),
  DATETIME: of('datetime'),
  TIMESTAMP_MS: of('datetime'),
  TIMESTAMP_S: of('datetime'),
  TIMESTAMP_US: of('datetime'),
  DOUBLE: of('float'),
  FLOAT8: of('float'),
  FLOAT: of('float'),
  FLOAT4: of('float'),
  REAL: of('float'),
  BLOB: of('bytes'),
  BYTEA: of('bytes'),
  BINARY: of('bytes'),
  VARBINARY: of('bytes'),
})

/** Largest DECIMAL precision DuckDB (and Parquet readers such as BigQuery's) keep exactly. */
export const MAX_DECIMAL_PRECISION = 38

/** DuckDB's DECIMAL without precision and scale. */
const DEFAULT_DECIMAL = { precision: 18, scale: 3 }

function stagedType(type: string): StagedType | undefined {
  const t = type.trim().toUpperCase()
  return STAGED_TYPES[t] ?? (t.startsWith('VARCHAR(') ? of('string') : undefined)
}

/**
 * The family of a staged type; unknown or nested types are `other`. Whole numbers are the `integer` family only
 * where every value fits a signed 64-bit integer (what both warehouses hash and store alike); wider or unsigned
 * 64-bit ones are `other`.
 */
/** The element type of a staged list type (`BIGINT[]` → `BIGINT`, `INT[][]` → `INT[]`), or undefined for any other type. */
export function listElementType(stagedType: string): string | undefined {
  const t = stagedType.trim()
  return t.endsWith('[]') ? t.slice(0, -2).trim() : undefined
}

export function typeFamily(type: string): TypeFamily {
  const t = type.trim().toUpperCase()
  const decimal = /^(?:DECIMAL|NUMERIC)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(t)
  if (decimal) return { kind: 'decimal', precision: Number(decimal[1]), scale: Number(decimal[2]) }
  if (t === 'DECIMAL' || t === 'NUMERIC') return { kind: 'decimal', ...DEFAULT_DECIMAL }
  const staged = stagedType(t)
  if (staged === undefined) return { kind: 'other' }
  if (staged.kind !== 'integer') return { kind: staged.kind }
  return staged.bits < 64 || (staged.bits === 64 && staged.signed) ? { kind: 'integer' } : { kind: 'other' }
}

/** Width and sign of a whole-number type (any width); undefined for other types. */
export function wholeNumberType(type: string): WholeNumber | undefined {
  const staged = stagedType(type)
  return staged?.kind === 'integer' ? { bits: staged.bits, signed: staged.signed } : undefined
}

/** A date or a timestamp (with or without zone): a type a duration can be subtracted from. */
export function isPointInTimeType(type: string): boolean {
  const kind = typeFamily(type).kind
  return kind === 'date' || kind === 'instant' || kind === 'datetime'
}

/**
 * A type whose order is the order of versions: a number (any width) or a point in time. Text is not (its order is
 * by character: "v10" before "v9"), nor a time of day (it wraps at midnight).
 */
export function isOrderedVersionType(type: string): boolean {
  return isNumberType(type) || isPointInTimeType(type)
}

/** A number of any width: whole (signed or not, up to 128 bits), decimal or floating point. */
export function isNumberType(type: string): boolean {
  const kind = typeFamily(type).kind
  return kind === 'integer' || kind === 'decimal' || kind === 'float' || wholeNumberType(type) !== undefined
}

/** Other names DuckDB gives a staged type (as a warehouse or a describe may spell it), by the name batches stage. */
const TYPE_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  'TIMESTAMP WITH TIME ZONE': 'TIMESTAMPTZ',
  INT8: 'BIGINT',
  LONG: 'BIGINT',
  INT: 'INTEGER',
  INT4: 'INTEGER',
  TEXT: 'VARCHAR',
  STRING: 'VARCHAR',
  BOOL: 'BOOLEAN',
  FLOAT8: 'DOUBLE',
})

/** A type's name as batches stage it: an alias replaced by the name (`INT8` → `BIGINT`), upper case. */
export function stagedTypeName(type: string): string {
  const upper = type.trim().toUpperCase()
  return TYPE_ALIASES[upper] ?? upper
}
