import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'

import { buildAwsDeps, type AwsDeps } from '../../../lib/runtime/aws-deps.ts'
import { PG_URL, PgScratch } from '../../integration/sources/support/db-services.ts'
import { startDynalite, type DynaliteHandle } from './dynalite.ts'
import { makeSandbox, useEmulatorCredentials, type FunctionSandbox } from './lambda.ts'
import { startS3rver, type S3rverHandle } from './s3rver.ts'

/** A source table of the scratch schema: ids 1..rows, `name` = prefix || id. */
export interface SeededTable {
  readonly name: string
  readonly rows: number
  readonly prefix: string
}

/** Current versions of a dimension built from a `SeededTable`; `wrong` counts names that are not prefix || id. */
export interface CurrentVersions {
  readonly versions: number
  readonly keys: number
  readonly lo: number
  readonly hi: number
  readonly wrong: number
}

/**
 * The functions against s3rver, dynalite and tables of the real PostgreSQL (a scratch schema): what the tests of
 * long extracts need. Each `sandbox` is a fresh bucket, state table and DuckDB warehouse with its own
 * dimsync.yaml; the connection URL is in `DB_URL`.
 */
export class PostgresFunctionEnv {
  readonly #opened: AwsDeps[] = []

  private constructor(
    readonly s3: S3rverHandle,
    readonly dynamo: DynaliteHandle,
    readonly pg: PgScratch,
  ) {}

  static async start(tables: readonly SeededTable[]): Promise<PostgresFunctionEnv> {
    useEmulatorCredentials()
    const [s3, dynamo, pg] = await Promise.all([startS3rver(), startDynalite(), PgScratch.create()])
    for (const { name, rows, prefix } of tables) {
      await pg.sql(`CREATE TABLE ${pg.schema}.${name} (id BIGINT PRIMARY KEY, name TEXT NOT NULL)`)
      await pg.sql(
        `INSERT INTO ${pg.schema}.${name} SELECT g, '${prefix}' || g FROM generate_series(1, ${rows}) AS g`,
      )
    }
    return new PostgresFunctionEnv(s3, dynamo, pg)
  }

  /** `schema.table` of a seeded table, as a source's `table:`. */
  table(name: string): string {
    return `${this.pg.schema}.${name}`
  }

  /** A sandbox whose dimsync.yaml lists `tableLines` (YAML lines under `tables:`). */
  async sandbox(
    tableLines: readonly string[],
    options: { clock?: () => Date } = {},
  ): Promise<{ box: FunctionSandbox; deps: AwsDeps }> {
    const box = await makeSandbox(this.s3, this.dynamo)
    const yaml = [
      'version: 1',
      'warehouse: { type: duckdb, path: unused.duckdb }',
      'tables:',
      ...tableLines,
      '',
    ]
    await writeFile(join(box.dir, 'dimsync.yaml'), yaml.join('\n'))
    return { box, deps: await this.depsFor(box, options) }
  }

  /** Another container's adapters on the same sandbox (a later invocation, another clock). */
  async depsFor(box: FunctionSandbox, options: { clock?: () => Date } = {}): Promise<AwsDeps> {
    const deps = await buildAwsDeps({ ...box.env, DB_URL: PG_URL }, options)
    this.#opened.push(deps)
    return deps
  }

  /** Reads the current versions of `target` straight from the DuckDB file (after closing the warehouse). */
  async currentVersions(
    box: FunctionSandbox,
    deps: AwsDeps,
    target: string,
    prefix: string,
  ): Promise<CurrentVersions[]> {
    await (await deps.warehouse()).close()
    this.#opened.splice(this.#opened.indexOf(deps), 1)
    const db = await DuckDBInstance.create(box.duckdbPath)
    const c = await db.connect()
    try {
      const result = await c.runAndReadAll(
        `SELECT COUNT(*)::INTEGER AS versions, COUNT(DISTINCT id)::INTEGER AS keys, MIN(id)::INTEGER AS lo,
                MAX(id)::INTEGER AS hi, COUNT(*) FILTER (WHERE name <> '${prefix}' || id)::INTEGER AS wrong
         FROM ${target} WHERE valid_to IS NULL`,
      )
      return result.getRowObjectsJson() as unknown as CurrentVersions[]
    } finally {
      c.closeSync()
      db.closeSync()
    }
  }

  /** Closes the sandboxes' adapters (call after each test). */
  async closeSandboxes(): Promise<void> {
    for (const deps of this.#opened.splice(0)) await deps.close()
  }

  async stop(): Promise<void> {
    await this.closeSandboxes()
    await Promise.all([this.s3.stop(), this.dynamo.stop(), this.pg.drop()])
  }
}
