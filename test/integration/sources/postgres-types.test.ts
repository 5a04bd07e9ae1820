import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { PostgresSource } from '../../../lib/adapters/source/postgres-source.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import { PG_URL, PgScratch, postgresReachable } from './support/db-services.ts'

const available = await postgresReachable()

describe.skipIf(!available)(
  'PostgresSource types round-trip through Parquet into DuckDB (real PostgreSQL)',
  () => {
    let db: PgScratch
    let harness: ExtractHarness
    const source = new PostgresSource({ env: { PG_URL } })

    beforeAll(async () => {
      db = await PgScratch.create()
      harness = await ExtractHarness.create()
      await db.sql(`CREATE TYPE ${db.schema}.mood AS ENUM ('sad', 'ok', 'happy')`)
      await db.sql(`CREATE DOMAIN ${db.schema}.positive AS numeric(10,3) CHECK (VALUE > 0)`)
      await db.sql(`CREATE TABLE ${db.schema}.all_types (
      id int4 PRIMARY KEY, i2 int2, i8 int8, num numeric(38,10), num_small numeric(5,2), num_free numeric,
      f4 float4, f8 float8, flag boolean, t text, vc varchar(20), ch char(5), bin bytea, u uuid, j json, jb jsonb,
      d date, tm time(6), ts timestamp(6), tstz timestamptz(6), iv interval, m ${db.schema}.mood,
      dom ${db.schema}.positive, ints int4[], texts text[], nums numeric(12,2)[], stamps timestamptz[], inet_addr inet)`)
      await db.sql(
        `INSERT INTO ${db.schema}.all_types VALUES
      (1, -32768, 9007199254740993, 1234567890123456789012345678.0123456789, 123.45, 3.14159265358979323846264338327950288,
       1.1, 0.30000000000000004, true, 'quote " comma , newline
 end', 'héllo 🌍', 'ab', '\\x00ff10'::bytea, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": [1, 2.50]}', '{"b": {"c": null}}',
       '1999-12-31', '23:59:59.999999', '2024-02-29 12:34:56.123456', '2024-06-01 12:00:00.000001+02', '1 year 2 mons 3 days 04:05:06.5',
       'happy', 1.5, '{1,NULL,3}', '{"a b","c\\"d",NULL,""}', '{1.10,-2.25}', '{"2024-01-01 00:00:00.5+00"}', '192.168.0.1/24'),
      (2, NULL, -9223372036854775808, NULL, NULL, NULL, 'NaN', '-Infinity', false, '', '', NULL, '\\x'::bytea, NULL, NULL, NULL,
       '0044-03-15 BC', NULL, '1900-01-01 00:00:00', '1969-12-31 23:59:59.999999+00', NULL, 'sad', NULL, '{}', NULL, NULL, NULL, NULL),
      (3, NULL, 9223372036854775807, -0.0000000001, -999.99, 1e-30, 3.4028235e38, 1.7976931348623157e308, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, '0044-03-15 12:00:00.5 BC', '0001-01-01 00:00:00+00 BC', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
      )
    })

    afterAll(async () => {
      await db?.drop()
      await harness?.close()
    })

    it('stages every type exactly, with the DuckDB type a user expects', async () => {
      const table = tableSpec({
        name: 'all_types',
        key: ['id'],
        source: { type: 'postgres', urlEnv: 'PG_URL', table: `${db.schema}.all_types` },
      })
      const { rows, types, result } = await harness.extract(source, table)
      expect(types).toEqual({
        id: 'INTEGER',
        i2: 'SMALLINT',
        i8: 'BIGINT',
        num: 'DECIMAL(38,10)',
        num_small: 'DECIMAL(5,2)',
        num_free: 'VARCHAR',
        f4: 'FLOAT',
        f8: 'DOUBLE',
        flag: 'BOOLEAN',
        t: 'VARCHAR',
        vc: 'VARCHAR',
        ch: 'VARCHAR',
        bin: 'BLOB',
        u: 'UUID',
        j: 'JSON',
        jb: 'JSON',
        d: 'DATE',
        tm: 'TIME',
        ts: 'TIMESTAMP',
        tstz: 'TIMESTAMP WITH TIME ZONE',
        iv: 'VARCHAR',
        m: 'VARCHAR',
        dom: 'DECIMAL(10,3)',
        ints: 'INTEGER[]',
        texts: 'VARCHAR[]',
        nums: 'DECIMAL(12,2)[]',
        stamps: 'TIMESTAMP WITH TIME ZONE[]',
        inet_addr: 'VARCHAR',
      })
      expect(result.columns.find((c) => c.name === 'tstz')?.type).toBe('TIMESTAMPTZ')
      expect(result.rows).toBe(3)
      const [one, two, three] = rows as [
        Record<string, unknown>,
        Record<string, unknown>,
        Record<string, unknown>,
      ]
      expect(one).toMatchObject({
        i2: -32768,
        i8: '9007199254740993',
        num: '1234567890123456789012345678.0123456789',
        num_small: '123.45',
        num_free: '3.14159265358979323846264338327950288',
        f4: 1.100000023841858,
        f8: 0.30000000000000004,
        flag: true,
        t: 'quote " comma , newline\n end',
        vc: 'héllo 🌍',
        ch: 'ab   ',
        u: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
        // JSON is staged as its canonical text (BigQuery's): no spaces, keys sorted, 2.50 is 2.5.
        j: '{"a":[1,2.5]}',
        jb: '{"b":{"c":null}}',
        d: '1999-12-31',
        tm: '23:59:59.999999',
        ts: '2024-02-29 12:34:56.123456',
        tstz: '2024-06-01 10:00:00.000001+00',
        m: 'happy',
        dom: '1.500',
        ints: [1, null, 3],
        texts: ['a b', 'c"d', null, ''],
        nums: ['1.10', '-2.25'],
        stamps: ['2024-01-01 00:00:00.5+00'],
        inet_addr: '192.168.0.1/24',
      })
      expect(one.iv).toBe('P1Y2M3DT4H5M6.5S')
      expect(one.bin).toBe('\\x00\\xFF\\x10')
      expect(two).toMatchObject({
        i2: null,
        i8: '-9223372036854775808',
        f4: 'NaN',
        f8: '-Infinity',
        flag: false,
        t: '',
        vc: '',
        ch: null,
        bin: '',
        d: '0044-03-15 (BC)',
        ts: '1900-01-01 00:00:00',
        tstz: '1969-12-31 23:59:59.999999+00',
        m: 'sad',
        ints: [],
        texts: null,
      })
      expect(three).toMatchObject({
        i8: '9223372036854775807',
        num: '-0.0000000001',
        num_small: '-999.99',
        num_free: '0.000000000000000000000000000001',
        f4: 3.4028234663852886e38,
        f8: 1.7976931348623157e308,
        flag: null,
        t: null,
        ts: '0044-03-15 (BC) 12:00:00.5',
        // 1 BC is year 0 in the proleptic calendar DuckDB prints TIMESTAMPTZ in.
        tstz: '0000-01-01 00:00:00+00',
      })
    })
  },
)
