import type { LogicalType, SqlDialect, TableRef } from '../dialect.ts'
import { typeFamily } from '../canonical-types.ts'
import { assertSafeTypeText } from '../safe-type.ts'

const TYPES = Object.freeze({
  string: 'VARCHAR',
  int64: 'BIGINT',
  bool: 'BOOLEAN',
  // Instants: with the session zone pinned to UTC (see DuckDbWarehouse) TIMESTAMPTZ compares and prints in UTC.
  timestamp: 'TIMESTAMPTZ',
} as const) satisfies Record<LogicalType, string>

const cast = (expression: string) => `CAST(${expression} AS VARCHAR)`

/** DuckDB SQL. Identifiers in double quotes with `"` doubled (https://duckdb.org/docs/sql/dialect/keywords_and_identifiers). */
export const duckDbDialect: SqlDialect = Object.freeze({
  name: 'duckdb' as const,
  quoteIdentifier: (name: string) => `"${name.replaceAll('"', '""')}"`,
  table(ref: TableRef): string {
    const name = duckDbDialect.quoteIdentifier(ref.name)
    return ref.schema === undefined ? name : `${duckDbDialect.quoteIdentifier(ref.schema)}.${name}`
  },
  // Standard SQL string literal: quote doubled. DuckDB has no backslash escapes in plain literals.
  stringLiteral: (value: string) => `'${value.replaceAll("'", "''")}'`,
  timestampLiteral: (iso: string) => `TIMESTAMPTZ '${iso.replaceAll("'", "''")}'`,
  type: (logical: LogicalType) => TYPES[logical],
  castToString: cast,
  /** Canonical text per type family (see canonical-types.ts); the session zone is UTC (DuckDbWarehouse). */
  canonicalText(expression: string, columnType?: string): string {
    if (columnType === undefined) return cast(expression)
    const family = typeFamily(columnType)
    switch (family.kind) {
      case 'instant':
      case 'datetime':
        return `strftime(CAST(${expression} AS TIMESTAMP), '%Y-%m-%d %H:%M:%S.%f')`
      case 'time':
        return `strftime(DATE '2000-01-01' + ${expression}, '%H:%M:%S.%f')`
      case 'float':
        return `printf('%.17g', CAST(${expression} AS DOUBLE))`
      case 'bytes':
        return `lower(hex(${expression}))`
      // string, integer, bool, date: DuckDB's cast is the canonical text; decimal keeps its scale in DuckDB.
      default:
        return cast(expression)
    }
  },
  concat: (parts: readonly string[], multiline = false) => parts.join(multiline ? '\n    || ' : ' || '),
  // md5() returns the lowercase hex text in DuckDB; BigQuery needs TO_HEX(MD5()).
  md5Hex: (expression: string) => `md5(${expression})`,
  castToTimestamp: (expression: string) => `CAST(${expression} AS TIMESTAMPTZ)`,
  raiseError: (messageExpression: string) => `error(${messageExpression})`,
  createTempTableAs: (name: string, select: string) =>
    `CREATE OR REPLACE TEMP TABLE ${duckDbDialect.quoteIdentifier(name)} AS\n${select}`,
  dropTableIfExists: (ref: TableRef) => `DROP TABLE IF EXISTS ${duckDbDialect.table(ref)}`,
  // Staged types are DuckDB's own names: stored as they are, once checked to be plain type text.
  columnType(stagedType: string, where: { readonly table: string; readonly column: string }): string {
    assertSafeTypeText(where.table, where.column, stagedType)
    return stagedType
  },
  primaryKey: (quotedColumns: readonly string[]) => `PRIMARY KEY (${quotedColumns.join(', ')})`,
  tableOptions: () => '',
  columnDescription: () => '',
  filterCurrentOnValidTo: false,
})
