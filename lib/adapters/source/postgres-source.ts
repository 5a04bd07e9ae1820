import type { Socket } from 'node:net'

import pg from 'pg'

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
import { CopyOut } from './pg-copy-out.ts'
import { pgSocketFactory } from './pg-read-buffer-socket.ts'
import { pgColumn, type DbColumn, type PgTypeInfo } from './db-types.ts'

export interface PostgresSourceOptions extends DatabaseSourceOptions {
  /** Time allowed to open a connection (default 15 s). */
  readonly connectTimeoutMs?: number
}

/** Every value as the server's text: no millisecond Dates, no int8 through a JS number. */
const TEXT_TYPES = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig

/**
 * Session settings that make the text form of every value exact and independent of the server's defaults:
 * timestamptz in UTC with an explicit `+00`, ISO dates, ISO 8601 intervals, shortest-exact floats, hex bytea, standard strings
 * (literals are rendered by `literal`, COPY takes no parameters).
 */
const SESSION_SETTINGS = [
  `SET TIME ZONE 'UTC'`,
  `SET DateStyle = 'ISO, YMD'`,
  `SET IntervalStyle = 'iso_8601'`,
  `SET extra_float_digits = 3`,
  `SET bytea_output = 'hex'`,
  `SET standard_conforming_strings = on`,
  `SET client_encoding = 'UTF8'`,
  // The coordinating transaction idles while the chunks read its snapshot.
  `SET idle_in_transaction_session_timeout = 0`,
]

/**
 * Source kind `postgres`: a table (`schema.table`) or a SELECT query of a PostgreSQL server.
 *
 * - Every extract reads ONE snapshot: `REPEATABLE READ, READ ONLY`. With `chunks: N` the key is split into N
 *   ranges (bounds from the snapshot itself) read over N connections that import the coordinator's snapshot
 *   (`pg_export_snapshot()` / `SET TRANSACTION SNAPSHOT`), so a chunked extract is exactly as consistent.
 * - Rows stream with `COPY (SELECT ...) TO STDOUT (FORMAT csv)` (pg-copy-out.ts), with backpressure, into Parquet parts
 *   (bounded memory whatever the table size). The row count taken in the same snapshot must equal the rows the
 *   server sent and the rows staged, or the extract fails and nothing is merged.
 * - Incremental extracts read rows whose (cursor, key) tuple is after the watermark (ties on the cursor are never
 *   skipped), plus `lookback_minutes` before it; the watermark candidate is the newest (cursor, key) read.
 * - Types are exact (see db-types.ts); timestamptz is staged as TIMESTAMPTZ in UTC, timestamp as TIMESTAMP as
 *   stored.
 */
export class PostgresSource extends DatabaseSource<PostgresSourceOptions> {
  constructor(options: PostgresSourceOptions) {
    super('postgres', options)
  }

  protected createDriver(table: TableSpec, server: DbEndpoint, options: PostgresSourceOptions): DbDriver {
    return new PostgresDriver(table, server, options)
  }
}

class PostgresSession implements DbSession {
  readonly client: pg.Client
  #lost: Error | undefined

  constructor(client: pg.Client) {
    this.client = client
    // An idle connection the server drops emits 'error' on the client; without a listener Node would crash.
    client.on('error', (error) => {
      this.#lost = error
    })
  }

  async rows(sql: string, values?: readonly unknown[]): Promise<unknown[][]> {
    this.#throwIfLost()
    const result = await this.client.query({ text: sql, values: values as unknown[], rowMode: 'array' })
    return result.rows as unknown[][]
  }

  async streamCsv(select: string, spool: CsvSpool): Promise<number> {
    this.#throwIfLost()
    const copy = new CopyOut(`COPY (${select}) TO STDOUT WITH (FORMAT csv)`, spool)
    const onLost = (error: Error) => copy.fail(error)
    this.client.on('error', onLost)
    try {
      void this.client.query(copy as unknown as pg.Submittable)
      const rows = await copy.done
      this.#throwIfLost()
      return rows
    } catch (error) {
      // Rows the spool could not take (a part failed): the server is still sending them.
      if (!copy.readToEnd) this.#drop(error)
      throw error
    } finally {
      this.client.off('error', onLost)
    }
  }

  #throwIfLost(): void {
    if (this.#lost) throw this.#lost
  }

  /**
   * Closes the connection when the rows can no longer be taken (a part failed): the server would go on sending
   * COPY data nobody reads, and every later statement on this connection (the ROLLBACK) would wait behind it.
   * The transaction, and the snapshot, end with the connection.
   */
  #drop(error: unknown): void {
    this.#lost ??= error instanceof Error ? error : new Error(String(error))
    ;(this.client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
  }
}

