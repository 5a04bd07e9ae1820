import { randomBytes } from 'node:crypto'

import mysql from 'mysql2/promise'
import pg from 'pg'

/** Test servers (see ../shared/notes/platform-facts.md); override with these variables elsewhere. */
export const PG_URL = process.env.DIMSYNC_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test'
export const MYSQL_URL = process.env.DIMSYNC_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

const REQUIRED = process.env.DIMSYNC_REQUIRE_SERVICES === '1'

/**
 * Whether a server answers. When it does not, the suite is skipped with a message saying why, unless
 * DIMSYNC_REQUIRE_SERVICES=1 (CI), where an unreachable server fails the run instead.
 */
async function reachable(name: string, url: string, probe: () => Promise<void>): Promise<boolean> {
  try {
    await probe()
    return true
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error)
    const safeUrl = url.replace(/:[^:@/]*@/, ':***@')
    if (REQUIRED)
      throw new Error(
        `${name} at ${safeUrl} is required (DIMSYNC_REQUIRE_SERVICES=1) but unreachable: ${why}`,
        {
          cause: error,
        },
      )
    console.warn(
      `skipping ${name} integration tests: ${safeUrl} is unreachable (${why}); set DIMSYNC_REQUIRE_SERVICES=1 to fail instead`,
    )
    return false
  }
}

/** Drops the PostgreSQL schemas a test created (a warehouse schema, a scratch schema) and all they hold. */
export async function dropPostgresSchemas(...schemas: readonly string[]): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_URL })
  await admin.connect()
  try {
    for (const schema of schemas)
      await admin.query(`DROP SCHEMA IF EXISTS "${schema.replaceAll('"', '""')}" CASCADE`)
  } finally {
    await admin.end()
  }
}

export async function postgresReachable(): Promise<boolean> {
  return reachable('PostgreSQL', PG_URL, async () => {
    const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 })
    await client.connect()
    await client.end()
  })
}

export async function mysqlReachable(): Promise<boolean> {
  return reachable('MySQL/MariaDB', MYSQL_URL, async () => {
    const connection = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 3000 })
    await connection.end()
  })
}

/** A unique lowercase name for a test schema or database. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`
}

/** A PostgreSQL schema created for one test file and dropped with everything in it. */
export class PgScratch {
  private constructor(
    readonly schema: string,
    readonly client: pg.Client,
  ) {}

  static async create(): Promise<PgScratch> {
    const client = new pg.Client({ connectionString: PG_URL })
    await client.connect()
    const schema = uniqueName('dimsync_test')
    await client.query(`CREATE SCHEMA ${schema}`)
    return new PgScratch(schema, client)
  }

  async sql(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    return await this.client.query(text, values)
  }

  async drop(): Promise<void> {
    await this.client.query(`DROP SCHEMA IF EXISTS ${this.schema} CASCADE`)
    await this.client.end()
  }
}

/** A MariaDB/MySQL database created for one test file and dropped afterwards. */
export class MysqlScratch {
  private constructor(
    readonly database: string,
    readonly connection: mysql.Connection,
  ) {}

  static async create(): Promise<MysqlScratch> {
    const connection = await mysql.createConnection({ uri: MYSQL_URL, multipleStatements: true })
    const database = uniqueName('dimsync_test')
    await connection.query(`CREATE DATABASE ${database}`)
    await connection.query(`USE ${database}`)
    return new MysqlScratch(database, connection)
  }

  /** The URL of the scratch database (tables may then be named without a database). */
  get url(): string {
    return MYSQL_URL.replace(/\/[^/]*$/, `/${this.database}`)
  }

  async sql(text: string, values?: unknown[]): Promise<unknown> {
    const [rows] = await this.connection.query(text, values)
    return rows
  }

  async drop(): Promise<void> {
    await this.connection.query(`DROP DATABASE IF EXISTS ${this.database}`)
    await this.connection.end()
  }
}
