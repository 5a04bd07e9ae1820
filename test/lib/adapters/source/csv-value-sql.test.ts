import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { sqlString } from '../../../../lib/adapters/duckdb/parquet-schema.ts'
import {
  CSV_VALUE_MACROS,
  exactValue,
  otherReadings,
  readColumn,
  refusedValue,
} from '../../../../lib/adapters/source/csv-value-sql.ts'

let duck: DuckDBInstance
let db: DuckDBConnection
beforeAll(async () => {
  duck = await DuckDBInstance.create(':memory:')
  db = await duck.connect()
  await db.run(`SET TimeZone='UTC'`)
  for (const macro of CSV_VALUE_MACROS) await db.run(macro)
})
afterAll(() => {
  db.closeSync()
  duck.closeSync()
})

/** Each text as read into `type`, as DuckDB prints the value; null where the type does not hold it exactly. */
async function read(
  type: string,
  texts: readonly string[],
  format?: string,
  numbers: 'any spelling' | 'no leading zeros' = 'any spelling',
): Promise<(string | null)[]> {
  const expression = exactValue(
    { name: 'v', type, ...(format !== undefined ? { format } : {}) },
    'v',
    numbers,
  )
  const list = `[${texts.map(sqlString).join(', ')}]`
  const reader = await db.runAndReadAll(
    `SELECT CAST(${expression} AS VARCHAR) AS out FROM (SELECT unnest(${list}) AS v, generate_subscripts(${list}, 1) AS i) ORDER BY i`,
  )
  return reader.getRowsJS().map((row) => (row[0] === null ? null : String(row[0])))
}

describe('exactValue: a CSV text read as its type only when the type holds it exactly', () => {
  it('without leading zeros (a type not declared): 02134 and -01.5 are not numbers, 0, 0.5, -0 and 10 are', async () => {
    const texts = ['02134', '-01.5', '+007', '00', '0', '0.5', '-0', '10', ' 7 ']
    expect(await read('BIGINT', texts, undefined, 'no leading zeros')).toEqual([
      null,
      null,
      null,
      null,
      '0',
      null,
      '0',
      '10',
      '7',
    ])
    expect(await read('DOUBLE', texts, undefined, 'no leading zeros')).toEqual([
      null,
      null,
      null,
      null,
      '0.0',
      '0.5',
      '-0.0',
      '10.0',
      '7.0',
    ])
    expect(await read('DECIMAL(10,1)', ['01.5', '1.5'], undefined, 'no leading zeros')).toEqual([null, '1.5'])
    expect(await read('BIGINT', ['02134'])).toEqual(['2134'])
    expect(await read('VARCHAR', ['02134'], undefined, 'no leading zeros')).toEqual(['02134'])
  })

  it('DOUBLE keeps what it holds exactly and refuses what it would round, overflow or lose', async () => {
    expect(
      await read('DOUBLE', [
        '0.1',
        '1.5',
        '0.30000000000000004',
        ' 2 ',
        '1e20',
        'NaN',
        '-inf',
        '+3.25e2',
        '-0',
      ]),
    ).toEqual(['0.1', '1.5', '0.30000000000000004', '2.0', '1e+20', 'nan', '-inf', '325.0', '-0.0'])
    expect(await read('DOUBLE', ['12345678901234567.89', '1e400', '1e-400', '4.9e-324', 'abc', ''])).toEqual([
      null,
      null,
      null,
      null,
      null,
      null,
    ])
  })

  it('whole numbers refuse fractions and exponents (DuckDB would round 1.5 to 2) and values out of range', async () => {
    expect(await read('BIGINT', ['1', ' 12 ', '+5', '-9223372036854775808'])).toEqual([
      '1',
      '12',
      '5',
      '-9223372036854775808',
    ])
    expect(await read('BIGINT', ['1.5', '1.0', '1e3', '9223372036854775808', ''])).toEqual([
      null,
      null,
      null,
      null,
      null,
    ])
  })

  it('DECIMAL(p,s) refuses digits past its scale (DuckDB would round 1.125 to 1.13) and past its precision', async () => {
    expect(await read('DECIMAL(38,2)', ['12345678901234567.89', '1.1200', '.5', '-3'])).toEqual([
      '12345678901234567.89',
      '1.12',
      '0.50',
      '-3.00',
    ])
    expect(await read('DECIMAL(38,2)', ['1.125', '1e3', 'x'])).toEqual([null, null, null])
    expect(await read('DECIMAL(38,0)', ['12345678901234567891', '1.0', '1.5', '9'.repeat(39)])).toEqual([
      '12345678901234567891',
      '1',
      null,
      null,
    ])
  })

  it('dates and times keep every part of the text or are refused', async () => {
    expect(await read('DATE', ['2024-02-01', ' 2024-1-2 ', '2024-02-30', '2024-01-01 10:00:00'])).toEqual([
      '2024-02-01',
      '2024-01-02',
      null,
      null,
    ])
    expect(await read('DATE', ['01/02/2024', '1/2/2024', '02/13/2024', '01/02/2024 x'], '%d/%m/%Y')).toEqual([
      '2024-02-01',
      '2024-02-01',
      null,
      null,
    ])
    expect(
      await read('TIMESTAMP', [
        '2024-01-01T10:00:00.123456',
        '2024-01-01',
        '2024-01-01 10:00:00.1234567',
        '2024-01-01 10:00:00+02',
      ]),
    ).toEqual(['2024-01-01 10:00:00.123456', '2024-01-01 00:00:00', null, null])
    expect(
      await read('TIMESTAMPTZ', [
        '2024-01-01 10:00:00+02',
        '2024-01-01T10:00:00Z',
        '2024-01-01 10:00:00.1234567+00',
      ]),
    ).toEqual(['2024-01-01 08:00:00+00', '2024-01-01 10:00:00+00', null])
    expect(await read('TIME', ['10:00', '10:00:00.5', '10:00:00+02', '25:00:00'])).toEqual([
      '10:00:00',
      '10:00:00.5',
      null,
      null,
    ])
    expect(await read('BOOLEAN', ['true', ' T ', '0', 'maybe'])).toEqual(['true', 'true', 'false', null])
  })

  it('a refused value stops the read with an error that gives back the file, the column and the value', async () => {
    const column = readColumn({ name: 'v', type: 'BIGINT' }, 'v', 2, 3, 'any spelling')
    const error = await db
      .run(`SELECT ${column} FROM (SELECT unnest(['1', NULL, 'x"y\n2']) AS v)`)
      .catch((e: unknown) => e as Error)
    expect(refusedValue((error as Error).message)).toEqual({ file: 2, column: 3, value: 'x"y\n2' })
    expect(refusedValue('Conversion Error: something else')).toBeUndefined()
  })
})

describe('otherReadings', () => {
  it('lists the other orders of day, month and year with the same separator and time of day', () => {
    expect(otherReadings('%d/%m/%Y')).toEqual(['%m/%d/%Y', '%m/%d/%y', '%d/%m/%y', '%Y/%m/%d', '%y/%m/%d'])
    expect(otherReadings('%d.%m.%Y %H:%M:%S')).toContain('%m.%d.%Y %H:%M:%S')
    expect(otherReadings('%Y%m%d')).toEqual([])
  })
})
