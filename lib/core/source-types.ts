/**
 * How the text of a CSV column is read: the type its values are staged as and, for dates and times, the
 * strptime format they are written in. A CSV file carries no types: they are chosen once, on the table's first
 * load (or declared in dimsync.yaml), kept in the state store, and every later read uses them, so the same text
 * is always stored as the same value. Pure: no I/O.
 */

export interface SourceColumnType {
  readonly name: string
  /** A DuckDB type name, as `readType` writes it (`BIGINT`, `DECIMAL(38,0)`, `DATE`, `VARCHAR`). */
  readonly type: string
  /** strptime format of a date, time or timestamp column (`%d/%m/%Y`); absent: ISO 8601. */
  readonly format?: string
}

/** The recorded types of one table's source columns (`StateStore.getSourceTypes`). */
export interface SourceTypes {
  readonly version: 1
  readonly columns: readonly SourceColumnType[]
}

/** Type names a CSV column may be read as, by their canonical DuckDB spelling; aliases map to them. */
const READ_TYPES: Readonly<Record<string, string>> = Object.freeze({
  VARCHAR: 'VARCHAR',
  TEXT: 'VARCHAR',
  STRING: 'VARCHAR',
  BOOLEAN: 'BOOLEAN',
  BOOL: 'BOOLEAN',
  TINYINT: 'TINYINT',
  SMALLINT: 'SMALLINT',
  INTEGER: 'INTEGER',
  INT: 'INTEGER',
  BIGINT: 'BIGINT',
  HUGEINT: 'HUGEINT',
  UTINYINT: 'UTINYINT',
  USMALLINT: 'USMALLINT',
  UINTEGER: 'UINTEGER',
  UBIGINT: 'UBIGINT',
  FLOAT: 'FLOAT',
  REAL: 'FLOAT',
  DOUBLE: 'DOUBLE',
  DATE: 'DATE',
  TIME: 'TIME',
  TIMESTAMP: 'TIMESTAMP',
  DATETIME: 'TIMESTAMP',
  TIMESTAMPTZ: 'TIMESTAMPTZ',
  'TIMESTAMP WITH TIME ZONE': 'TIMESTAMPTZ',
})

/** Largest DECIMAL precision a CSV column may be read as (what DuckDB and Parquet keep exactly). */
const MAX_PRECISION = 38

/** The types `readType` accepts, for messages. */
export const READ_TYPE_NAMES =
  'VARCHAR, BOOLEAN, TINYINT, SMALLINT, INTEGER, BIGINT, HUGEINT, UTINYINT, USMALLINT, UINTEGER, UBIGINT, ' +
  'DECIMAL(p,s) (p up to 38), FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ'

/**
 * The canonical DuckDB name of a type a CSV column can be read as (`decimal(38, 0)` → `DECIMAL(38,0)`, `text`
 * → `VARCHAR`), or undefined when it is not one.
 */
export function readType(text: string): string | undefined {
  const t = text.trim().toUpperCase().replace(/\s+/g, ' ')
  const decimal = /^(?:DECIMAL|NUMERIC) ?\( ?(\d+) ?(?:, ?(\d+) ?)?\)$/.exec(t)
  if (decimal !== null) {
    const precision = Number(decimal[1])
    const scale = Number(decimal[2] ?? 0)
    if (precision < 1 || precision > MAX_PRECISION || scale > precision) return undefined
    return `DECIMAL(${precision},${scale})`
  }
  return READ_TYPES[t]
}

/** Whether values of `type` are written in a format (dates, times, timestamps). */
export function takesFormat(type: string): boolean {
  return ['DATE', 'TIME', 'TIMESTAMP', 'TIMESTAMPTZ'].includes(type)
}

/** The column as written in dimsync.yaml: `DECIMAL(38,0)`, or `{ type: DATE, format: '%d/%m/%Y' }`. */
export function describeColumnType(column: SourceColumnType): string {
  return column.format === undefined
    ? column.type
    : `{ type: ${column.type}, format: '${column.format.replaceAll("'", "''")}' }`
}

/** Checks a record read back from a state store; undefined when it is not one. */
export function parseSourceTypes(value: unknown): SourceTypes | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const record = value as Partial<SourceTypes>
  if (record.version !== 1 || !Array.isArray(record.columns)) return undefined
  for (const column of record.columns as unknown[]) {
    const c = column as Partial<SourceColumnType> | null
    if (typeof c?.name !== 'string' || typeof c.type !== 'string' || readType(c.type) !== c.type)
      return undefined
    if (c.format !== undefined && (typeof c.format !== 'string' || !takesFormat(c.type))) return undefined
  }
  return record as SourceTypes
}

/** Whether two records hold the same columns with the same types and formats (in any order). */
export function sameSourceTypes(a: SourceTypes | undefined, b: SourceTypes | undefined): boolean {
  if (a === undefined || b === undefined) return a === b
  if (a.columns.length !== b.columns.length) return false
  const byName = new Map(a.columns.map((c) => [c.name, c]))
  return b.columns.every((c) => {
    const other = byName.get(c.name)
    return other !== undefined && other.type === c.type && other.format === c.format
  })
}
