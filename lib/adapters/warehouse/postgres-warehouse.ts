import { createReadStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import type { Socket } from 'node:net'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { StagedColumn } from '../../core/batch.ts'
import { rejectedBatchError } from '../../core/check-failure.ts'
import type { DimensionColumn } from '../../core/dimension-layout.ts'
import { BatchRejectedError, DimsyncError, WarehouseError } from '../../core/errors.ts'
import { typeFamily } from '../../core/staged-types.ts'
import type { Row, StagedBatchName, TransactionOptions, WarehouseTransaction } from '../../ports/warehouse.ts'
import { skippingFalseGuards } from './guarded-runs.ts'
import { SessionBatchMethods, type SessionWarehouse } from './session-batch-work.ts'
import type { CompiledStatement, TableRef } from '../../sql/dialect.ts'
import { duckDbDialect } from '../../sql/duckdb/duckdb-dialect.ts'
import { TEMP } from '../../sql/merge-sql.ts'
import { POSTGRES_SESSION_SETUP, postgresDialect } from '../../sql/postgres/postgres-dialect.ts'
import { listElementType, stagedTypeOfPostgres } from '../../sql/postgres/postgres-types.ts'
import { openDuckDbEngine } from '../duckdb/duckdb-engine.ts'
import { lockObjects } from './postgres-object-lock.ts'

/**
 * PostgreSQL's text holds no NUL character (U+0000), which DuckDB's and the sources' can: a COPY refused for one
 * (SQLSTATE 22021, `0x00`) becomes the refusal of the batch naming the column and a value holding it. Undefined for
 * any other failure.
 */
async function nulCharacterRefusal(
  cause: unknown,
  { table, batchId }: StagedBatchName,
  partPaths: readonly string[],
  columns: readonly StagedColumn[],
): Promise<BatchRejectedError | undefined> {
  const failure = cause as { code?: unknown; message?: unknown }
  if (failure.code !== '22021' || !String(failure.message).includes('0x00')) return undefined
  const engine = await openDuckDbEngine({ anyOrder: true })
  try {
    const parts = `read_parquet([${partPaths.map((p) => duckDbDialect.stringLiteral(p)).join(', ')}])`
    for (const column of columns) {
      const text = `CAST(${duckDbDialect.quoteIdentifier(column.name)} AS VARCHAR)`
      const reader = await engine.connection.runAndReadAll(
        `SELECT ${text} AS v FROM ${parts} WHERE contains(${text}, chr(0)) LIMIT 1`,
      )
      const [row] = reader.getRowObjectsJson()
      if (row === undefined) continue
      const example = JSON.stringify(String(row.v).slice(0, 60))
      return new BatchRejectedError(
        table,
        batchId,
        `table ${table}: column "${column.name}" holds a text with a NUL character (U+0000), which PostgreSQL ` +
          `cannot store, for example ${example}; nothing was written. Remove it in the source (or a query ` +
          `source's SELECT: replace(${column.name}, chr(0), ''))`,
      )
    }
    return undefined
  } finally {
    engine.close()
  }
}

/** The connection URL of a postgres warehouse, from the environment variable the config names (`url_env`). */
export function postgresUrlFromEnvironment(variable: string, env: NodeJS.ProcessEnv = process.env): string {
  const url = env[variable]
  if (url === undefined || url === '')
    throw new DimsyncError(
      `warehouse.url_env names the environment variable ${variable}, which is not set: set it to the warehouse's ` +
        `connection URL (postgres://user:password@host:5432/database); credentials never go in dimsync.yaml`,
    )
  return url
}

/**
 * Values whose text `pg` would turn into something else: kept as the server's text, like DuckDB's rows (times with
 * their microseconds, decimals exact, JSON as its text). int8 arrives as text too and becomes a number when exact.
 */
const TEXT_TYPES = new Set([
  1082, // date
  1083, // time
  1114, // timestamp
  1184, // timestamptz
  1700, // numeric
  114, // json
  3802, // jsonb
  17, // bytea, as \x hex text
])
const INT8 = 20

function typeParser(oid: number, format?: string): (text: string) => unknown {
  if (TEXT_TYPES.has(oid)) return (text) => text
  if (oid === INT8) return (text) => (Number.isSafeInteger(Number(text)) ? Number(text) : text)
  return pg.types.getTypeParser(oid, format as 'text')
}

/**
 * A warehouse in PostgreSQL: one connection (its session holds the batch's temporary tables and dimsync's helper
 * functions); every merge is one transaction, DDL included (PostgreSQL's DDL is transactional).
 */
export interface PostgresWarehouseOptions {
  readonly url: string
  /**
   * How long a write waits for another dimsync writing the same table, and the setting users change it with (named
   * when the wait runs out). Default: 60 s, the CLI's default.
   */
  readonly writeWait?: WriteWait
}

interface WriteWait {
  readonly ms: number
  readonly setting: string
}

const DEFAULT_WRITE_WAIT: WriteWait = { ms: 60_000, setting: 'DIMSYNC_WAREHOUSE_WAIT_SECONDS' }

export class PostgresWarehouse extends SessionBatchMethods implements SessionWarehouse {
  readonly dialect = postgresDialect
  readonly #client: pg.Client
  readonly #writeWait: WriteWait

  private constructor(client: pg.Client, writeWait: WriteWait) {
    super()
    this.#client = client
    this.#writeWait = writeWait
  }

  static async open(options: PostgresWarehouseOptions): Promise<PostgresWarehouse> {
    const client = new pg.Client({
      connectionString: options.url,
      types: { getTypeParser: typeParser as never },
      // Names this process to another dimsync waiting for a table it writes (postgres-object-lock.ts).
      application_name: `dimsync pid ${process.pid} on ${hostname()}`.slice(0, 63),
    })
    try {
      await client.connect()
      for (const statement of POSTGRES_SESSION_SETUP) await client.query(statement)
      await assertUtf8(client)
    } catch (cause) {
      await client.end().catch(() => undefined)
      if (cause instanceof DimsyncError) throw cause
      throw new DimsyncError(`cannot open the postgres warehouse: ${(cause as Error).message}`, {
        cause,
        retryable: isTransient(cause),
      })
    }
    return new PostgresWarehouse(client, options.writeWait ?? DEFAULT_WRITE_WAIT)
  }

  async describeTable(ref: TableRef): Promise<DimensionColumn[] | undefined> {
    const d = postgresDialect
    // format_type keeps what information_schema drops: a numeric array's precision and scale.
    const rows = await this.query(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null ` +
        `FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace ` +
        `WHERE n.nspname = ${ref.schema === undefined ? 'current_schema()' : d.stringLiteral(ref.schema)} ` +
        `AND c.relname = ${d.stringLiteral(ref.name)} AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    )
    if (rows.length === 0) return undefined
    return rows.map((r) => ({
      name: String(r.name),
      // A type dimsync never creates keeps PostgreSQL's name: the merge then refuses it, naming the column.
      type: stagedTypeOfPostgres(String(r.type)) ?? String(r.type).toUpperCase(),
      ...(r.not_null === true ? { notNull: true } : {}),
    }))
  }

  async createSchemaIfMissing(schema: string): Promise<void> {
    const sql = `CREATE SCHEMA IF NOT EXISTS ${postgresDialect.quoteIdentifier(schema)}`
    const exists = async () =>
      (
        await this.query(
          `SELECT 1 AS found FROM pg_namespace WHERE nspname = ${postgresDialect.stringLiteral(schema)}`,
        )
      ).length > 0
    if (await exists()) return
    try {
      await this.#client.query(sql)
    } catch (cause) {
      // Another installation created it at the same moment: PostgreSQL's IF NOT EXISTS does not cover a creation
      // not yet committed when it looked, and the second CREATE fails on pg_namespace's unique index.
      if (await exists()) return
      throw new DimsyncError(
        `the postgres warehouse has no schema ${schema} and this user may not create it (${(cause as Error).message}); ` +
          `create it once with: ${sql}`,
        { cause },
      )
    }
  }

  /**
   * The staged Parquet parts, read by the embedded DuckDB as CSV text PostgreSQL reads back to the same values,
   * copied into the session's temporary table (`COPY … FROM STDIN`). Each value is written in the form
   * PostgreSQL's input takes for its type: doubles in `%.17g` (exact), blobs as `\x` hex, dates before year 1
   * with ` BC`; an empty text is quoted, a NULL is not. A double's text also goes to a text column beside it
   * (PostgresDialect.stagedFloatTextColumn), which the merge's row hash reads.
   */
  async loadStaging(partPaths: readonly string[], batch: StagedBatchName): Promise<StagedColumn[]> {
    const { table, batchId } = batch
    const folder = await mkdtemp(join(tmpdir(), 'dimsync-pg-stage-'))
    const csv = join(folder, 'stage.csv')
    const engine = await openDuckDbEngine({ anyOrder: true })
    const d = postgresDialect
    let columns: StagedColumn[]
    let definitions: string[]
    try {
      const files = partPaths.map((p) => duckDbDialect.stringLiteral(p)).join(', ')
      const parts = `read_parquet([${files}])`
      const described = await engine.connection.runAndReadAll(`DESCRIBE SELECT * FROM ${parts}`)
      columns = (described.getRowObjectsJson() as Row[]).map((r) => ({
        name: String(r.column_name),
        type: String(r.column_type),
      }))
      // A type PostgreSQL cannot store is refused before any row is read.
      definitions = columns.map((c) => {
        try {
          return `${d.quoteIdentifier(c.name)} ${d.columnType(c.type, { table, column: c.name })}`
        } catch (error) {
          throw new BatchRejectedError(table, batchId, `${(error as Error).message}; nothing was written`)
        }
      })
      // Each float's `%.17g` text (the row hash's) goes beside it too: PostgreSQL's own is a PL/pgSQL function.
      const floatTexts = columns.flatMap((c) => {
        const name = typeFamily(c.type).kind === 'float' ? d.stagedFloatTextColumn(c.name) : undefined
        return name === undefined ? [] : [{ column: c, name }]
      })
      definitions.push(...floatTexts.map((f) => `${d.quoteIdentifier(f.name)} TEXT`))
      const select = [
        ...columns.map((c) => `${csvText(c)} AS ${duckDbDialect.quoteIdentifier(c.name)}`),
        ...floatTexts.map(
          (f) =>
            `${duckDbDialect.canonicalText(duckDbDialect.quoteIdentifier(f.column.name), f.column.type)} AS ${duckDbDialect.quoteIdentifier(f.name)}`,
        ),
      ].join(', ')
      await engine.connection.run(
        `COPY (SELECT ${select} FROM ${parts}) TO ${duckDbDialect.stringLiteral(csv)} (FORMAT csv, HEADER false, FORCE_QUOTE *)`,
      )
    } finally {
      engine.close()
    }
    try {
      const stage = d.quoteIdentifier(TEMP.stage)
      await this.#run({
        label: 'create staging table',
        sql: `DROP TABLE IF EXISTS pg_temp.${stage};\nCREATE TEMP TABLE ${stage} (${definitions.join(', ')})`,
      })
      if (columns.length > 0) {
        const copy = new CopyIn(
          `COPY ${stage} FROM STDIN (FORMAT csv)`,
          createReadStream(csv, { highWaterMark: 1 << 20 }),
        )
        await this.#client.query(copy as never)
        await copy.done.catch(async (cause: unknown) => {
          throw (
            (await nulCharacterRefusal(cause, batch, partPaths, columns)) ??
            this.#translate({ label: 'load staged parts', sql: copy.text }, cause)
          )
        })
      }
      await this.#run({ label: 'analyze staging table', sql: `ANALYZE ${stage}` })
      return columns
    } finally {
      await rm(folder, { recursive: true, force: true })
    }
  }

  /**
   * A creation `IF NOT EXISTS` that fails because another session created the object at the same moment runs once
   * more, and finds it: PostgreSQL's IF NOT EXISTS does not see a creation not yet committed, and the second one
   * fails on a catalog's unique index (the batch ledger, one per schema, created by the first merge of any table).
   */
  override async runAlone(
    statement: CompiledStatement,
    options?: Pick<TransactionOptions, 'onMemoryRaised'>,
  ): Promise<void> {
    try {
      await super.runAlone(statement, options)
    } catch (error) {
      if (!(IF_NOT_EXISTS.test(statement.sql) && isConcurrentCreation(error))) throw error
      await super.runAlone(statement, options)
    }
  }

  async transaction<T>(
    work: (tx: WarehouseTransaction) => Promise<T>,
    options: TransactionOptions,
  ): Promise<T> {
    await this.#client.query('BEGIN')
    try {
      const result = await work(
        skippingFalseGuards(
          (s) => this.#run(s),
          (sql) => this.query(sql),
          (s, cause) => this.#translate(s, cause),
        ),
      )
      if (options.commit) await this.#run({ label: 'commit', sql: 'COMMIT' })
      else await this.#client.query('ROLLBACK')
      return result
    } catch (error) {
      // PostgreSQL refuses every statement after a failed one until ROLLBACK.
      await this.#client.query('ROLLBACK').catch(() => undefined)
      throw error
    }
  }

  async query(sql: string): Promise<Row[]> {
    const result = await this.#client.query(sql)
    // A text of several statements answers with the last one's rows.
    const last = Array.isArray(result) ? (result.at(-1) as pg.QueryResult | undefined) : result
    return (last?.rows ?? []) as Row[]
  }

  /** Holds the objects' advisory locks on this session while `work` runs (postgres-object-lock.ts). */
  async whileWriting<T>(objects: readonly TableRef[], work: () => Promise<T>): Promise<T> {
    const release = await lockObjects(this.#client, objects, {
      waitMs: this.#writeWait.ms,
      waitSetting: this.#writeWait.setting,
    })
    let result: T
    try {
      result = await work()
    } catch (error) {
      // The work's own error is the one to report: a session that broke mid-work releases its locks as it ends.
      await release().catch(() => undefined)
      throw error
    }
    await release()
    return result
  }

  async close(): Promise<void> {
    await this.#client.end()
  }

  async #run(statement: CompiledStatement): Promise<void> {
    try {
      await this.#client.query(statement.sql)
    } catch (cause) {
      throw this.#translate(statement, cause)
    }
  }

  #translate(statement: CompiledStatement, cause: unknown): Error {
    const message = cause instanceof Error ? cause.message : String(cause)
    return (
      rejectedBatchError(message) ??
      new WarehouseError(statement.label, statement.sql, {
        cause,
        // A lost connection or a serialization failure may pass on a retry; a refused statement will not.
        retryable: isTransient(cause),
      })
    )
  }
}

