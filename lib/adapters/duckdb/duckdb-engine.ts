import { createRequire } from 'node:module'

import type * as DuckDbApi from '@duckdb/node-api'
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api'

/**
 * How a DuckDB engine is opened. Every place that opens DuckDB (the embedded warehouse, the file source, the
 * database extract's CSV-to-Parquet converter, the Parquet readers, BigQuery's load groups) goes through
 * `openDuckDbEngine`, so each gets the same session settings and states only what is its own.
 */
export interface DuckDbEngineOptions {
  /** The database file; default an in-memory database. */
  readonly path?: string
  readonly readOnly?: boolean
  /** Worker threads; default DuckDB's (one per core). */
  readonly threads?: number
  /** DuckDB's memory limit (`256MB`, `1GB`); default DuckDB's (80% of the machine). */
  readonly memoryLimit?: string
  /** Where DuckDB spills what does not fit its memory limit; default DuckDB's (next to the database file). */
  readonly spillDirectory?: string
  /**
   * Results in any order: DuckDB then streams a COPY with bounded memory instead of buffering to keep the input's
   * order. For work whose order does not matter (snapshots, Parquet rewrites).
   */
  readonly anyOrder?: boolean
  /**
   * `'by-caller'`: DuckDB never checkpoints on its own, neither when a commit makes its log long nor when the
   * database closes; the caller runs CHECKPOINT (the warehouse does, guarded: duckdb-checkpoint-backup.ts). Default
   * DuckDB's own.
   */
  readonly checkpoints?: 'by-caller'
}

/** DuckDB's log size that triggers a checkpoint at commit, where the caller checkpoints: never reached. */
const NEVER = '1000TB'

export interface DuckDbEngine {
  readonly instance: DuckDBInstance
  readonly connection: DuckDBConnection
  /** Closes the connection, then the database; idempotent. */
  close(): void
}

/**
 * Opens DuckDB and its one connection. DuckDB's module is loaded on first use, so a process that never opens it
 * (`dimsync --version`, a Lambda that only extracts from PostgreSQL) does not pay for it. Every session reads and
 * writes times in UTC: Parquet written by dimsync marks timestamps as UTC and zone-less text is UTC, whatever the
 * machine's zone.
 */
export async function openDuckDbEngine(options: DuckDbEngineOptions = {}): Promise<DuckDbEngine> {
  // require(), not import(): Node's import of a CommonJS package first reads every file it re-exports for the
  // names they export (for DuckDB's API, tens of milliseconds of each process that opens DuckDB).
  const { DuckDBInstance } = createRequire(import.meta.url)('@duckdb/node-api') as typeof DuckDbApi
  const settings: Record<string, string> = {}
  if (options.readOnly) settings.access_mode = 'READ_ONLY'
  if (options.threads !== undefined) settings.threads = String(options.threads)
  if (options.memoryLimit !== undefined) settings.memory_limit = options.memoryLimit
  if (options.spillDirectory !== undefined) settings.temp_directory = options.spillDirectory
  if (options.anyOrder) settings.preserve_insertion_order = 'false'
  if (options.checkpoints === 'by-caller') settings.checkpoint_threshold = NEVER
  const instance = await DuckDBInstance.create(options.path ?? ':memory:', settings)
  let connection: DuckDBConnection | undefined
  try {
    connection = await instance.connect()
    await connection.run(`SET TimeZone = 'UTC'`)
    if (options.checkpoints === 'by-caller') await connection.run('PRAGMA disable_checkpoint_on_shutdown')
  } catch (error) {
    connection?.closeSync()
    instance.closeSync()
    throw error
  }
  const opened = connection
  let closed = false
  return {
    instance,
    connection: opened,
    close() {
      if (closed) return
      closed = true
      opened.closeSync()
      instance.closeSync()
    },
  }
}

/** Runs `action` on a fresh engine and closes it after, whatever happens. */
export async function withDuckDbEngine<T>(
  options: DuckDbEngineOptions,
  action: (connection: DuckDBConnection) => Promise<T>,
): Promise<T> {
  const engine = await openDuckDbEngine(options)
  try {
    return await action(engine.connection)
  } finally {
    engine.close()
  }
}
