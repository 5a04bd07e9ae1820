import { DEFAULT_SOURCE_MEMORY_LIMIT } from './duckdb-errors.ts'
import { withDuckDbEngine } from './duckdb-engine.ts'
import { sqlIdentifier, sqlStringList } from './parquet-schema.ts'

/** How often a value occurs in a column. */
export interface ParquetValueCount {
  /** The value as text (a CAST to VARCHAR, as the merge compares it); null for NULL. */
  readonly value: string | null
  readonly rows: number
}

/**
 * The distinct values of `column` in a set of Parquet files read as one relation, as text, most frequent first,
 * at most `limit` of them. A short-lived in-memory DuckDB on one thread (UTC, so timestamps read as stored).
 */
export async function readParquetValueCounts(
  paths: readonly string[],
  column: string,
  limit: number,
): Promise<ParquetValueCount[]> {
  if (paths.length === 0) return []
  return await withDuckDbEngine(
    { threads: 1, memoryLimit: DEFAULT_SOURCE_MEMORY_LIMIT },
    async (connection) => {
      const value = `CAST(${sqlIdentifier(column)} AS VARCHAR)`
      const reader = await connection.runAndReadAll(
        `SELECT ${value} AS value, COUNT(*) AS n FROM read_parquet(${sqlStringList(paths)}) ` +
          `GROUP BY 1 ORDER BY n DESC, value NULLS LAST LIMIT ${Math.max(1, Math.floor(limit))}`,
      )
      return reader.getRowObjectsJson().map((row) => ({
        value: row.value === null ? null : String(row.value),
        rows: Number(row.n),
      }))
    },
  )
}
