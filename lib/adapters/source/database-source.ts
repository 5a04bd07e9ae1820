import type { StagedColumn } from '../../core/batch.ts'
import { SourceError } from '../../core/errors.ts'
import type { TableSpec } from '../../core/table-spec.ts'
import type { ExtractRequest, ExtractResult, Source } from '../../ports/source.ts'
import { readEndpoint, type DbEndpoint } from './db-connection.ts'
import {
  describeDatabaseTable,
  extractDatabaseTable,
  type DbDriver,
  type DbExtractOptions,
} from './db-extract.ts'

export interface DatabaseSourceOptions extends DbExtractOptions {
  /** Where the connection URL is read from (`env[source.url_env]`). */
  readonly env: Readonly<Record<string, string | undefined>>
}

/**
 * The Source port over one kind of database server: a subclass supplies the driver (connections, snapshots,
 * types), db-extract.ts does the rest (snapshot, completeness check, chunks, Parquet parts).
 */
export abstract class DatabaseSource<O extends DatabaseSourceOptions> implements Source {
  readonly #kind: 'postgres' | 'mysql'
  readonly #options: O

  protected constructor(kind: 'postgres' | 'mysql', options: O) {
    this.#kind = kind
    this.#options = options
  }

  protected abstract createDriver(table: TableSpec, server: DbEndpoint, options: O): DbDriver

  /** The staged columns of `table` (names and DuckDB types) from a `LIMIT 0` query; checks the configured columns. */
  async describe(table: TableSpec): Promise<readonly StagedColumn[]> {
    return await describeDatabaseTable(this.#driver(table), table)
  }

  /**
   * Extracts `request.table` into `request.writer` as Parquet parts; see the subclass comment for the guarantees.
   * Every failure is a `SourceError` naming the table and the server (never the password); connection losses,
   * timeouts and incomplete reads are `retryable`. The manifest is left to the caller.
   */
  async extract(request: ExtractRequest): Promise<ExtractResult> {
    return await extractDatabaseTable(this.#driver(request.table), request, this.#options)
  }

  /** Nothing to free: connections live for one extract. */
  async close(): Promise<void> {}

  #driver(table: TableSpec): DbDriver {
    if (table.source.type !== this.#kind) {
      throw new SourceError(
        table.name,
        `table ${table.name}: the ${this.#kind} source cannot read a ${table.source.type} source`,
      )
    }
    return this.createDriver(table, readEndpoint(table, this.#options.env), this.#options)
  }
}