/**
 * The row hash counts characters and hashes UTF-8 bytes: in a database of another encoding the same row would hash
 * differently than on DuckDB and BigQuery (and text outside the encoding could not be stored).
 */
async function assertUtf8(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ server_encoding: string }>('SHOW server_encoding')
  const encoding = rows[0]?.server_encoding
  if (encoding !== 'UTF8')
    throw new DimsyncError(
      `the postgres warehouse's database has encoding ${encoding}; dimsync needs a UTF8 database ` +
        `(CREATE DATABASE … ENCODING 'UTF8'): its row hashes count and hash UTF-8 text`,
    )
}

/** Socket errors worth a retry (the server restarting, a network blip). */
const TRANSIENT_SOCKET_ERRORS: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
])

const IF_NOT_EXISTS = /^\s*CREATE\s+[A-Z ]*?\bIF\s+NOT\s+EXISTS\b/i

/** unique_violation (on a catalog's index), duplicate_table, duplicate_object. */
const CONCURRENT_CREATION_CODES = new Set(['23505', '42P07', '42710'])

function isConcurrentCreation(error: unknown): boolean {
  const cause = error instanceof WarehouseError ? error.cause : error
  return CONCURRENT_CREATION_CODES.has(String((cause as { code?: unknown } | undefined)?.code))
}

