import fc from 'fast-check'
import { afterAll, beforeAll, describe, it } from 'vitest'

import { MysqlSource } from '../../../lib/adapters/source/mysql-source.ts'
import { canonicalJson } from '../../../lib/core/canonical-json.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import { MYSQL_URL, MysqlScratch, mysqlReachable } from './support/db-services.ts'
import {
  expectStagedAsHeld,
  insertRows,
  nullable,
  rowsOf,
  sameDigits,
  sameDouble,
  sameReal,
  stagedSelect,
  type ExactColumn,
} from './support/exact-values.ts'

const available = await mysqlReachable()

/*
 * What the source said is what is staged, as a property (the MariaDB/MySQL twin of
 * postgres-exact-values-property.test.ts): random rows of a table of many types are extracted into Parquet, and
 * each value read from the server (doubles and floats exactly, over the binary protocol) must mean what DuckDB reads
 * from the staged part: the same double, digits, microsecond, bytes and text, the same JSON document as its
 * canonical text; or the extract is refused naming the column.
 */
const text = (c: string) => `CAST(${c} AS VARCHAR)`
const asIs = (c: string) => c
const instantArb = fc.bigInt({ min: 0n, max: 2n ** 31n * 1_000_000n - 1n })

const COLUMNS: readonly ExactColumn[] = [
  {
    name: 'f8',
    type: 'DOUBLE',
    values: nullable(fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => x.toExponential())),
    held: asIs,
    staged: text,
    same: sameDouble,
  },
  {
    name: 'f4',
    type: 'FLOAT',
    values: nullable(fc.float({ noNaN: true, noDefaultInfinity: true }).map((x) => x.toExponential())),
    held: asIs,
    staged: text,
    same: sameReal,
  },
  {
    name: 'n',
    type: 'DECIMAL(30,6)',
    values: nullable(
      fc
        .tuple(fc.bigInt({ min: -(10n ** 24n) + 1n, max: 10n ** 24n - 1n }), fc.integer({ min: 0, max: 6 }))
        .map(([units, scale]) => (scale === 0 ? String(units) : `${units}e-${scale}`)),
    ),
    held: (c) => `CAST(${c} AS CHAR)`,
    staged: text,
    same: sameDigits,
  },
  {
    name: 'u8',
    type: 'BIGINT UNSIGNED',
    values: nullable(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String)),
    held: (c) => `CAST(${c} AS CHAR)`,
    staged: text,
    same: sameDigits,
  },
  {
    name: 't',
    type: 'VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
    values: nullable(fc.string({ unit: 'grapheme', maxLength: 12 })),
    held: asIs,
    staged: text,
  },
  {
    name: 'b',
    type: 'VARBINARY(40)',
    values: nullable(fc.uint8Array({ maxLength: 12 }).map((a) => Buffer.from(a).toString('hex'))),
    held: (c) => `LOWER(HEX(${c}))`,
    staged: (c) => `lower(hex(${c}))`,
  },
  {
    name: 'd',
    type: 'DATE',
    values: nullable(fc.integer({ min: 0, max: 2_900_000 }).map(String)),
    held: (c) => `DATE_FORMAT(${c}, '%Y-%m-%d')`,
    staged: (c) => `strftime(${c}, '%Y-%m-%d')`,
  },
  {
    name: 'dt',
    type: 'DATETIME(6)',
    values: nullable(fc.bigInt({ min: 0n, max: 253_402_300_799_999_999n }).map(String)),
    held: (c) => `DATE_FORMAT(${c}, '%Y-%m-%d %H:%i:%s.%f')`,
    staged: (c) => `strftime(${c}, '%Y-%m-%d %H:%M:%S.%f')`,
  },
  {
    name: 'ts',
    type: 'TIMESTAMP(6) NULL',
    values: nullable(instantArb.map(String)),
    held: (c) => `CAST(UNIX_TIMESTAMP(${c}) AS CHAR)`,
    staged: (c) => `CAST(epoch_us(${c}) AS VARCHAR) || 'e-6'`,
    same: sameDigits,
  },
  {
    name: 'j',
    type: 'JSON',
    values: nullable(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v))),
    // As text: the client would parse a JSON column into a JavaScript value.
    held: (c) => `CAST(${c} AS CHAR)`,
    staged: text,
    same: (held, staged) => canonicalJson(String(held)) === staged,
  },
]

/** How a generated value is written: days from year 1 and microseconds from year 1 or from 1970 become times. */
function literal(column: ExactColumn, value: string): string {
  switch (column.name) {
    case 'd':
      return `DATE_ADD(DATE '0001-01-01', INTERVAL ${value} DAY)`
    case 'dt':
      return `DATE_ADD(TIMESTAMP '0001-01-01 00:00:00', INTERVAL ${value} MICROSECOND)`
    case 'ts':
      return `FROM_UNIXTIME(${value} / 1000000)`
    case 'b':
      return `UNHEX('${value}')`
    default:
      return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`
  }
}

describe.skipIf(!available)(
  'MariaDB/MySQL values are staged as the source holds them (property, real MariaDB)',
  () => {
    let db: MysqlScratch
    let harness: ExtractHarness
    const source = new MysqlSource({ env: { DB_URL: MYSQL_URL } })

    beforeAll(async () => {
      db = await MysqlScratch.create()
      harness = await ExtractHarness.create()
      await db.sql(`SET time_zone = '+00:00'`)
      await db.sql(
        `CREATE TABLE values_of_every_type (id INT PRIMARY KEY, ${COLUMNS.map((c) => `${c.name} ${c.type}`).join(', ')})`,
      )
    })
    afterAll(async () => {
      await db?.drop()
      await harness?.close()
    })

    it('any rows: every staged value means what the server holds, or the extract is refused naming the column', async () => {
      const table = tableSpec({
        name: 'values_of_every_type',
        key: ['id'],
        source: { type: 'mysql', urlEnv: 'DB_URL', table: `${db.database}.values_of_every_type` },
      })
      await fc.assert(
        fc.asyncProperty(rowsOf(COLUMNS), async (rows) => {
          await db.sql('DELETE FROM values_of_every_type')
          await insertRows((text) => db.sql(text), 'values_of_every_type', COLUMNS, rows, literal)
          // The binary protocol (a prepared statement) gives doubles and floats as the server holds them.
          const [held] = (await db.connection.execute(
            `SELECT id, ${COLUMNS.map((c) => `${c.held(c.name)} AS ${c.name}`).join(', ')} FROM values_of_every_type ORDER BY id`,
          )) as unknown as [Record<string, unknown>[]]
          const staged = await harness
            .extract(source, table, { select: stagedSelect(COLUMNS) })
            .catch((e: unknown) => e)
          expectStagedAsHeld(COLUMNS, held, staged)
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 15) },
      )
    }, 600_000)
  },
)
