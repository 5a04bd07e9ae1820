import type { DuckDBConnection } from '@duckdb/node-api'

import type { StagedColumn } from '../../core/batch.ts'
import { withDuckDbEngine } from './duckdb-engine.ts'

/** One Parquet file's row count, read from its footer (no data is scanned). */
export interface ParquetFileRows {
  readonly path: string
  readonly rows: number
}

/**
 * Columns (name and DuckDB logical type, e.g. `BIGINT`, `TIMESTAMP`, `VARCHAR`) of a set of Parquet files
 * read as one relation, from their footers only. Uses `connection` when given, else a short-lived in-memory
 * DuckDB. The session must be in UTC (`SET TimeZone='UTC'`) for UTC-marked timestamps to read as stored.
 */
export async function readParquetColumns(
  paths: readonly string[],
  connection?: DuckDBConnection,
): Promise<StagedColumn[]> {
  return await withConnection(connection, async (conn) => {
    const reader = await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlStringList(paths)})`)
    return reader
      .getRowObjectsJson()
      .map((row) => ({ name: String(row.column_name), type: String(row.column_type) }))
  })
}

/**
 * The names of a Parquet file's columns as the file spells them (from its footer). DuckDB reads a name that
 * differs from an earlier one only in case under another name (`name` after `Name` as `name_1`); these are the
 * names before that.
 */
export async function readParquetColumnNames(path: string, connection?: DuckDBConnection): Promise<string[]> {
  return await withConnection(connection, async (conn) => {
    const reader = await conn.runAndReadAll(
      `SELECT name, num_children FROM parquet_schema(${sqlString(path)})`,
    )
    // Schema elements in depth-first order: the root, then each column followed by its nested fields.
    const elements = reader.getRowObjectsJson().map((row) => ({
      name: String(row.name),
      children: Number(row.num_children ?? 0),
    }))
    let next = 1
    const skipSubtree = () => {
      const { children } = elements[next++]!
      for (let i = 0; i < children; i++) skipSubtree()
    }
    const names: string[] = []
    for (let i = 0; i < (elements[0]?.children ?? 0); i++) {
      names.push(elements[next]!.name)
      skipSubtree()
    }
    return names
  })
}

/** Row count of each Parquet file, from the footers, in the order of `paths`. */
export async function readParquetRowCounts(
  paths: readonly string[],
  connection?: DuckDBConnection,
): Promise<ParquetFileRows[]> {
  if (paths.length === 0) return []
  return await withConnection(connection, async (conn) => {
    const reader = await conn.runAndReadAll(
      `SELECT file_name, num_rows FROM parquet_file_metadata(${sqlStringList(paths)})`,
    )
    const counts = new Map<string, number>()
    for (const row of reader.getRowObjectsJson()) counts.set(String(row.file_name), Number(row.num_rows))
    return paths.map((path) => ({ path, rows: counts.get(path) ?? 0 }))
  })
}

/** A DuckDB string literal; single quotes are doubled, so any file name is safe inside SQL. */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`
}

/** A DuckDB list of string literals: `['a', 'b']`. */
export function sqlStringList(values: readonly string[]): string {
  return `[${values.map(sqlString).join(', ')}]`
}

/** A DuckDB identifier; double quotes are doubled. */
export function sqlIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

async function withConnection<T>(
  connection: DuckDBConnection | undefined,
  action: (connection: DuckDBConnection) => Promise<T>,
): Promise<T> {
  if (connection !== undefined) return await action(connection)
  return await withDuckDbEngine({ threads: 1 }, action)
}
