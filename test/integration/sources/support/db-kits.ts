import { MysqlSource } from '../../../../lib/adapters/source/mysql-source.ts'
import { PostgresSource } from '../../../../lib/adapters/source/postgres-source.ts'
import type { DbExtractOptions } from '../../../../lib/adapters/source/db-extract.ts'
import type { DatabaseSourceSpec } from '../../../../lib/core/table-spec.ts'
import type { Source } from '../../../../lib/ports/source.ts'
import {
  MYSQL_URL,
  MysqlScratch,
  PG_URL,
  PgScratch,
  mysqlReachable,
  postgresReachable,
} from './db-services.ts'

/** One test database (a PostgreSQL schema or a MySQL database) and how to talk to it, for scenarios run on both. */
export interface DbScratch {
  /** Runs SQL written in the kit's dialect (use `kit.ddl` types); returns rows as objects. */
  sql(text: string): Promise<Record<string, unknown>[]>
  /** The config name of a table of this scratch (`schema.table`). */
  table(name: string): string
  /** Environment holding `DB_URL` for sources. */
  readonly env: Record<string, string>
  /** Kills the server sessions whose running statement mentions `marker`. Returns how many. */
  killSessionsRunning(marker: string): Promise<number>
  drop(): Promise<void>
}

export interface DbKit {
  readonly name: 'postgres' | 'mysql'
  readonly label: string
  reachable(): Promise<boolean>
  create(): Promise<DbScratch>
  source(env: Record<string, string>, options?: DbExtractOptions): Source
  /** Column types of the shared scenario tables. */
  readonly ddl: { readonly timestamp: string; readonly text: string }
  /** A SELECT that sleeps `seconds` per row. */
  sleepingQuery(table: string, seconds: number): string
  /** The URL env of a server that refuses connections, with a password that must never be printed. */
  readonly unreachableUrl: string
  /** Opens a second connection that runs `statements` in a transaction and leaves it open until `commit()`. */
  openTransaction(scratch: DbScratch, statements: readonly string[]): Promise<{ commit(): Promise<void> }>
}

export function sourceSpec(
  kit: DbKit,
  table: string,
  extra: Partial<DatabaseSourceSpec> = {},
): DatabaseSourceSpec {
  return { type: kit.name, urlEnv: 'DB_URL', table, ...extra }
}

export const postgresKit: DbKit = {
  name: 'postgres',
  label: 'PostgreSQL',
  reachable: postgresReachable,
  async create() {
    const db = await PgScratch.create()
    return {
      sql: async (text) => (await db.sql(text)).rows as Record<string, unknown>[],
      table: (name) => `${db.schema}.${name}`,
      env: { DB_URL: PG_URL },
      async killSessionsRunning(marker) {
        const result = await db.sql(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE pid <> pg_backend_pid() AND query LIKE $1 AND query NOT LIKE '%pg_terminate_backend%'`,
          [`%${marker}%`],
        )
        return result.rowCount ?? 0
      },
      drop: () => db.drop(),
    }
  },
  source: (env, options) => new PostgresSource({ env, ...options }),
  ddl: { timestamp: 'timestamp(6)', text: 'text' },
  sleepingQuery: (table, seconds) => `SELECT id, pg_sleep(${seconds}) IS NULL AS slept FROM ${table}`,
  unreachableUrl: 'postgres://dimsync:sekret-pw@127.0.0.1:1/test',
  async openTransaction(scratch, statements) {
    const pg = (await import('pg')).default
    const client = new pg.Client({ connectionString: PG_URL })
    await client.connect()
    await client.query('BEGIN')
    for (const statement of statements) await client.query(statement)
    void scratch
    return {
      async commit() {
        await client.query('COMMIT')
        await client.end()
      },
    }
  },
}

export const mysqlKit: DbKit = {
  name: 'mysql',
  label: 'MariaDB/MySQL',
  reachable: mysqlReachable,
  async create() {
    const db = await MysqlScratch.create()
    return {
      sql: async (text) => {
        const rows = await db.sql(text)
        return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
      },
      table: (name) => `${db.database}.${name}`,
      env: { DB_URL: MYSQL_URL },
      async killSessionsRunning(marker) {
        const rows = (await db.sql(
          `SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE ? AND INFO NOT LIKE '%PROCESSLIST%'`,
          [`%${marker}%`],
        )) as { ID: number }[]
        for (const row of rows) await db.sql(`KILL ${Number(row.ID)}`).catch(() => undefined)
        return rows.length
      },
      drop: () => db.drop(),
    }
  },
  source: (env, options) => new MysqlSource({ env, ...options }),
  ddl: { timestamp: 'DATETIME(6)', text: 'VARCHAR(200)' },
  sleepingQuery: (table, seconds) => `SELECT id, SLEEP(${seconds}) AS slept FROM ${table}`,
  unreachableUrl: 'mysql://dimsync:sekret-pw@127.0.0.1:1/test',
  async openTransaction(_scratch, statements) {
    const mysql = (await import('mysql2/promise')).default
    const connection = await mysql.createConnection({ uri: MYSQL_URL })
    await connection.query('START TRANSACTION')
    for (const statement of statements) await connection.query(statement)
    return {
      async commit() {
        await connection.query('COMMIT')
        await connection.end()
      },
    }
  },
}

export const KITS: readonly { kit: DbKit; available: boolean }[] = [
  { kit: postgresKit, available: await postgresKit.reachable() },
  { kit: mysqlKit, available: await mysqlKit.reachable() },
]
