import type { LogicalType, SqlDialect, TableRef } from '../dialect.ts'

const TYPES = Object.freeze({
  string: 'VARCHAR',
  int64: 'BIGINT',
  bool: 'BOOLEAN',
  // Instants: with the session zone pinned to UTC (see DuckDbWarehouse) TIMESTAMPTZ compares and prints in UTC.
  timestamp: 'TIMESTAMPTZ',
} as const) satisfies Record<LogicalType, string>

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
  castToString: (expression: string) => `CAST(${expression} AS VARCHAR)`,
  // md5() returns the lowercase hex text in DuckDB; BigQuery needs TO_HEX(MD5()).
  md5Hex: (expression: string) => `md5(${expression})`,
  castToTimestamp: (expression: string) => `CAST(${expression} AS TIMESTAMPTZ)`,
  raiseError: (messageExpression: string) => `error(${messageExpression})`,
  createTempTableAs: (name: string, select: string) =>
    `CREATE OR REPLACE TEMP TABLE ${duckDbDialect.quoteIdentifier(name)} AS\n${select}`,
  dropTableIfExists: (ref: TableRef) => `DROP TABLE IF EXISTS ${duckDbDialect.table(ref)}`,
})