/** A lost connection, or a SQLSTATE worth a retry: connection exceptions, transaction rollbacks, a shutdown. */
function isTransient(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | undefined)?.code
  if (typeof code === 'string' && TRANSIENT_SOCKET_ERRORS.has(code)) return true
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
    return code.startsWith('08') || code.startsWith('40') || code === '57P01'
  return cause instanceof Error && /Connection terminated/.test(cause.message)
}

/** A staged column's value as text PostgreSQL's input of its type reads back to the same value (NULL stays NULL). */
function csvText(column: StagedColumn): string {
  const c = duckDbDialect.quoteIdentifier(column.name)
  switch (typeFamily(column.type).kind) {
    case 'float':
      return `printf('%.17g', CAST(${c} AS DOUBLE))`
    case 'bytes':
      return `'\\x' || lower(hex(${c}))`
    case 'date':
      return `replace(CAST(${c} AS VARCHAR), ' (BC)', ' BC')`
    default:
      return listElementType(column.type) === undefined ? `CAST(${c} AS VARCHAR)` : arrayLiteral(c)
  }
}

/**
 * A list as PostgreSQL's array input reads it: `{"a","b, c",NULL}`, each element double-quoted with `"` and `\`
 * escaped by a backslash (the element types a postgres dimension stores print as their input text).
 */
