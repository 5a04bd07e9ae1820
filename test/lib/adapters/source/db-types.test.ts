import { describe, expect, it } from 'vitest'

import { mysqlColumn, pgColumn, type PgTypeInfo } from '../../../../lib/adapters/source/db-types.ts'

const pg = (name: string, typmod = -1, extra: Partial<PgTypeInfo> = {}): PgTypeInfo => ({
  name,
  typmod,
  isEnum: false,
  formatted: name,
  ...extra,
})
/** numeric(p,s) as PostgreSQL encodes it in atttypmod. */
const numericTypmod = (p: number, s: number) => ((p << 16) | s) + 4

describe('pgColumn', () => {
  it('maps numeric precision and scale, and keeps unconstrained or too wide numerics as exact text', () => {
    expect(pgColumn('a', pg('numeric', numericTypmod(12, 2))).type).toBe('DECIMAL(12,2)')
    expect(pgColumn('a', pg('numeric', numericTypmod(38, 38))).type).toBe('DECIMAL(38,38)')
    expect(pgColumn('a', pg('numeric', numericTypmod(39, 2))).type).toBe('VARCHAR')
    expect(pgColumn('a', pg('numeric')).type).toBe('VARCHAR')
  })

  it('reads bytea from its hex text and json as JSON', () => {
    const bytes = pgColumn('b', pg('bytea'))
    expect([bytes.type, bytes.csvType, bytes.convert?.('x')]).toEqual([
      'BLOB',
      'VARCHAR',
      'from_hex(substr(x, 3))',
    ])
    expect(pgColumn('j', pg('jsonb')).type).toBe('JSON')
  })

  it('moves a trailing BC where DuckDB reads it, for BC values only', () => {
    const ts = pgColumn('t', pg('timestamptz'))
    expect(ts.type).toBe('TIMESTAMPTZ')
    expect(ts.convert?.('x')).toContain("ends_with(x, ' BC')")
    expect(ts.convert?.('x')).toContain('ELSE CAST(x AS TIMESTAMPTZ) END')
  })

  it('stages enums and unknown types as text, arrays as lists of exact element text', () => {
    expect(pgColumn('m', pg('mood', -1, { isEnum: true })).type).toBe('VARCHAR')
    expect(pgColumn('i', pg('inet')).type).toBe('VARCHAR')
    const arr = pgColumn(
      'n',
      pg('_numeric', numericTypmod(12, 2), { element: pg('numeric', numericTypmod(12, 2)) }),
    )
    expect(arr.type).toBe('DECIMAL(12,2)[]')
    expect(arr.select).toBe('array_to_json("n"::text[])')
    expect(arr.convert?.('x')).toBe(
      "list_transform(CASE WHEN starts_with(x, '[[') THEN list_value(CAST(CAST(substr(x, 1, 2) AS INTEGER) AS VARCHAR)) " +
        'ELSE CAST(CAST(x AS JSON) AS VARCHAR[]) END, dimsync_e -> CAST(dimsync_e AS DECIMAL(12,2)))',
    )
  })

  it('selects money as its numeric value, not its locale text', () => {
    expect(pgColumn('price', pg('money')).select).toBe('"price"::numeric')
  })
})

describe('mysqlColumn', () => {
  const field = (columnType: number, extra: Partial<Parameters<typeof mysqlColumn>[0]> = {}) =>
    mysqlColumn({
      name: 'c',
      columnType,
      flags: 0,
      characterSet: 33,
      columnLength: 11,
      decimals: 0,
      ...extra,
    })

  it('keeps signedness of integers', () => {
    expect(field(8).type).toBe('BIGINT')
    expect(field(8, { flags: 32 }).type).toBe('UBIGINT')
    expect(field(1, { columnLength: 1 }).type).toBe('TINYINT')
  })

  it('derives DECIMAL precision from the column length', () => {
    expect(field(246, { columnLength: 14, decimals: 2 }).type).toBe('DECIMAL(12,2)')
    expect(field(246, { columnLength: 13, decimals: 2, flags: 32 }).type).toBe('DECIMAL(12,2)')
    expect(field(246, { columnLength: 11, decimals: 0 }).type).toBe('DECIMAL(10,0)')
    expect(field(246, { columnLength: 67, decimals: 30 }).type).toBe('VARCHAR')
  })

  it('tells bytes from text by the character set, and reads JSON, UUID and BIT(1)', () => {
    expect(field(253, { characterSet: 63 }).type).toBe('BLOB')
    expect(field(253).type).toBe('VARCHAR')
    expect(field(252, { extendedFormat: 'json' }).type).toBe('JSON')
    expect(field(254, { extendedTypeName: 'uuid' }).type).toBe('UUID')
    expect(field(16, { columnLength: 1 }).type).toBe('BOOLEAN')
    expect(field(16, { columnLength: 8 }).type).toBe('BLOB')
  })

  it('stages TIMESTAMP (session UTC) as TIMESTAMPTZ and zero dates as NULL', () => {
    const ts = field(7, { decimals: 6 })
    expect(ts.type).toBe('TIMESTAMPTZ')
    expect(ts.serverType).toBe('DATETIME(6)')
    expect(ts.convert?.('x')).toBe(
      "CASE WHEN starts_with((x || '+00'), '0000-00-00') THEN NULL ELSE CAST((x || '+00') AS TIMESTAMPTZ) END",
    )
    expect(field(12, { decimals: 6 }).type).toBe('TIMESTAMP')
  })

  it('reads FLOAT through a DOUBLE (the text protocol prints 6 digits of a FLOAT)', () => {
    const f = field(4)
    expect([f.type, f.csvType, f.select]).toEqual(['FLOAT', 'DOUBLE', '(`c` + 0E0)'])
  })
})
