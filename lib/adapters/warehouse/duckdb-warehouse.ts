import { mkdir, open, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api'
import type { StagedColumn } from '../../core/batch.ts'
import type { DimensionColumn } from '../../core/dimension-layout.ts'
import { rejectedBatchError } from '../../core/check-failure.ts'
import { DimsyncError, WarehouseError } from '../../core/errors.ts'
import { wholeNumberType } from '../../core/staged-types.ts'
import type { CompiledStatement, TableRef } from '../../sql/dialect.ts'
import {
  describeDuckDbError,
  duckDbTrouble,
  firstLine,
  type MemoryLimitSetting,
} from '../duckdb/duckdb-errors.ts'
import { duckDbDialect } from '../../sql/duckdb/duckdb-dialect.ts'
import { duckDbDateText, isDateTextType } from '../duckdb/duckdb-date-text.ts'
import { duckDbJsonValues } from '../duckdb/duckdb-json-values.ts'
import { openDuckDbEngine } from '../duckdb/duckdb-engine.ts'
import { TEMP } from '../../sql/render-merge.ts'
import type { CheckpointRecovery } from '../../core/checkpoint-recovery.ts'
import type { Row, TransactionOptions, WarehouseTransaction } from '../../ports/warehouse.ts'
import { checkpointWithBackup, recoverInterruptedCheckpoints } from './duckdb-checkpoint-backup.ts'
import { skippingFalseGuards } from './guarded-runs.ts'
import { SessionBatchMethods, type SessionWarehouse } from './session-batch-work.ts'

export interface DuckDbWarehouseOptions {
  /** Database file, or ':memory:'. */
  readonly path: string
  readonly memoryLimit?: string
  readonly threads?: number
  /** Threads of a first load (TransactionOptions.firstLoad); default `threads`. */
  readonly firstLoadThreads?: number
  /** Open for reading only: several readers may share the file, and none while a process writes it. */
  readonly readOnly?: boolean
  /**
   * The memory limit is a default the user did not set: a transaction that runs out of it runs again at twice the
   * limit, up to `ceilingMb` (`memoryLimit` must then be given in MB).
   */
  readonly memoryGrowth?: { readonly ceilingMb: number }
  /**
   * A commit that leaves DuckDB's log this long (bytes) folds it into the file at once, with the same copy as at
   * close; default `FOLD_LOG_AT_BYTES`.
   */
  readonly foldLogAtBytes?: number
  /** Told what was done with each copy a process that died while it checkpointed the file left. */
  readonly onCheckpointRecovered?: (recovery: CheckpointRecovery, path: string) => void
}

/** The variable the CLI reads the warehouse's memory limit from. */
const MEMORY_LIMIT_VARIABLE = 'DIMSYNC_DUCKDB_MEMORY_LIMIT'
/** What the warehouse's DuckDB writes to disk: what a full disk leaves a statement (a checkpoint too) no room for. */
const WAREHOUSE_WRITES = 'the warehouse file, its log and temporary files'

/**
 * The log a session folds in before it closes: a session that merges many batches (a backlog left staged) keeps
 * neither an ever longer log to read back at the next open nor the memory of what it holds. DuckDB's own threshold
 * is 16 MiB; each fold here copies the whole file, so less often.
 */
export const FOLD_LOG_AT_BYTES = 64 * 2 ** 20

/** A DuckDB database file has this magic after its 8-byte checksum. */
const DUCKDB_MAGIC = 'DUCK'
const MAGIC_OFFSET = 8

/** The embedded warehouse: a DuckDB database file. One connection; statements run one after another. */
export class DuckDbWarehouse extends SessionBatchMethods implements SessionWarehouse {
  readonly dialect = duckDbDialect
  readonly #instance: DuckDBInstance
  readonly #openConnection: DuckDBConnection
  /** The limit each transaction starts with. */
  readonly #memoryLimit: string | undefined
  /** A default limit's start and ceiling in MB (undefined: the limit is fixed). */
  readonly #growth: { readonly startMb: number; readonly ceilingMb: number } | undefined
  /** The limit is the default, not one the user set (`memoryGrowth` given), whether or not it can grow. */
  readonly #limitIsDefault: boolean
  /** The limit now, in MB, while a transaction that ran out runs again (undefined: `#memoryLimit`). */
  #raisedMb: number | undefined
  /** Threads of a first load, when they differ from the other transactions' (set at open). */
  #firstLoadThreads: number | undefined
  /** The database's catalog name (its file's stem, `memory` in memory), read at the first describe. */
  #database: string | undefined
  /** The database file this session writes and checkpoints when it closes (undefined: in memory, or read-only). */
  #checkpointed: string | undefined
  #foldLogAtBytes = FOLD_LOG_AT_BYTES
  #closed = false
  /** DuckDB is closed: at close, or when a fold failed and the file's copy was put back. */
  #released = false
  /** Why the session cannot go on: a fold after a commit failed (its transactions are safe in the log). */
  #stopped: unknown

  private constructor(
    instance: DuckDBInstance,
    connection: DuckDBConnection,
    memoryLimit: string | undefined,
    growth: { readonly ceilingMb: number } | undefined,
  ) {
    super()
    this.#instance = instance
    this.#openConnection = connection
    this.#memoryLimit = memoryLimit
    this.#limitIsDefault = growth !== undefined
    const startMb = /^(\d+)MB$/.exec(memoryLimit ?? '')?.[1]
    if (growth !== undefined && startMb === undefined)
      throw new Error(`a memory limit that grows must start in MB, not ${memoryLimit}`)
    this.#growth =
      growth === undefined || growth.ceilingMb <= Number(startMb)
        ? undefined
        : { startMb: Number(startMb), ceilingMb: growth.ceilingMb }
  }

  static async open(options: DuckDbWarehouseOptions): Promise<DuckDbWarehouse> {
    const file = options.path !== ':memory:'
    if (file) {
      // A checkpoint a killed process left half done is undone before DuckDB reads the file.
      for (const recovery of await recoverInterruptedCheckpoints(options.path))
        options.onCheckpointRecovered?.(recovery, options.path)
      await assertDuckDbFileOrNew(options.path)
      if (!options.readOnly) await mkdir(dirname(options.path), { recursive: true })
    }
    const { instance, connection } = await openDuckDbEngine({
      path: options.path,
      ...(options.readOnly ? { readOnly: true } : {}),
      ...(file && !options.readOnly ? { checkpoints: 'by-caller' as const } : {}),
      ...(options.memoryLimit ? { memoryLimit: options.memoryLimit } : {}),
      ...(options.threads ? { threads: options.threads } : {}),
    })
    const warehouse = new DuckDbWarehouse(instance, connection, options.memoryLimit, options.memoryGrowth)
    if (options.firstLoadThreads !== undefined && options.firstLoadThreads !== options.threads)
      warehouse.#firstLoadThreads = options.firstLoadThreads
    if (file && !options.readOnly) warehouse.#checkpointed = options.path
    if (options.foldLogAtBytes !== undefined) warehouse.#foldLogAtBytes = options.foldLogAtBytes
    return warehouse
  }

  async describeTable(ref: TableRef): Promise<DimensionColumn[] | undefined> {
    // Read in the database's own catalog: a two-part name could be read as a catalog, and a temporary table of the
    // same name would come first. pragma_table_info takes 0.5 ms a call against duckdb_columns()' 1.2 (every merge
    // describes two tables), but its name argument cannot hold a double quote (it drops them): such names are read
    // from duckdb_columns(). A missing table is a catalog error, which leaves an open transaction as it was.
    this.#database ??= String((await this.query('SELECT current_database() AS name'))[0]!.name)
    const parts = [this.#database, ref.schema ?? 'main', ref.name]
    const literal = (text: string) => duckDbDialect.stringLiteral(text)
    let rows: Row[]
    if (parts.some((part) => part.includes('"'))) {
      rows = await this.query(
        `SELECT column_name AS name, data_type AS type, NOT is_nullable AS "notnull" FROM duckdb_columns() ` +
          `WHERE database_name = ${literal(parts[0]!)} AND schema_name = ${literal(parts[1]!)} ` +
          `AND table_name = ${literal(parts[2]!)} ORDER BY column_index`,
      )
      if (rows.length === 0) return undefined
    } else {
      const qualified = parts.map((part) => duckDbDialect.quoteIdentifier(part)).join('.')
      try {
        rows = await this.query(
          `SELECT name, type, "notnull" FROM pragma_table_info(${literal(qualified)}) ORDER BY cid`,
        )
      } catch (error) {
        if (error instanceof Error && MISSING_TABLE.test(error.message)) return undefined
        throw error
      }
    }
    return rows.map((r) => ({
      name: String(r.name),
      type: String(r.type),
      ...(r.notnull === true ? { notNull: true } : {}),
    }))
  }

  async createSchemaIfMissing(schema: string): Promise<void> {
    await this.#run({
      label: `create schema ${schema}`,
      sql: `CREATE SCHEMA IF NOT EXISTS ${duckDbDialect.quoteIdentifier(schema)}`,
    })
  }

  async loadStaging(partPaths: readonly string[]): Promise<StagedColumn[]> {
    const files = partPaths.map((p) => duckDbDialect.stringLiteral(p)).join(', ')
    // A view, not a copy: each statement reads only the columns it needs from the Parquet parts, and a batch
    // larger than the memory limit is not written to DuckDB's temporary storage first.
    await this.#run({
      label: 'load staged parts',
      sql: `CREATE OR REPLACE TEMP VIEW ${duckDbDialect.quoteIdentifier(TEMP.stage)} AS SELECT * FROM read_parquet([${files}])`,
    })
    const rows = await this.query(`DESCRIBE ${duckDbDialect.table({ name: TEMP.stage })}`)
    return rows.map((r) => ({ name: String(r.column_name), type: String(r.column_type) }))
  }

  /**
   * Runs `work` in one transaction; with a limit that grows, a transaction that ran out of memory runs again at
   * twice the limit (the last time at the ceiling). DuckDB's memory limit bounds what it keeps in memory, not what
   * it needs: some operators cannot spill (a window's sort of wide rows, a hash join's pinned table beside a wide
   * output), and a few rows of some shapes need more than the default (docs/limits.md).
   */
  async transaction<T>(
    work: (tx: WarehouseTransaction) => Promise<T>,
    options: TransactionOptions,
  ): Promise<T> {
    const threads = options.firstLoad ? this.#firstLoadThreads : undefined
    let result: T
    if (threads === undefined) result = await this.#transactionGrowing(work, options)
    else {
      const [row] = await this.query(`SELECT current_setting('threads') AS threads`)
      await this.#connection.run(`SET threads = ${threads}`)
      try {
        result = await this.#transactionGrowing(work, options)
      } finally {
        await this.#connection.run(`SET threads = ${Number(row!.threads)}`)
      }
    }
    // The transaction has committed: a fold that fails here does not fail it. Where no copy could be made nothing
    // changed, and the close folds the log again and reports what stops it; where the checkpoint failed, DuckDB was
    // closed and the file put back, and every later call of this session says so (#stopped).
    if (options.commit && this.#checkpointed !== undefined) {
      await this.#fold(this.#checkpointed, this.#foldLogAtBytes).catch((error: unknown) => {
        if (this.#released) this.#stopped ??= error
      })
    }
    return result
  }

  /** Folds the log into the file (duckdb-checkpoint-backup.ts); a failed checkpoint releases DuckDB first. */
  async #fold(path: string, whenLogReaches?: number): Promise<void> {
    await checkpointWithBackup(
      path,
      () => this.#checkpoint(),
      () => this.#release(),
      whenLogReaches,
    )
  }

  /** Closes DuckDB, once. */
  #release(): void {
    if (this.#released) return
    this.#released = true
    this.#openConnection.closeSync()
    this.#instance.closeSync()
  }

  /** The connection, while the session can go on. */
  get #connection(): DuckDBConnection {
    if (this.#stopped !== undefined) throw this.#stopped
    return this.#openConnection
  }

  async #transactionGrowing<T>(
    work: (tx: WarehouseTransaction) => Promise<T>,
    options: TransactionOptions,
  ): Promise<T> {
    try {
      for (;;) {
        try {
          return await this.#transactionOnce(work, options)
        } catch (error) {
          const growth = this.#growth
          const nowMb = this.#raisedMb ?? growth?.startMb ?? 0
          if (growth === undefined || nowMb >= growth.ceilingMb || !ranOutOfMemory(error)) throw error
          const toMb = Math.min(nowMb * 2, growth.ceilingMb)
          options.onMemoryRaised?.({ statement: error.label, from: `${nowMb}MB`, to: `${toMb}MB` })
          await this.#connection.run(`SET memory_limit = '${toMb}MB'`)
          this.#raisedMb = toMb
        }
      }
    } finally {
      if (this.#raisedMb !== undefined) await this.#lowerLimitAgain()
    }
  }

  /**
   * Back to the limit every transaction starts with, so that a table that needed more does not raise the process's
   * memory for the ones after it. DuckDB refuses when it cannot free enough memory; the raised limit stays then.
   */
  async #lowerLimitAgain(): Promise<void> {
    try {
      await this.#connection.run(`SET memory_limit = ${duckDbDialect.stringLiteral(this.#memoryLimit!)}`)
      this.#raisedMb = undefined
    } catch {
      // Kept raised; the next transaction starts from it.
    }
  }

  async #transactionOnce<T>(
    work: (tx: WarehouseTransaction) => Promise<T>,
    options: TransactionOptions,
  ): Promise<T> {
    await this.#connection.run('BEGIN TRANSACTION')
    try {
      const result = await work(
        skippingFalseGuards(
          (s) => this.#run(s),
          (sql) => this.query(sql),
          (s, cause) => translateError(s, cause, this.#limitSetting()),
        ),
      )
      // A COMMIT writes the transaction's rows and can run out of memory too: translated like any statement.
      if (options.commit) await this.#run({ label: 'commit', sql: 'COMMIT' })
      else await this.#connection.run('ROLLBACK')
      return result
    } catch (error) {
      // DuckDB refuses every statement after a failed one until ROLLBACK (after a failed COMMIT there is no
      // transaction left to roll back).
      await this.#connection.run('ROLLBACK').catch(() => undefined)
      throw error
    }
  }

  async query(sql: string): Promise<Row[]> {
    const reader = await this.#connection.runAndReadAll(sql)
    const rows = reader.convertRowObjects(duckDbJsonValues) as Row[]
    // JSON renders every BIGINT as a string; keep numbers where they are exact.
    // columnTypes() builds every column's type on each call: read once (a 1,300-column read took seconds).
    const types = reader.columnTypes().map((t) => t.toString())
    const integers = reader.columnNames().filter((_, i) => (wholeNumberType(types[i]!)?.bits ?? 0) >= 64)
    const dates = reader.columnNames().filter((_, i) => isDateTextType(types[i]!))
    for (const row of rows) {
      for (const name of integers) {
        const value = row[name]
        if (typeof value === 'string' && Number.isSafeInteger(Number(value))) row[name] = Number(value)
      }
      for (const name of dates) {
        const value = row[name]
        if (typeof value === 'string') row[name] = duckDbDateText(value)
      }
    }
    return rows
  }

  /** The database file's lock makes this process its only writer (duckdb-file-lock.ts). */
  async whileWriting<T>(_objects: readonly TableRef[], work: () => Promise<T>): Promise<T> {
    return await work()
  }

  /** Closes the session; a writing one first folds its commits into the file (duckdb-checkpoint-backup.ts). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    try {
      if (this.#stopped !== undefined) throw this.#stopped
      if (this.#checkpointed !== undefined) await this.#fold(this.#checkpointed)
    } finally {
      this.#release()
    }
  }

  async #checkpoint(): Promise<void> {
    await this.#run({ label: 'checkpoint', sql: 'CHECKPOINT' })
  }

  /** The limit in force, as an error message describes it. */
  #limitSetting(): MemoryLimitSetting {
    const variable = MEMORY_LIMIT_VARIABLE
    if (this.#growth === undefined && this.#limitIsDefault)
      return {
        limit: `not set: the default ${this.#memoryLimit}, not raised: this machine's memory leaves no room`,
        variable,
        raise: `set ${variable} higher than ${this.#memoryLimit}`,
      }
    if (this.#growth === undefined) return { limit: this.#memoryLimit ?? 'DuckDB default', variable }
    if (this.#raisedMb === undefined) return { limit: `not set: the default ${this.#memoryLimit}`, variable }
    return {
      limit: `not set: the default ${this.#memoryLimit}, raised up to ${this.#raisedMb}MB`,
      variable,
      raise: `set ${variable} higher than ${this.#raisedMb}MB`,
    }
  }

  async #run(statement: CompiledStatement): Promise<void> {
    try {
      await this.#connection.run(statement.sql)
    } catch (cause) {
      throw translateError(statement, cause, this.#limitSetting())
    }
  }
}

/** DuckDB's error for a table (or its schema) that does not exist. */
const MISSING_TABLE = /^Catalog Error: Table with name .* does not exist/

/**
 * Given a CSV or Parquet file, DuckDB opens an in-memory database over it: a run would report versions inserted
 * and keep none. Only a DuckDB database file or a path that does not exist yet is a warehouse.
 */
export async function assertDuckDbFileOrNew(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined)
  if (info === undefined) return
  const refuse = (what: string) =>
    new DimsyncError(
      `warehouse.path ${path} ${what}; point warehouse.path at a DuckDB database file, or at a path that does not exist yet`,
    )
  if (info.isDirectory()) throw refuse('is a folder, not a DuckDB database file')
  const file = await open(path, 'r')
  const head = Buffer.alloc(16)
  try {
    await file.read(head, 0, head.length, 0)
  } finally {
    await file.close()
  }
  if (head.toString('latin1', MAGIC_OFFSET, MAGIC_OFFSET + DUCKDB_MAGIC.length) === DUCKDB_MAGIC) return
  if (info.size === 0) throw refuse('is not a DuckDB database (it is empty)')
  const start = head
    .subarray(0, Math.min(info.size, 16))
    .toString('latin1')
    .replace(/[^\x20-\x7e]/g, '.')
  throw refuse(`is not a DuckDB database (it starts with "${start}")`)
}

/** A statement's error (translateError) that is DuckDB running out of memory, not out of disk. */
function ranOutOfMemory(error: unknown): error is WarehouseError {
  return (
    error instanceof WarehouseError &&
    duckDbTrouble((error.cause as Error | undefined)?.cause) === 'out-of-memory'
  )
}

function translateError(statement: CompiledStatement, cause: unknown, memory: MemoryLimitSetting): Error {
  const rejected = rejectedBatchError(cause instanceof Error ? cause.message : String(cause))
  if (rejected !== undefined) return rejected
  // DuckDB's messages go on for lines (the statement with a caret, tuning advice): one line says what happened,
  // and the original stays the cause of the cause.
  const line = describeDuckDbError(cause, `statement "${statement.label}"`, memory, WAREHOUSE_WRITES)
  const reason = duckDbTrouble(cause) === 'other' ? firstLine(cause) : line
  return new WarehouseError(statement.label, statement.sql, { cause: new Error(reason, { cause }) })
}
