import { typeFamily } from '../../core/staged-types.ts'
import type { ColumnWhere } from '../dialect.ts'

/**
 * Staged types (DuckDB names) ↔ PostgreSQL column types. Each family is stored in the PostgreSQL type that holds
 * every value exactly and whose canonical text (postgres-dialect.ts) is DuckDB's; what has none is refused.
 */

/**
 * The PostgreSQL type of a staged type; throws naming the table and column when PostgreSQL cannot store it, or
 * stores it in a type that describes back as another staged type (a TINYINT kept as SMALLINT would read back as
 * SMALLINT, and the next batch's TINYINT would look like a change of type).
 */
export function postgresColumnType(stagedType: string, where: ColumnWhere): string {
  const type = storedType(stagedType, where)
  const describedBack = STAGED_OF_POSTGRES[type.toLowerCase()] ?? type.replace(/^NUMERIC/, 'DECIMAL')
  if (sameStagedType(describedBack, stagedType)) return type
  throw new Error(
    `table ${where.table}: column "${where.column}" has type ${stagedType}, which the postgres warehouse would ` +
      `store as ${type} and read back as ${describedBack}; cast it to ${describedBack} in the source`,
  )
}

function storedType(stagedType: string, where: ColumnWhere): string {
  const upper = stagedType.trim().toUpperCase()
  // JSON is staged as its canonical text (lib/core/canonical-json.ts): `json` keeps the text as given.
  if (upper === 'JSON') return 'JSON'
  const family = typeFamily(stagedType)
  switch (family.kind) {
    case 'string':
      return 'TEXT'
    case 'integer':
      return INTEGER_TYPES[upper] ?? 'BIGINT'
    case 'bool':
      return 'BOOLEAN'
    case 'date':
      return 'DATE'
    case 'time':
      return 'TIME'
    case 'instant':
      return 'TIMESTAMPTZ'
    case 'datetime':
      return 'TIMESTAMP'
    case 'decimal':
      return `NUMERIC(${family.precision},${family.scale})`
    case 'float':
      return FLOAT4_TYPES.has(upper) ? 'REAL' : 'DOUBLE PRECISION'
    case 'bytes':
      return 'BYTEA'
    case 'other':
      throw new Error(
        `table ${where.table}: column "${where.column}" has type ${stagedType}, which the postgres warehouse ` +
          `cannot store with the same row hash as DuckDB (supported: text, whole numbers up to BIGINT, boolean, ` +
          `date, time, timestamps, decimals, doubles, blobs, JSON); cast it in the source`,
      )
  }
}

/** Names DuckDB gives the same type (the dimension layout compares types through the same aliases). */
const SAME_TYPE: Readonly<Record<string, string>> = Object.freeze({
  'TIMESTAMP WITH TIME ZONE': 'TIMESTAMPTZ',
  INT8: 'BIGINT',
  LONG: 'BIGINT',
  INT: 'INTEGER',
  INT4: 'INTEGER',
  TEXT: 'VARCHAR',
  STRING: 'VARCHAR',
  BOOL: 'BOOLEAN',
  FLOAT8: 'DOUBLE',
  DECIMAL: 'DECIMAL(18,3)',
  NUMERIC: 'DECIMAL(18,3)',
})

function sameStagedType(a: string, b: string): boolean {
  const normal = (t: string) => {
    const upper = t
      .trim()
      .toUpperCase()
      .replace(/\s+/g, '')
      .replace(/^NUMERIC/, 'DECIMAL')
    return SAME_TYPE[upper] ?? SAME_TYPE[t.trim().toUpperCase()] ?? upper
  }
  return normal(a) === normal(b)
}

/** Whole numbers in the narrowest PostgreSQL type that holds every value (PostgreSQL has no unsigned types). */
const INTEGER_TYPES: Readonly<Record<string, string>> = Object.freeze({
  TINYINT: 'SMALLINT',
  INT1: 'SMALLINT',
  UTINYINT: 'SMALLINT',
  SMALLINT: 'SMALLINT',
  INT2: 'SMALLINT',
  SHORT: 'SMALLINT',
  USMALLINT: 'INTEGER',
  INTEGER: 'INTEGER',
  INT4: 'INTEGER',
  INT: 'INTEGER',
  UINTEGER: 'BIGINT',
})

const FLOAT4_TYPES: ReadonlySet<string> = new Set(['FLOAT', 'FLOAT4', 'REAL'])

/**
 * The staged type (DuckDB's name, as DuckDB describes it) of a PostgreSQL column from information_schema.columns
 * (`data_type`, `numeric_precision`, `numeric_scale`); undefined for a type dimsync never creates.
 */
export function stagedTypeOfPostgres(column: {
  readonly data_type: string
  readonly numeric_precision: number | null
  readonly numeric_scale: number | null
}): string | undefined {
  if (column.data_type === 'numeric')
    return column.numeric_precision === null
      ? undefined
      : `DECIMAL(${column.numeric_precision},${column.numeric_scale ?? 0})`
  return STAGED_OF_POSTGRES[column.data_type]
}

const STAGED_OF_POSTGRES: Readonly<Record<string, string>> = Object.freeze({
  text: 'VARCHAR',
  'character varying': 'VARCHAR',
  smallint: 'SMALLINT',
  integer: 'INTEGER',
  bigint: 'BIGINT',
  boolean: 'BOOLEAN',
  date: 'DATE',
  'time without time zone': 'TIME',
  'timestamp with time zone': 'TIMESTAMP WITH TIME ZONE',
  'timestamp without time zone': 'TIMESTAMP',
  'double precision': 'DOUBLE',
  real: 'FLOAT',
  bytea: 'BLOB',
  json: 'JSON',
})
