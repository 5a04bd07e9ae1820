import { DimsyncError } from '../../core/errors.ts'
import { listElementType, typeFamily } from '../../core/staged-types.ts'

/**
 * Maps a staged column type (DuckDB type names from the batch manifest) to the BigQuery column type of the
 * dimension and of the per-batch staging table. Parquet written by dimsync carries the same types, so the load
 * job converts them as BigQuery documents (INT32/INT64 → INT64, DOUBLE/FLOAT → FLOAT64, DECIMAL → NUMERIC or
 * BIGNUMERIC, TIMESTAMP(UTC) → TIMESTAMP, TIMESTAMP(local) → DATETIME, BYTE_ARRAY → BYTES, LIST → a REPEATED
 * column with list inference).
 *
 * JSON is staged as STRING (a load job fills no JSON column from Parquet) and parsed once the batch is loaded.
 *
 * Types BigQuery cannot hold without loss (UBIGINT, HUGEINT, INTERVAL, structs, maps, lists of lists, lists of
 * elements whose text the row hash cannot render alike on both warehouses) are refused with a message naming the
 * table and column, never silently turned into text.
 */
export function bigQueryColumnType(stagedType: string, where: { table: string; column: string }): string {
  const type = bigQueryStorableType(stagedType)
  if (type !== undefined) return type
  throw new DimsyncError(
    `table ${where.table}: column "${where.column}" has type ${stagedType}, which dimsync cannot store in BigQuery ` +
      `without loss (supported: ${BIGQUERY_SUPPORTED}); cast it in the source query`,
  )
}

/** What BigQuery stores, for messages. */
export const BIGQUERY_SUPPORTED =
  'text, integers up to 64 bits, booleans, dates, times, timestamps, decimals, floating point, bytes, UUIDs, JSON, ' +
  'one-dimensional arrays of text, integers, booleans, dates, decimals or UUIDs'

/** A staged column cast before the load: its Parquet values are not what BigQuery loads into its type. */
export interface LoadCast {
  readonly name: string
  /** The DuckDB type the column is rewritten as (`VARCHAR`, `VARCHAR[]`). */
  readonly as: string
}

/**
 * Staged columns whose Parquet values BigQuery cannot load as they are: UUIDs (and lists of them) as text, and JSON
 * as its text (a load job fills no JSON column from Parquet: see stagingField).
 */
export function loadCasts(columns: readonly { name: string; type: string }[]): LoadCast[] {
  return columns.flatMap((c) => {
    const element = arrayElementType(c.type)
    const uuid = (type: string) => type.trim().toUpperCase() === 'UUID'
    if (element !== undefined) return uuid(element) ? [{ name: c.name, as: 'VARCHAR[]' }] : []
    return uuid(c.type) || isJsonType(c.type) ? [{ name: c.name, as: 'VARCHAR' }] : []
  })
}

export function isJsonType(stagedType: string): boolean {
  return stagedType.trim().toUpperCase() === 'JSON'
}

/**
 * The field of a staged column in the batch's staging table: the dimension's field, except JSON, which is loaded
 * as STRING and parsed once the batch is complete ("If you use a batch load job to ingest JSON data into a table,
 * the source data must be in CSV, Avro, or JSON format. Other batch load formats are not supported."
 * https://cloud.google.com/bigquery/docs/reference/standard-sql/json-data#limitations).
 */
export function stagingField(
  stagedType: string,
  where: { table: string; column: string },
): { readonly type: string; readonly mode?: 'REPEATED' } {
  return isJsonType(stagedType) ? { type: 'STRING' } : bigQueryField(stagedType, where)
}

/** The element type of a staged list type (`BIGINT[]` → `BIGINT`), or undefined for any other type. */
export function arrayElementType(stagedType: string): string | undefined {
  return listElementType(stagedType)
}

