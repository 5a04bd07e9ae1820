import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { MysqlSource } from '../../../lib/adapters/source/mysql-source.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import { MysqlScratch, mysqlReachable } from './support/db-services.ts'

const available = await mysqlReachable()

describe.skipIf(!available)(
  'MysqlSource types round-trip through Parquet into DuckDB (real MariaDB/MySQL)',
  () => {
    let db: MysqlScratch
    let harness: ExtractHarness

    beforeAll(async () => {
      db = await MysqlScratch.create()
      harness = await ExtractHarness.create()
      await db.sql(`CREATE TABLE all_types (
      id INT PRIMARY KEY, ti TINYINT, uti TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT, bi BIGINT, ubi BIGINT UNSIGNED,
      dec38 DECIMAL(38,10), dec_small DECIMAL(5,2), dec_wide DECIMAL(65,30), f FLOAT, d DOUBLE, flag BOOLEAN, b1 BIT(1),
      t TEXT, vc VARCHAR(20), ch CHAR(5), bin VARBINARY(10), blb BLOB, j JSON, e ENUM('sad','ok','happy'),
      dt DATE, tm TIME(6), dtm DATETIME(6), ts TIMESTAMP(6) NULL, yr YEAR, u UUID)`)
      await db.sql(`SET time_zone = '+02:00'`)
      await db.sql(
        `INSERT INTO all_types VALUES
      (1, -128, 255, -32768, -8388608, 9007199254740993, 18446744073709551615,
       1234567890123456789012345678.0123456789, 123.45, 12345678901234567890123456789012345.123456789012345678901234567890,
       1.1, 0.30000000000000004, 1, b'1', 'quote " comma , newline\n end \\\\ backslash', 'héllo 🌍', 'ab',
       x'00ff10', x'', '{"a": [1, 2.50]}', 'happy', '1999-12-31', '23:59:59.999999', '2024-02-29 12:34:56.123456',
       '2024-06-01 12:00:00.000001', 2024, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
      (2, NULL, NULL, NULL, NULL, -9223372036854775808, 0, NULL, -999.99, NULL, NULL, 1.7976931348623157e308, 0, b'0',
       '', '', NULL, NULL, NULL, NULL, 'sad', '1000-01-01', '00:00:00', '1000-01-01 00:00:00', NULL, NULL, NULL)`,
      )
    })

    afterAll(async () => {
      await db?.drop()
      await harness?.close()
    })

    it('stages every type exactly; TIMESTAMP in UTC whatever the session that wrote it', async () => {
      const source = new MysqlSource({ env: { MYSQL_URL: db.url } })
      const table = tableSpec({
        name: 'all_types',
        key: ['id'],
        source: { type: 'mysql', urlEnv: 'MYSQL_URL', table: 'all_types' },
      })
      const { rows, types, result } = await harness.extract(source, table)
      expect(types).toEqual({
        id: 'INTEGER',
        ti: 'TINYINT',
        uti: 'UTINYINT',
        si: 'SMALLINT',
        mi: 'INTEGER',
        bi: 'BIGINT',
        ubi: 'UBIGINT',
        dec38: 'DECIMAL(38,10)',
        dec_small: 'DECIMAL(5,2)',
        dec_wide: 'VARCHAR',
        f: 'FLOAT',
        d: 'DOUBLE',
        flag: 'TINYINT',
        b1: 'BOOLEAN',
        t: 'VARCHAR',
        vc: 'VARCHAR',
        ch: 'VARCHAR',
        bin: 'BLOB',
        blb: 'BLOB',
        j: 'JSON',
        e: 'VARCHAR',
        dt: 'DATE',
        tm: 'TIME',
        dtm: 'TIMESTAMP',
        ts: 'TIMESTAMP WITH TIME ZONE',
        yr: 'SMALLINT',
        u: 'UUID',
      })
      expect(result.rows).toBe(2)
      const [one, two] = rows as [Record<string, unknown>, Record<string, unknown>]
      expect(one).toMatchObject({
        ti: -128,
        uti: 255,
        si: -32768,
        mi: -8388608,
        bi: '9007199254740993',
        ubi: '18446744073709551615',
        dec38: '1234567890123456789012345678.0123456789',
        dec_small: '123.45',
        dec_wide: '12345678901234567890123456789012345.123456789012345678901234567890',
        f: 1.100000023841858,
        d: 0.30000000000000004,
        flag: 1,
        b1: true,
        t: 'quote " comma , newline\n end \\ backslash',
        vc: 'héllo 🌍',
        ch: 'ab',
        blb: '',
        // JSON is staged as its canonical text (BigQuery's): no spaces, keys sorted, 2.50 is 2.5.
        j: '{"a":[1,2.5]}',
        e: 'happy',
        dt: '1999-12-31',
        tm: '23:59:59.999999',
        dtm: '2024-02-29 12:34:56.123456',
        // Written at +02:00: stored as UTC, staged as the UTC instant.
        ts: '2024-06-01 10:00:00.000001+00',
        yr: 2024,
        u: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
      })
      expect(one.bin).toBe('\\x00\\xFF\\x10')
      expect(two).toMatchObject({
        ti: null,
        bi: '-9223372036854775808',
        ubi: '0',
        dec_small: '-999.99',
        d: 1.7976931348623157e308,
        flag: 0,
        b1: false,
        t: '',
        vc: '',
        ch: null,
        bin: null,
        dt: '1000-01-01',
        dtm: '1000-01-01 00:00:00',
        tm: '00:00:00',
        ts: null,
      })
    })
  },
)