class PostgresDriver implements DbDriver {
  readonly flavor = 'postgres' as const
  readonly endpoint: string
  readonly #table: TableSpec
  readonly #server: DbEndpoint
  readonly #options: PostgresSourceOptions

  constructor(table: TableSpec, server: DbEndpoint, options: PostgresSourceOptions) {
    this.#table = table
    this.#server = server
    this.#options = options
    this.endpoint = server.label
  }

  /** A string literal (standard_conforming_strings is on): quotes doubled; the server coerces it to the column's type. */
  readonly literal = (value: SqlValue): string => {
    const text =
      typeof value === 'string' || typeof value === 'number'
        ? String(value)
        : `\\x${Buffer.from(value).toString('hex')}`
    if (text.includes('\0')) throw new Error('a value with a NUL character cannot be sent to PostgreSQL')
    return `'${text.replaceAll("'", "''")}'`
  }

  async openSnapshot(table: TableSpec, count: number): Promise<DbSnapshot> {
    const sessions: PostgresSession[] = []
    const close = async () => {
      await Promise.allSettled(
        sessions.map(async (session) => {
          await session.client.query('ROLLBACK').catch(() => undefined)
          await session.client.end().catch(() => undefined)
        }),
      )
    }
    try {
      const main = await this.#connect()
      sessions.push(main)
      await main.rows('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      const [[current, exported]] = (await main.rows(
        `SELECT txid_current_snapshot()::text, ${count > 1 ? 'pg_export_snapshot()' : 'NULL'}`,
      )) as [[string, string | null]]
      if (count > 1) {
        const others = await Promise.all(
          Array.from({ length: count - 1 }, async () => {
            const session = await this.#connect()
            sessions.push(session)
            return session
          }),
        )
        for (const session of others) {
          await session.rows('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
          await session.rows(`SET TRANSACTION SNAPSHOT ${this.literal(exported!)}`)
        }
      }
      return { sessions, id: current, close }
    } catch (error) {
      await close()
      throw error instanceof SourceError ? error : this.translate(table, error, 'opening a snapshot of')
    }
  }

  async describe(session: DbSession, relation: string): Promise<DbColumn[]> {
    const client = (session as PostgresSession).client
    const result = await client.query({ text: `SELECT * FROM ${relation} LIMIT 0`, rowMode: 'array' })
    const fields = result.fields
    const types = await loadTypes(
      session as PostgresSession,
      fields.map((f) => ({ oid: f.dataTypeID, typmod: f.dataTypeModifier })),
    )
    return fields.map((field, i) => pgColumn(field.name, types[i]!))
  }

  valueText(quoted: string): string {
    // ISO 8601 for timestamps (`2024-01-02T03:04:05.123456+00:00`), plain digits for numbers, text as is.
    return `to_json(${quoted}) #>> '{}'`
  }

  /**
   * Only an index PostgreSQL enforces proves anything: a failed `CREATE UNIQUE INDEX CONCURRENTLY` leaves an
   * INVALID index behind (not enforced), and one still being built or dropped is not ready or not live.
   */
  async keyIsDeclaredUnique(session: DbSession, table: string, key: readonly string[]): Promise<boolean> {
    const rows = await (session as PostgresSession).rows(
      `SELECT 1 FROM pg_catalog.pg_index i
       WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indisvalid AND i.indisready AND i.indislive
         AND i.indpred IS NULL AND i.indexprs IS NULL
         AND i.indnkeyatts = $3
         AND (SELECT array_agg(a.attname::text ORDER BY a.attname::text) FROM pg_catalog.pg_attribute a
              WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) AND a.attnotnull) = $2::text[]
       LIMIT 1`,
      [relationSql('postgres', { type: 'postgres', urlEnv: '', table }), [...key].sort(), key.length],
    )
    return rows.length > 0
  }

