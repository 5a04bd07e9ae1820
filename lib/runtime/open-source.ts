import {
  DEFAULT_SOURCE_MEMORY_LIMIT,
  SOURCE_MEMORY_LIMIT_VARIABLE,
} from '../adapters/duckdb/duckdb-errors.ts'
import type { S3Client } from '@aws-sdk/client-s3'
import { readMemorySize } from '../config/env.ts'
import type { StagedParquetVersion } from '../core/staged-parquet.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { ExtractRequest, ExtractResult, Source } from '../ports/source.ts'
import type { StagedColumn } from '../core/batch.ts'
import type { SourceTypes } from '../core/source-types.ts'

export interface SourceEnvironment {
  /** Folder relative file paths resolve against (the config file's folder). */
  readonly baseDir: string
  /** Where connection URLs are read from (process.env, after secrets were resolved). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** Parquet version of the staged parts: who reads them decides (default V1, which every reader decodes). */
  readonly parquetVersion?: StagedParquetVersion
  /** The S3 client of file sources on S3 (the functions pass their traced one); default: one per source. */
  readonly s3Client?: S3Client
}

/**
 * Builds the Source adapter of a table from its `source.type`. The adapter's module (and its client library:
 * pg, mysql2) is loaded on the source's first use, so a run loads only the clients its tables read with: each
 * client library costs the process 10-20 MB of memory for as long as it runs.
 */
export function openSource(table: TableSpec, environment: SourceEnvironment): Source {
  const limit = sourceMemoryLimit(environment.env)
  const { parquetVersion } = environment
  switch (table.source.type) {
    case 'file':
      return new LazySource(async () => {
        const { FileSource } = await import('../adapters/source/file-source.ts')
        return new FileSource({
          baseDir: environment.baseDir,
          memoryLimit: limit,
          // One DuckDB thread: a second one's read buffers and row groups raised the peak of a 1M-row CSV read
          // by 25-130 MB, to save about 0.2 s (bench/results/log.md).
          threads: 1,
          // s3:// paths: the S3 endpoint override (emulators) and credentials come from the same environment.
          env: environment.env,
          parquetVersion,
          ...(environment.s3Client !== undefined ? { s3Client: environment.s3Client } : {}),
        })
      })
    case 'postgres':
      return new LazySource(async () => {
        const { PostgresSource } = await import('../adapters/source/postgres-source.ts')
        return new PostgresSource({ env: environment.env, duckdbMemoryLimit: limit, parquetVersion })
      })
    case 'mysql':
      return new LazySource(async () => {
        const { MysqlSource } = await import('../adapters/source/mysql-source.ts')
        return new MysqlSource({ env: environment.env, duckdbMemoryLimit: limit, parquetVersion })
      })
  }
}

/** A Source whose adapter is built (its module imported) when one of its methods is first called. */
class LazySource implements Source {
  readonly #load: () => Promise<Source>
  #loaded: Promise<Source> | undefined

  constructor(load: () => Promise<Source>) {
    this.#load = load
  }

  async describe(table: TableSpec, sourceTypes?: SourceTypes): Promise<readonly StagedColumn[]> {
    return await (await this.#source()).describe(table, sourceTypes)
  }

  async extract(request: ExtractRequest): Promise<ExtractResult> {
    return await (await this.#source()).extract(request)
  }

  /** Closes the adapter if one was built; a source never used has nothing to close. */
  async close(): Promise<void> {
    await (await this.#loaded)?.close()
  }

  #source(): Promise<Source> {
    this.#loaded ??= this.#load()
    return this.#loaded
  }
}

/** DuckDB's memory limit while a source is read: files, and the CSV-to-Parquet conversion of database rows. */
export function sourceMemoryLimit(env: SourceEnvironment['env']): string {
  return readMemorySize(env, SOURCE_MEMORY_LIMIT_VARIABLE, DEFAULT_SOURCE_MEMORY_LIMIT)
}