function arrayLiteral(c: string): string {
  const element = `CASE WHEN e IS NULL THEN 'NULL' ELSE '"' || replace(replace(CAST(e AS VARCHAR), '\\', '\\\\'), '"', '\\"') || '"' END`
  return `'{' || array_to_string(list_transform(${c}, e -> ${element}), ',') || '}'`
}

/**
 * `COPY … FROM STDIN` through the `pg` client's own connection (a `pg` submittable, as pg-copy-streams does, which
 * is only a devDependency): the bytes of `source` go to the server as CopyData messages, waiting for the socket to
 * drain, then CopyDone; a failing source sends CopyFail, so the server discards what it received.
 */
/** What `pg` hands a submittable query. */
interface PgConnection {
  readonly stream: Socket
  query(text: string): void
  sendCopyFromChunk(chunk: Buffer): void
  endCopyFrom(): void
  sendCopyFail(message: string): void
}

export class CopyIn {
  readonly text: string
  /** Resolves with the row count the server reported once the connection is ready again. */
  readonly done: Promise<number>
  readonly #source: AsyncIterable<Buffer>
  #rowCount: number | undefined
  #error: unknown
  #resolve!: (rows: number) => void
  #reject!: (error: unknown) => void

  constructor(text: string, source: AsyncIterable<Buffer>) {
    this.text = text
    this.#source = source
    this.done = new Promise<number>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
  }

  submit(connection: PgConnection): void {
    connection.query(this.text)
  }

  handleCopyInResponse(connection: PgConnection): void {
    void this.#send(connection)
  }

  async #send(connection: PgConnection): Promise<void> {
    try {
      for await (const chunk of this.#source) {
        connection.sendCopyFromChunk(chunk)
        if (connection.stream.writableNeedDrain)
          await new Promise<void>((resolve) => connection.stream.once('drain', resolve))
      }
      connection.endCopyFrom()
    } catch (error) {
      this.#error = error
      connection.sendCopyFail(error instanceof Error ? error.message : String(error))
    }
  }

  handleCommandComplete(message: { text?: string }): void {
    const match = /^COPY (\d+)/.exec(message.text ?? '')
    if (match) this.#rowCount = Number(match[1])
  }

  /** The server refused the data, or the connection was lost (then no ReadyForQuery follows). */
  handleError(error: unknown): void {
    this.#reject(this.#error ?? error)
  }

  handleReadyForQuery(): void {
    if (this.#error !== undefined) this.#reject(this.#error)
    else if (this.#rowCount === undefined) this.#reject(new Error('COPY ended without a row count'))
    else this.#resolve(this.#rowCount)
  }
}