  translate(table: TableSpec, error: unknown, doing: string): SourceError {
    const server = this.#server
    const spec = table.source as DatabaseSourceSpec
    const code = errorCode(error)
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
    switch (code) {
      case '28P01':
      case '28000':
        return make(
          `${prefix}: authentication failed for user ${server.user || '(default)'}; check the credentials in ${server.envName}`,
        )
      case '3D000':
        return make(
          `${prefix}: database ${server.database} does not exist; check the URL in ${server.envName}`,
        )
      case '42P01':
        return make(
          `${prefix}: ${spec.table !== undefined ? `source table ${spec.table} does not exist` : `the source query names a missing table`} (${raw})`,
        )
      case '42703':
        return make(
          `${prefix}: the ${sourceName(spec) === 'query' ? 'source query' : `source table ${spec.table}`} has no such column (${raw})`,
        )
      case '42601':
        return make(`${prefix}: syntax error in the source query (${raw})`)
      case '42501':
        return make(
          `${prefix}: permission denied while ${doing} (${raw}); grant SELECT to user ${server.user}`,
        )
      case '57014':
        return make(
          `${prefix}: a statement ran longer than source.statement_timeout_seconds ` +
            `(${spec.statementTimeoutSeconds ?? '?'} s) while ${doing} ${sourceName(spec)}; raise the timeout or ` +
            `split the extract with source.chunks. The batch was discarded and nothing was merged`,
          true,
        )
    }
    if (isConnectionLost(error)) {
      return make(
        `${prefix}: the connection was lost while ${doing} ${sourceName(spec)} (${raw}); the batch was discarded ` +
          `and nothing was merged; the next run extracts it again`,
        true,
      )
    }
    return make(`${prefix}: ${doing} ${sourceName(spec)} failed: ${raw}`)
  }

  async #connect(): Promise<PostgresSession> {
    const client = new pg.Client({
      connectionString: this.#server.url,
      connectionTimeoutMillis: this.#options.connectTimeoutMs ?? 15_000,
      application_name: 'dimsync',
      types: TEXT_TYPES,
      // pg calls the factory with its connection settings (their `ssl`); @types/pg declares it without them.
      stream: pgSocketFactory as () => Socket,
    })
    const session = new PostgresSession(client)
    try {
      await client.connect()
    } catch (error) {
      await client.end().catch(() => undefined)
      throw this.translate(this.#table, error, 'connecting to read')
    }
    const timeout = (this.#table.source as DatabaseSourceSpec).statementTimeoutSeconds
    const settings = [
      ...SESSION_SETTINGS,
      `SET statement_timeout = ${timeout === undefined ? 0 : `'${timeout}s'`}`,
    ]
    await client.query(settings.join('; '))
    return session
  }
}

interface TypeRow {
  readonly oid: number
  readonly name: string
  readonly typtype: string
  readonly elem: number
  readonly base: number
  readonly baseTypmod: number
  readonly category: string
}

/** Resolves the result columns' type OIDs through domains and arrays, with the server's spelling of each type. */
async function loadTypes(
  session: PostgresSession,
  fields: readonly { oid: number; typmod: number }[],
): Promise<PgTypeInfo[]> {
  const known = new Map<number, TypeRow>()
  let wanted = [...new Set(fields.map((f) => f.oid))]
  for (let round = 0; round < 4 && wanted.length > 0; round++) {
    const rows = await session.rows(
      `SELECT t.oid::int8, t.typname::text, t.typtype::text, t.typelem::int8, t.typbasetype::int8, t.typtypmod, t.typcategory::text
       FROM pg_catalog.pg_type t WHERE t.oid = ANY ($1::oid[])`,
      [wanted],
    )
    for (const r of rows) {
      const row: TypeRow = {
        oid: Number(r[0]),
        name: String(r[1]),
        typtype: String(r[2]),
        elem: Number(r[3]),
        base: Number(r[4]),
        baseTypmod: Number(r[5]),
        category: String(r[6]),
      }
      known.set(row.oid, row)
    }
    wanted = [...known.values()]
      .flatMap((row) => [row.elem, row.base])
      .filter((oid) => oid !== 0 && !known.has(oid))
  }
  const formatted = await session.rows(
    `SELECT format_type(f.oid, f.typmod) FROM unnest($1::oid[], $2::int[]) WITH ORDINALITY AS f(oid, typmod, n) ORDER BY f.n`,
    [fields.map((f) => f.oid), fields.map((f) => f.typmod)],
  )
  const resolve = (oid: number, typmod: number, spelled: string): PgTypeInfo => {
    const row = known.get(oid)
    if (row === undefined) return { name: 'unknown', typmod, isEnum: false, formatted: spelled }
    if (row.typtype === 'd') return resolve(row.base, row.baseTypmod, spelled)
    if (row.category === 'A' && row.elem !== 0) {
      return {
        name: row.name,
        typmod,
        isEnum: false,
        element: resolve(row.elem, typmod, spelled),
        formatted: spelled,
      }
    }
    return { name: row.name, typmod, isEnum: row.typtype === 'e', formatted: spelled }
  }
  return fields.map((f, i) => resolve(f.oid, f.typmod, String(formatted[i]![0])))
}
