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
        memoryLimit: environment.env.DIMSYNC_SOURCE_MEMORY_LIMIT ?? '128MB',
      })
    case 'postgres':
      return new PostgresSource({ env: environment.env })
    case 'mysql':
      return new MysqlSource({ env: environment.env })
  }
}