/**
 * Element families of the arrays BigQuery stores: those whose text inside DuckDB's text of a list (what the row
 * hash has always hashed there) BigQuery can render alike (bigquery-dialect.ts `listText`). Floats (DuckDB writes
 * the shortest round-trip digits), times, timestamps and bytes inside lists are not among them yet.
 */
const ARRAY_ELEMENT_FAMILIES: ReadonlySet<string> = new Set(['string', 'integer', 'bool', 'date', 'decimal'])

/**
 * Why a column of this staged type cannot be a key on BigQuery, or undefined when it can: BigQuery has no
 * equality, grouping or clustering on JSON and arrays, which the merge's joins on the key need.
 */
export function bigQueryKeyProblem(stagedType: string): string | undefined {
  const type = bigQueryStorableType(stagedType)
  if (type === 'JSON' || type?.startsWith('ARRAY<'))
    return `has type ${stagedType}, which BigQuery cannot compare (no equality on JSON or arrays), so it cannot be a key`
  return undefined
}

/** The BigQuery column type of a staged type, or undefined when BigQuery cannot store it without loss. */
export function bigQueryStorableType(stagedType: string): string | undefined {
  const element = arrayElementType(stagedType)
  if (element !== undefined) {
    // One dimension only: BigQuery has no arrays of arrays (an ARRAY<ARRAY<…>> column cannot exist).
    if (arrayElementType(element) !== undefined) return undefined
    const uuid = element.toUpperCase() === 'UUID'
    if (!uuid && !ARRAY_ELEMENT_FAMILIES.has(typeFamily(element).kind)) return undefined
    // Elements without parameters: NUMERIC or BIGNUMERIC as such hold every value of the decimal chosen for them.
    const type = bigQueryStorableType(element)?.replace(/\(.*\)$/, '')
    return type === undefined ? undefined : `ARRAY<${type}>`
  }
  // JSON is BigQuery's JSON type; the sources stage its canonical text (lib/core/canonical-json.ts), which is
  // BigQuery's TO_JSON_STRING of it, so both warehouses hash the same text.
  if (stagedType.trim().toUpperCase() === 'JSON') return 'JSON'
  // A UUID is kept as its canonical text (lowercase, hyphenated: DuckDB's text of it, so the row hash agrees);
  // BigQuery has no UUID type, and the load converts the staged Parquet's 16 bytes (see loadCasts).
  if (stagedType.trim().toUpperCase() === 'UUID') return 'STRING'
  const family = typeFamily(stagedType)
  switch (family.kind) {
    case 'string':
      return 'STRING'
    case 'integer':
      return 'INT64'
    case 'bool':
      return 'BOOL'
    case 'date':
      return 'DATE'
    case 'time':
      return 'TIME'
    case 'instant':
      return 'TIMESTAMP'
    case 'datetime':
      return 'DATETIME'
    case 'float':
      return 'FLOAT64'
    case 'bytes':
      return 'BYTES'
    case 'decimal': {
      const { precision: p, scale: s } = family
      // NUMERIC(P,S): 0 ≤ S ≤ 9, max(1,S) ≤ P ≤ S + 29; BIGNUMERIC(P,S): 0 ≤ S ≤ 38, max(1,S) ≤ P ≤ S + 38.
      if (s <= 9 && p - s <= 29) return `NUMERIC(${Math.max(p, 1)}, ${s})`
      if (s <= 38 && p - s <= 38) return `BIGNUMERIC(${Math.max(p, 1)}, ${s})`
      break
    }
    case 'other':
      break
  }
  return undefined
}

/**
 * The REST schema field of a staged column (a load's staging table is created through the API): an array is a
 * REPEATED field of its element's type; parameters (`NUMERIC(12, 2)`) are left to the DDL of the dimension.
 */
