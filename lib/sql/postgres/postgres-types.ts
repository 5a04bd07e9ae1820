import { listElementType as anyListElementType, stagedTypeName, typeFamily } from '../../core/staged-types.ts'
import type { StagedColumn } from '../../core/batch.ts'
import { storesEveryStagedType, type WarehouseChecks } from '../../core/warehouse-checks.ts'
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
  const describedBack = stagedTypeOfPostgres(type) ?? type
  if (sameStagedType(describedBack, stagedType)) return type
  throw new Error(
    `table ${where.table}: column "${where.column}" has type ${stagedType}, which the postgres warehouse would ` +
      `store as ${type} and read back as ${describedBack}; cast it to ${describedBack} in the source`,
  )
}

function storedType(stagedType: string, where: ColumnWhere): string {
  const element = listElementType(stagedType)
  if (element !== undefined) {
    if (!LIST_ELEMENT_FAMILIES.has(typeFamily(element).kind) && element.toUpperCase() !== 'UUID')
      throw new Error(
        `table ${where.table}: column "${where.column}" has type ${stagedType}, which the postgres warehouse ` +
          `cannot store with the same row hash as DuckDB (lists of text, whole numbers, booleans, dates, decimals ` +
          `and UUIDs only); cast it in the source`,
      )
    return `${storedType(element, where)}[]`
  }
  const upper = stagedType.trim().toUpperCase()
  // JSON is staged as its canonical text (lib/core/canonical-json.ts): `json` keeps the text as given.
  if (upper === 'JSON') return 'JSON'
  // Both print a UUID as 36 lowercase characters with hyphens.
  if (upper === 'UUID') return 'UUID'
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
          `date, time, timestamps, decimals, doubles, blobs, JSON, UUID); cast it in the source`,
      )
  }
}

/** The element type of a one-dimensional list type (`BIGINT[]` → `BIGINT`), or undefined for any other type. */
export function listElementType(stagedType: string): string | undefined {
  const element = anyListElementType(stagedType)
  return element === undefined || anyListElementType(element) !== undefined ? undefined : element
}

/** Element families whose text inside DuckDB's text of a list PostgreSQL renders alike (postgres-dialect.ts). */
const LIST_ELEMENT_FAMILIES: ReadonlySet<string> = new Set(['string', 'integer', 'bool', 'date', 'decimal'])

/** DuckDB's DECIMAL and NUMERIC without a precision are DECIMAL(18,3). */
const DEFAULT_DECIMALS: Readonly<Record<string, string>> = Object.freeze({
  DECIMAL: 'DECIMAL(18,3)',
  NUMERIC: 'DECIMAL(18,3)',
})

function sameStagedType(a: string, b: string): boolean {
  const normal = (t: string) => {
    const upper = t
      .trim()
      .toUpperCase()
      .replace(/\s*([(),])\s*/g, '$1')
      .replace(/\s+/g, ' ')
      .replace(/^NUMERIC/, 'DECIMAL')
    return DEFAULT_DECIMALS[upper] ?? stagedTypeName(upper)
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
 * The staged type (DuckDB's name, as DuckDB describes it) of a PostgreSQL column type as `format_type` writes it
 * (`numeric(12,2)`, `text[]`, `timestamp with time zone`); undefined for a type dimsync never creates.
 */
export function stagedTypeOfPostgres(formatted: string): string | undefined {
  const t = formatted.trim().toLowerCase()
  if (t.endsWith('[]')) {
    const element = stagedTypeOfPostgres(t.slice(0, -2))
    return element === undefined ? undefined : `${element}[]`
  }
  const decimal = /^numeric\s*\((\d+)\s*,\s*(\d+)\)$/.exec(t)
  if (decimal) return `DECIMAL(${decimal[1]},${decimal[2]})`
  return STAGED_OF_POSTGRES[t]
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
  uuid: 'UUID',
  // The short names dimsync writes in DDL (columnType checks what they read back as).
  timestamptz: 'TIMESTAMP WITH TIME ZONE',
  timestamp: 'TIMESTAMP',
  time: 'TIME',
})

/** What `dimsync validate` checks for a PostgreSQL warehouse: the staged types it has no column type for. */
export const postgresChecks: WarehouseChecks = {
  ...storesEveryStagedType('PostgreSQL'),
  unstorableColumns: (columns) => columns.filter((c) => !storable(c)),
}

function storable(column: StagedColumn): boolean {
  try {
    postgresColumnType(column.type, { table: '', column: column.name })
    return true
  } catch {
    return false
  }
}
