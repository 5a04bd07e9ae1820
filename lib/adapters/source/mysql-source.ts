import mysql from 'mysql2'
import type { Connection, FieldPacket } from 'mysql2'

import { SourceError } from '../../core/errors.ts'
import type { DatabaseSourceSpec, TableSpec } from '../../core/table-spec.ts'
import { DatabaseSource, type DatabaseSourceOptions } from './database-source.ts'
import type { CsvSpool } from './db-csv-parts.ts'
import {
  errorCode,
  errorMessage,
  isConnectionLost,
  networkProblem,
  redact,
  type DbEndpoint,
} from './db-connection.ts'
import { sourceName, type DbDriver, type DbSession, type DbSnapshot } from './db-extract.ts'
import { relationSql, type SqlValue } from './db-sql.ts'
import { mysqlColumn, type DbColumn } from './db-types.ts'
import { CSV_ROW, installMysqlCsvRows, isHookable, type MysqlCsvRows } from './mysql-csv-rows.ts'
import { mysqlSocketFactory } from './mysql-read-socket.ts'
import { RowCsvEncoder } from './row-csv-encoder.ts'

export interface MysqlSourceOptions extends DatabaseSourceOptions {
  /** Time allowed to open a connection (default 15 s). */
  readonly connectTimeoutMs?: number
}

/** MariaDB and MySQL name the statement time limit differently (seconds vs milliseconds, SELECT only on MySQL). */
const TIMEOUT_CODES = new Set([1969, 3024])
const CONNECTION_KILLED_CODES = new Set([1927, 1317, 2013, 2006])

/**
 * Source kind `mysql` (MySQL 8 and MariaDB 10.5+): a table (`database.table`, or a table of the URL's database)
 * or a SELECT query.
 *
 * - Every extract reads ONE snapshot: `START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY` at REPEATABLE READ.
 *   With `chunks: N` (table sources only) the N connections open their snapshots while one more connection holds
 *   `LOCK TABLES <table> READ` (a few milliseconds), so no write to the table can fall between them: the N
 *   snapshots see the same table. MySQL has no way to share one snapshot across connections for a query joining
 *   several tables, so a chunked query source is refused.
 * - Rows stream unbuffered (the server sends them as they are read, the connection pauses while parts are
 *   written), are encoded as CSV and become Parquet parts. The snapshot's row count must equal the rows received
 *   and staged.
 * - The session runs in UTC (`time_zone = '+00:00'`): TIMESTAMP columns are staged as TIMESTAMPTZ (UTC), DATETIME
 *   as TIMESTAMP as stored, microseconds kept (values are read as text, never as a JS Date).
 */
/**
 * How mysql2 hands values over (the CSV row reader, mysql-csv-rows.ts, reads them the same way): as text, dates as
 * strings (no millisecond Date), big integers and decimals as strings, JSON as its text, in UTC.
 */
export const MYSQL_VALUE_SETTINGS = Object.freeze({
  dateStrings: true,
  supportBigNumbers: true,
  bigNumberStrings: true,
  decimalNumbers: false,
  jsonStrings: true,
  timezone: 'Z',
} as const)

export class MysqlSource extends DatabaseSource<MysqlSourceOptions> {
  constructor(options: MysqlSourceOptions) {
    super('mysql', options)
  }

  protected createDriver(table: TableSpec, server: DbEndpoint, options: MysqlSourceOptions): DbDriver {
    return new MysqlDriver(table, server, options)
  }
}

class MysqlSession implements DbSession {
  readonly connection: Connection
  #lost: Error | undefined

  constructor(connection: Connection) {
    this.connection = connection
    connection.on('error', (error: Error) => {
      this.#lost = error
    })
  }

  rows(sql: string, values?: readonly unknown[]): Promise<unknown[][]> {
    return this.#query(sql, values).then(([rows]) => rows)
  }

  fields(sql: string): Promise<FieldPacket[]> {
    return this.#query(sql).then(([, fields]) => fields)
  }

  #query(sql: string, values?: readonly unknown[]): Promise<[unknown[][], FieldPacket[]]> {
    if (this.#lost) return Promise.reject(this.#lost)
    return new Promise((resolve, reject) => {
      this.connection.query(
        { sql, values: values as unknown[], rowsAsArray: true },
        (error, rows, fields) => {
          if (error) reject(error)
          else resolve([rows as unknown as unknown[][], fields as FieldPacket[]])
        },
      )
    })
  }