export function bigQueryField(
  stagedType: string,
  where: { table: string; column: string },
): { readonly type: string; readonly mode?: 'REPEATED' } {
  const type = bigQueryColumnType(stagedType, where)
  const array = /^ARRAY<(.*)>$/.exec(type)
  const base = (array?.[1] ?? type).replace(/\(.*\)$/, '')
  return array === null ? { type: base } : { type: base, mode: 'REPEATED' }
}

/** The metadata column types dimsync writes (DuckDB names, see metadataColumnList) in BigQuery. */
export const BIGQUERY_LOGICAL_TYPES = Object.freeze({
  string: 'STRING',
  int64: 'INT64',
  bool: 'BOOL',
  timestamp: 'TIMESTAMP',
} as const)

/**
 * The staged type recorded in a column's description (`dimsync source type: DECIMAL(10,2)`), so that reading the
 * dimension back gives the exact type the source had (INT64 alone cannot say whether it was INTEGER or BIGINT).
 */
export const SOURCE_TYPE_PREFIX = 'dimsync source type: '

/** The staged type of a BigQuery column: from its description when dimsync wrote it, else from its type. */
export function stagedTypeOfBigQueryField(field: {
  readonly type?: string
  readonly description?: string
  readonly precision?: string
  readonly scale?: string
  readonly mode?: string
}): string {
  const described = field.description?.split('\n').find((line) => line.startsWith(SOURCE_TYPE_PREFIX))
  if (described !== undefined) return described.slice(SOURCE_TYPE_PREFIX.length).trim()
  const type = (field.type ?? '').toUpperCase()
  const decimal = (defaultP: number, defaultS: number) =>
    `DECIMAL(${field.precision ?? defaultP},${field.scale ?? (field.precision ? 0 : defaultS)})`
  const map: Record<string, () => string> = {
    STRING: () => 'VARCHAR',
    INTEGER: () => 'BIGINT',
    INT64: () => 'BIGINT',
    FLOAT: () => 'DOUBLE',
    FLOAT64: () => 'DOUBLE',
    BOOLEAN: () => 'BOOLEAN',
    BOOL: () => 'BOOLEAN',
    TIMESTAMP: () => 'TIMESTAMP WITH TIME ZONE',
    DATETIME: () => 'TIMESTAMP',
    DATE: () => 'DATE',
    TIME: () => 'TIME',
    BYTES: () => 'BLOB',
    NUMERIC: () => decimal(38, 9),
    BIGNUMERIC: () => decimal(76, 38),
  }
  const base = map[type]?.() ?? type
  return field.mode === 'REPEATED' ? `${base}[]` : base
}

/** BigQuery's legacy type names in table schemas, as GoogleSQL names them. */
const GOOGLE_SQL_NAMES: Readonly<Record<string, string>> = {
  INTEGER: 'INT64',
  FLOAT: 'FLOAT64',
  BOOLEAN: 'BOOL',
  RECORD: 'STRUCT',
}

/**
 * Whether a column of this BigQuery schema field can hold the staged type recorded for it: the same BigQuery
 * type (and precision and scale). A recorded type that does not fit is stale: the column was rewritten since
 * (`dimsync evolve`, or by hand), and the field's own type is the truth until the next merge records it again.
 */
export function recordedTypeFits(
  stagedType: string,
  field: {
    readonly type?: string
    readonly precision?: string
    readonly scale?: string
    readonly mode?: string
  },
): boolean {
  const storable = bigQueryStorableType(stagedType)
  if (storable === undefined) return false
  const array = /^ARRAY<(.*)>$/.exec(storable)
  if ((array !== null) !== (field.mode === 'REPEATED')) return false
  const expected = array?.[1] ?? storable
  const [, base, precision, scale] = /^(\w+)(?:\((\d+), (\d+)\))?$/.exec(expected) ?? []
  const type = (field.type ?? '').toUpperCase()
  if ((GOOGLE_SQL_NAMES[type] ?? type) !== base) return false
  return precision === undefined || (field.precision === precision && (field.scale ?? '0') === scale)
}
