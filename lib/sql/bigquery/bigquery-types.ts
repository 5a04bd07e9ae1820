import { DimsyncError } from '../../core/errors.ts'
import { typeFamily } from '../../core/staged-types.ts'

/**
 * Maps a staged column type (DuckDB type names from the batch manifest) to the BigQuery column type of the
 * dimension and of the per-batch staging table. Parquet written by dimsync carries the same types, so the load
 * job converts them as BigQuery documents (INT32/INT64 → INT64, DOUBLE/FLOAT → FLOAT64, DECIMAL → NUMERIC or
 * BIGNUMERIC, TIMESTAMP(UTC) → TIMESTAMP, TIMESTAMP(local) → DATETIME, BYTE_ARRAY → BYTES).
 *
 * Types BigQuery cannot hold without loss (UBIGINT, HUGEINT, INTERVAL, lists, structs, maps) are refused
 * with a message naming the table and column, never silently turned into text.
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
  'text, integers up to 64 bits, booleans, dates, times, timestamps, decimals, floating point, bytes, UUIDs'

/** Staged columns whose Parquet values BigQuery cannot load as they are: staged as text before the load. */
export function loadTextColumns(columns: readonly { name: string; type: string }[]): string[] {
  return columns.filter((c) => c.type.trim().toUpperCase() === 'UUID').map((c) => c.name)
}

/** The BigQuery column type of a staged type, or undefined when BigQuery cannot store it without loss. */
export function bigQueryStorableType(stagedType: string): string | undefined {
  // A UUID is kept as its canonical text (lowercase, hyphenated: DuckDB's text of it, so the row hash agrees);
  // BigQuery has no UUID type, and the load converts the staged Parquet's 16 bytes (see loadTextColumns).
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
  const expected = bigQueryStorableType(stagedType)
  if (expected === undefined || field.mode === 'REPEATED') return false
  const [, base, precision, scale] = /^(\w+)(?:\((\d+), (\d+)\))?$/.exec(expected) ?? []
  const type = (field.type ?? '').toUpperCase()
  if ((GOOGLE_SQL_NAMES[type] ?? type) !== base) return false
  return precision === undefined || (field.precision === precision && (field.scale ?? '0') === scale)
}