  streamCsv(select: string, spool: CsvSpool): Promise<number> {
    if (this.#lost) return Promise.reject(this.#lost)
    const connection = this.connection
    return new Promise<number>((resolve, reject) => {
      // Rows go to the CSV bytes straight from mysql2's packets (mysql-csv-rows.ts) when its Query looks as
      // expected; else (another mysql2) through mysql2's row arrays and the RowCsvEncoder.
      let encoder: RowCsvEncoder | MysqlCsvRows = new RowCsvEncoder()
      let reader: MysqlCsvRows | undefined
      let rows = 0
      let writing: Promise<void> = Promise.resolve()
      let failed: unknown
      const fail = (error: unknown) => {
        if (failed !== undefined) return
        failed = error
        detach()
        reject(error)
      }
      const stop = (error: unknown) => {
        fail(error)
        // Stop the server's stream: the extract has failed, the rest of the rows is of no use.
        closeNow(connection)
      }
      const flush = () => {
        if (reader !== undefined) {
          // Written at once from the reader's buffer (no copy); the connection pauses only while the spool waits
          // for conversions to catch up.
          let room: Promise<void> | undefined
          try {
            room = spool.append(reader.records(), true)
          } catch (error) {
            stop(error)
            return
          }
          reader.clear()
          if (room !== undefined) {
            connection.pause()
            writing = room
            room.then(() => connection.resume(), stop)
          }
          return
        }
        const bytes = (encoder as RowCsvEncoder).take()
        connection.pause()
        writing = writing.then(() => spool.write(bytes, true))
        writing.then(() => connection.resume(), stop)
      }
      // A killed session or a cut network shows up on the connection, not always on the query.
      const onLost = (error?: unknown) =>
        fail(
          error ??
            Object.assign(new Error('Connection lost: the server closed the connection'), {
              code: 'PROTOCOL_CONNECTION_LOST',
            }),
        )
      const onEnd = () => onLost()
      const detach = () => {
        connection.off('error', onLost)
        connection.off('end', onEnd)
      }
      connection.once('error', onLost)
      connection.once('end', onEnd)
      const query = connection.query({ sql: select, rowsAsArray: true })
      if (isHookable(query)) {
        installMysqlCsvRows(query, (created) => {
          reader = created
          encoder = created
        })
      }
      query.on('result', (row: unknown) => {
        if (failed !== undefined) return
        if (reader !== undefined) {
          if (row !== CSV_ROW) {
            // Another mysql2 that no longer reads rows through `_rowParser`: never count a row not staged.
            stop(new Error('mysql2 did not hand its rows to the CSV row reader (its internals changed)'))
            return
          }
          if (reader.error !== undefined) {
            stop(reader.error)
            return
          }
        } else {
          try {
            ;(encoder as RowCsvEncoder).add(row as unknown[])
          } catch (error) {
            stop(error)
            return
          }
        }
        rows++
        if (encoder.full) flush()
      })
      query.on('error', (error: Error) => fail(error))
      query.on('end', () => {
        if (failed !== undefined) return
        if (encoder.length > 0) flush()
        writing.then(() => {
          if (failed !== undefined) return
          detach()
          resolve(rows)
        }, fail)
      })
    })
  }
}

/**
 * Closes the socket at once. mysql2's `destroy()` only half-closes it: a server sending a result then blocks in
 * "Writing to net" for `net_write_timeout` (600 s here), holding its metadata locks on the table.
 */
function closeNow(connection: Connection): void {
  connection.destroy()
  ;(connection as unknown as { stream?: { destroy(): void } }).stream?.destroy()
}

class MysqlDriver implements DbDriver {
  readonly flavor = 'mysql' as const
  readonly endpoint: string
  readonly #table: TableSpec
  readonly #server: DbEndpoint
  readonly #options: MysqlSourceOptions

  constructor(table: TableSpec, server: DbEndpoint, options: MysqlSourceOptions) {
    this.#table = table
    this.#server = server
    this.#options = options
    this.endpoint = server.label
  }

  /** mysql2's escaping (backslash escapes are on for the session, see #connect); bytes as X'..'. */
  readonly literal = (value: SqlValue): string =>
    mysql.escape(typeof value === 'string' || typeof value === 'number' ? value : Buffer.from(value))

