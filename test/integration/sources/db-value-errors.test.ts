import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { MysqlSource } from '../../../lib/adapters/source/mysql-source.ts'
import { PostgresSource } from '../../../lib/adapters/source/postgres-source.ts'
import { SourceError } from '../../../lib/core/errors.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { KITS, sourceSpec, type DbScratch } from './support/db-kits.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import {
  MYSQL_URL,
  MysqlScratch,
  PG_URL,
  PgScratch,
  mysqlReachable,
  postgresReachable,
} from './support/db-services.ts'

/** The one line of a failed extract. */
async function failure(run: Promise<unknown>): Promise<string> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(SourceError)
  return (error as Error).message
}

describe.skipIf(!(await postgresReachable()))('PostgreSQL values that cannot be staged', () => {
  let db: PgScratch
  let harness: ExtractHarness
  beforeAll(async () => {
    db = await PgScratch.create()
    harness = await ExtractHarness.create()
  })
  afterAll(async () => {
    await db?.drop()
    await harness?.close()
  })

  it.each([
    ['int4[]', `'{{1,2},{3,4}}'`],
    ['text[]', `'{{a,b},{c,d}}'`],
  ])('a 2-dimensional %s names the row by its key and the column', async (type, value) => {
    const name = `grid_${type.replace('[]', '')}`
    await db.sql(`CREATE TABLE ${db.schema}.${name} (id int PRIMARY KEY, m ${type})`)
    await db.sql(`INSERT INTO ${db.schema}.${name} VALUES (1, '{}'), (7, ${value})`)
    const table = tableSpec({
      name,
      key: ['id'],
      source: { type: 'postgres', urlEnv: 'PG_URL', table: `${db.schema}.${name}` },
    })
    expect(await failure(harness.extract(new PostgresSource({ env: { PG_URL } }), table))).toBe(
      `table ${name}: PostgreSQL at 127.0.0.1:5432/test: the row with id=7 of ${db.schema}.${name} has a ` +
        `2-dimensional array in column m (${type === 'int4[]' ? 'integer[]' : 'text[]'}); only one-dimensional arrays ` +
        `can be staged (use a query source that selects one dimension); the batch was discarded and nothing was merged`,
    )
  })
})

describe.skipIf(!(await mysqlReachable()))('MySQL/MariaDB values that cannot be staged', () => {
  let db: MysqlScratch
  let harness: ExtractHarness
  beforeAll(async () => {
    db = await MysqlScratch.create()
    harness = await ExtractHarness.create()
  })
  afterAll(async () => {
    await db?.drop()
    await harness?.close()
  })

  it('a partial zero date names the row, the column and the problem; a whole zero date is NULL', async () => {
    await db.sql(`SET SESSION sql_mode = ''`)
    await db.sql(`CREATE TABLE ${db.database}.dates (id int PRIMARY KEY, d DATE, t DATETIME)`)
    await db.sql(
      `INSERT INTO ${db.database}.dates VALUES (1, '0000-00-00', '0000-00-00 00:00:00'), (2, '2024-02-00', '2024-01-01 00:00:00')`,
    )
    const table = tableSpec({
      name: 'dates',
      key: ['id'],
      source: { type: 'mysql', urlEnv: 'MYSQL_URL', table: `${db.database}.dates` },
    })
    const source = new MysqlSource({ env: { MYSQL_URL } })
    expect(await failure(harness.extract(source, table))).toMatch(
      new RegExp(
        `^table dates: MySQL at [^:]+:\\d+/\\w+: the row with id=2 of ${db.database}\\.dates has 2024-02-00 in column d ` +
          `\\(DATE\\), a date with a zero day; only a whole zero date \\(0000-00-00\\) is staged, as NULL: fix the row, ` +
          `or use a query source with NULLIF; the batch was discarded and nothing was merged$`,
      ),
    )
    await db.sql(`UPDATE ${db.database}.dates SET d = NULL, t = '2024-00-10 10:00:00' WHERE id = 2`)
    expect(await failure(harness.extract(source, table))).toContain(
      `the row with id=2 of ${db.database}.dates has 2024-00-10 10:00:00 in column t (DATETIME(0)), a date with a zero month`,
    )
    await db.sql(`UPDATE ${db.database}.dates SET t = NULL WHERE id = 2`)
    const { rows } = await harness.extract(source, table)
    expect(rows).toEqual([
      { id: 1, d: null, t: null },
      { id: 2, d: null, t: null },
    ])
  })
})

describe.each(KITS)('$kit.label: a valid_from column that is not a time', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let harness: ExtractHarness
    beforeAll(async () => {
      db = await kit.create()
      harness = await ExtractHarness.create()
      await db.sql(
        `CREATE TABLE ${db.table('changes')} (id BIGINT PRIMARY KEY, changed ${kit.ddl.text}, amount INT)`,
      )
      await db.sql(
        `INSERT INTO ${db.table('changes')} VALUES (1, '2024-01-01 10:00:00+00', 1), (2, 'yesterday', 2)`,
      )
    })
    afterAll(async () => {
      await db?.drop()
      await harness?.close()
    })
    const spec = (column: string) =>
      tableSpec({
        name: 'changes',
        key: ['id'],
        source: sourceSpec(kit, db.table('changes')),
        validFrom: { kind: 'column', column },
      })

    it('text that is not a time fails the extract naming the row; a number is refused', async () => {
      expect(await failure(harness.extract(kit.source(db.env), spec('changed')))).toMatch(
        new RegExp(
          `^table changes: \\S+ at [^:]+:\\d+/\\w+: the row with id=2 of \\S+changes has yesterday in column changed ` +
            `\\([^)]+\\), which cannot be staged as TIMESTAMPTZ; the batch was discarded and nothing was merged$`,
        ),
      )
      await expect(kit.source(db.env).describe(spec('amount'))).rejects.toThrow(
        /^table changes: valid_from column amount of \S+changes \(\S+ at [^)]+\) is \w+, not a date or timestamp; choose another valid_from column, or cast it in a query source$/,
      )
      await db.sql(`UPDATE ${db.table('changes')} SET changed = '2024-02-01T00:00:00Z' WHERE id = 2`)
      const { rows, types } = await harness.extract(kit.source(db.env), spec('changed'))
      expect(types.changed).toBe('TIMESTAMP WITH TIME ZONE')
      expect(rows.map((r) => r.changed)).toEqual(['2024-01-01 10:00:00+00', '2024-02-01 00:00:00+00'])
    })
  })
})
