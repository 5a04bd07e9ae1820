import {
  DEFAULT_SOURCE_MEMORY_LIMIT,
  SOURCE_MEMORY_LIMIT_VARIABLE,
} from '../adapters/duckdb/duckdb-errors.ts'
import { FileSource } from '../adapters/source/file-source.ts'
import { MysqlSource } from '../adapters/source/mysql-source.ts'
import { PostgresSource } from '../adapters/source/postgres-source.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { Source } from '../ports/source.ts'

export interface SourceEnvironment {
  /** Folder relative file paths resolve against (the config file's folder). */
  readonly baseDir: string
  /** Where connection URLs are read from (process.env, after secrets were resolved). */
  readonly env: Readonly<Record<string, string | undefined>>
}

/** Builds the Source adapter of a table from its `source.type`. */
export function openSource(table: TableSpec, environment: SourceEnvironment): Source {
  switch (table.source.type) {
    case 'file':
      return new FileSource({
        baseDir: environment.baseDir,
        memoryLimit: memoryLimit(environment),
        // s3:// paths: the S3 endpoint override (emulators) and credentials come from the same environment.
        env: environment.env,
      })
    case 'postgres':
      return new PostgresSource({ env: environment.env, duckdbMemoryLimit: memoryLimit(environment) })
    case 'mysql':
      return new MysqlSource({ env: environment.env, duckdbMemoryLimit: memoryLimit(environment) })
  }
}

/** DuckDB's memory limit while a source is read: files, and the CSV-to-Parquet conversion of database rows. */
function memoryLimit(environment: SourceEnvironment): string {
  return environment.env[SOURCE_MEMORY_LIMIT_VARIABLE] ?? DEFAULT_SOURCE_MEMORY_LIMIT
}