  async openSnapshot(table: TableSpec, count: number): Promise<DbSnapshot> {
    const spec = table.source as DatabaseSourceSpec
    if (count > 1 && spec.table === undefined) {
      throw new SourceError(
        table.name,
        `table ${table.name}: source.chunks: ${count} needs a table source on MySQL/MariaDB: the server cannot share ` +
          `one snapshot between connections for a query; use chunks: 1, or a table (a view works) instead of the query`,
      )
    }
    const sessions: MysqlSession[] = []
    let locker: MysqlSession | undefined
    const close = async () => {
      await Promise.allSettled(
        [...sessions, ...(locker ? [locker] : [])].map(async (session) => {
          await session.rows('ROLLBACK').catch(() => undefined)
          await new Promise<void>((resolve) => session.connection.end(() => resolve())).catch(() => undefined)
          closeNow(session.connection)
        }),
      )
    }
    try {
      const opened = await Promise.all(Array.from({ length: count }, () => this.#connect()))
      sessions.push(...opened)
      if (count > 1) {
        locker = await this.#connect()
        await locker.rows(`LOCK TABLES ${relationSql('mysql', spec)} READ`)
      }
      const started = new Date().toISOString()
      try {
        for (const session of sessions)
          await session.rows('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY')
      } finally {
        if (locker) await locker.rows('UNLOCK TABLES')
      }
      const [[gtid]] = (await sessions[0]!.rows(
        `SELECT COALESCE(${(await this.#isMariaDb(sessions[0]!)) ? '@@gtid_binlog_pos' : '@@gtid_executed'}, '')`,
      )) as [[string]]
      const id = `consistent snapshot started ${started}${gtid ? `, gtid ${gtid}` : ''}`
      return { sessions, id, close }
    } catch (error) {
      await close()
      throw error instanceof SourceError ? error : this.translate(table, error, 'opening a snapshot of')
    }
  }

  async describe(session: DbSession, relation: string): Promise<DbColumn[]> {
    const fields = await (session as MysqlSession).fields(`SELECT * FROM ${relation} LIMIT 0`)
    return fields.map((field) =>
      mysqlColumn({
        name: field.name,
        columnType: field.columnType ?? field.type ?? 253,
        flags: typeof field.flags === 'number' ? field.flags : 0,
        characterSet: field.characterSet ?? 0,
        columnLength: field.columnLength ?? field.length ?? 0,
        decimals: field.decimals,
        ...(field.extendedFormat !== undefined ? { extendedFormat: field.extendedFormat } : {}),
        ...(field.extendedTypeName !== undefined ? { extendedTypeName: field.extendedTypeName } : {}),
      }),
    )
  }

  valueText(quoted: string): string {
    return quoted
  }

  async keyIsDeclaredUnique(session: DbSession, table: string, key: readonly string[]): Promise<boolean> {
    const parts = table.split('.')
    const name = parts.pop()!
    const schema = parts.pop()
    const rows = await (session as MysqlSession).rows(
      `SELECT s.INDEX_NAME, GROUP_CONCAT(s.COLUMN_NAME ORDER BY s.COLUMN_NAME SEPARATOR '\\n'),
              SUM(c.IS_NULLABLE = 'YES'), COUNT(*)
       FROM information_schema.STATISTICS s
       JOIN information_schema.COLUMNS c
         ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = s.COLUMN_NAME
       WHERE s.TABLE_SCHEMA = COALESCE(?, DATABASE()) AND s.TABLE_NAME = ? AND s.NON_UNIQUE = 0
         AND s.SUB_PART IS NULL
       GROUP BY s.INDEX_NAME`,
      [schema ?? null, name],
    )
    const wanted = [...key].sort().join('\n')
    return rows.some((row) => String(row[1]) === wanted && Number(row[2]) === 0)
  }

  translate(table: TableSpec, error: unknown, doing: string): SourceError {
    const server = this.#server
    const spec = table.source as DatabaseSourceSpec
    const code = errorCode(error)
    const errno = (error as { errno?: unknown } | null)?.errno
    const raw = redact(errorMessage(error), server)
    const prefix = `table ${table.name}: ${server.label}`
    const make = (message: string, retryable = false) =>
      new SourceError(table.name, redact(message, server), { cause: error, retryable })
    const network = networkProblem(error)
    if (network !== undefined && !isConnectionLost(error)) {
      return make(
        `${prefix}: cannot connect as user ${server.user || '(default)'}: ${network}; check the server and the URL ` +
          `in ${server.envName}`,
        true,
      )
    }
    if (typeof errno === 'number' && TIMEOUT_CODES.has(errno)) {
      return make(
        `${prefix}: a statement ran longer than source.statement_timeout_seconds ` +
          `(${spec.statementTimeoutSeconds ?? '?'} s) while ${doing} ${sourceName(spec)}; raise the timeout or ` +
          `split the extract with source.chunks. The batch was discarded and nothing was merged`,
        true,
      )
    }
    switch (code) {
      case 'ER_ACCESS_DENIED_ERROR':
        // MySQL refuses a user who must connect over TLS with the same error as a wrong password.
        return make(
          `${prefix}: authentication failed for user ${server.user || '(default)'}; check the credentials in ${server.envName}` +
            (new URL(server.url).searchParams.has('ssl')
              ? ''
              : `, or, if the server requires an encrypted connection, add ssl to the URL (docs/sources.md, ` +
                `"Encrypted connections")`),
        )
      case 'ER_BAD_DB_ERROR':
        return make(
          `${prefix}: database ${server.database} does not exist; check the URL in ${server.envName}`,
        )
      case 'ER_NO_SUCH_TABLE':
        return make(
          `${prefix}: ${spec.table !== undefined ? `source table ${spec.table} does not exist` : 'the source query names a missing table'} (${raw})`,
        )
      case 'ER_BAD_FIELD_ERROR':
        return make(
          `${prefix}: the ${spec.table !== undefined ? `source table ${spec.table}` : 'source query'} has no such column (${raw})`,
        )
      case 'ER_PARSE_ERROR':
        return make(`${prefix}: syntax error in the source query (${raw})`)
      case 'ER_TABLEACCESS_DENIED_ERROR':
      case 'ER_DBACCESS_DENIED_ERROR':
      case 'ER_SPECIFIC_ACCESS_DENIED_ERROR':
        return make(
          `${prefix}: permission denied while ${doing} (${raw}); grant SELECT (and LOCK TABLES for chunks) to user ${server.user}`,
        )
    }
    if (isConnectionLost(error) || (typeof errno === 'number' && CONNECTION_KILLED_CODES.has(errno))) {
      return make(
        `${prefix}: the connection was lost while ${doing} ${sourceName(spec)} (${raw}); the batch was discarded ` +
          `and nothing was merged; the next run extracts it again`,
        true,
      )
    }
    return make(`${prefix}: ${doing} ${sourceName(spec)} failed: ${raw}`)
  }

  async #isMariaDb(session: MysqlSession): Promise<boolean> {
    const [[version]] = (await session.rows('SELECT VERSION()')) as [[string]]
    return /mariadb/i.test(version)
  }

  async #connect(): Promise<MysqlSession> {
    const connection = mysql.createConnection({
      uri: this.#server.url.replace(/^mariadb:/, 'mysql:'),
      connectTimeout: this.#options.connectTimeoutMs ?? 15_000,
      ...MYSQL_VALUE_SETTINGS,
      multipleStatements: false,
      stream: mysqlSocketFactory,
    })
    const session = new MysqlSession(connection)
    try {
      await new Promise<void>((resolve, reject) =>
        connection.connect((error) => (error ? reject(error) : resolve())),
      )
    } catch (error) {
      connection.destroy()
      throw this.translate(this.#table, error, 'connecting to read')
    }
    const timeout = (this.#table.source as DatabaseSourceSpec).statementTimeoutSeconds ?? 0
    const mariadb = await this.#isMariaDb(session)
    const settings = [
      `SET SESSION time_zone = '+00:00'`,
      `SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ`,
      // Literals are escaped with backslashes (mysql2); make sure the session reads them that way.
      `SET SESSION sql_mode = REPLACE(REPLACE(@@SESSION.sql_mode, 'NO_BACKSLASH_ESCAPES', ''), 'ANSI_QUOTES', '')`,
      // The server waits while a part is being written (backpressure); give it time.
      `SET SESSION net_write_timeout = 600`,
      mariadb
        ? `SET SESSION max_statement_time = ${timeout}`
        : `SET SESSION max_execution_time = ${timeout * 1000}`,
    ]
    for (const sql of settings) await session.rows(sql)
    return session
  }
}
