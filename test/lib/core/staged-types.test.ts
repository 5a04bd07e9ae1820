import { describe, expect, it } from 'vitest'
import {
  isPointInTimeType,
  stagedTypeName,
  typeFamily,
  wholeNumberType,
} from '../../../lib/core/staged-types.ts'

describe('staged types (one table for the sources, the row hash and the warehouses)', () => {
  it.each([
    ['VARCHAR', 'string'],
    ['varchar(20)', 'string'],
    [' text ', 'string'],
    ['TINYINT', 'integer'],
    ['INT2', 'integer'],
    ['INTEGER', 'integer'],
    ['UINTEGER', 'integer'],
    ['BIGINT', 'integer'],
    ['LONG', 'integer'],
    ['UBIGINT', 'other'],
    ['HUGEINT', 'other'],
    ['UHUGEINT', 'other'],
    ['BOOLEAN', 'bool'],
    ['DATE', 'date'],
    ['TIME', 'time'],
    ['TIMETZ', 'other'],
    ['TIMESTAMPTZ', 'instant'],
    ['TIMESTAMP WITH TIME ZONE', 'instant'],
    ['TIMESTAMP', 'datetime'],
    ['TIMESTAMP_MS', 'datetime'],
    ['FLOAT', 'float'],
    ['DOUBLE', 'float'],
    ['BLOB', 'bytes'],
    ['UUID', 'other'],
    ['INTERVAL', 'other'],
    ['VARCHAR[]', 'other'],
    ['STRUCT(a INTEGER)', 'other'],
  ])('%s is of the %s family', (type, kind) => {
    expect(typeFamily(type).kind).toBe(kind)
  })

  it('decimals keep precision and scale; a bare DECIMAL is DuckDB’s DECIMAL(18,3)', () => {
    expect(typeFamily('DECIMAL(12,2)')).toEqual({ kind: 'decimal', precision: 12, scale: 2 })
    expect(typeFamily('numeric( 38 , 9 )')).toEqual({ kind: 'decimal', precision: 38, scale: 9 })
    expect(typeFamily('DECIMAL')).toEqual({ kind: 'decimal', precision: 18, scale: 3 })
  })

  it('whole numbers carry width and sign, hashed as integers only where every value fits a signed 64-bit one', () => {
    expect(wholeNumberType('SMALLINT')).toEqual({ bits: 16, signed: true })
    expect(wholeNumberType('UBIGINT')).toEqual({ bits: 64, signed: false })
    expect(wholeNumberType('DOUBLE')).toBeUndefined()
    for (const type of ['TINYINT', 'UTINYINT', 'INTEGER', 'UINTEGER', 'BIGINT', 'UBIGINT', 'HUGEINT']) {
      const { bits, signed } = wholeNumberType(type)!
      expect(typeFamily(type).kind === 'integer', type).toBe(bits < 64 || (bits === 64 && signed))
    }
  })

  it('whole-number types and point-in-time types (look-back cursors) are the types the sources stage', () => {
    const widths: [string, number][] = [
      ['TINYINT', 8],
      ['SMALLINT', 16],
      ['INTEGER', 32],
      ['BIGINT', 64],
    ]
    for (const [name, bits] of widths) {
      expect(wholeNumberType(name)).toEqual({ bits, signed: true })
      expect(wholeNumberType(`U${name}`)).toEqual({ bits, signed: false })
    }
    const pointsInTime = new Set(['DATE', 'TIMESTAMP', 'TIMESTAMPTZ'])
    for (const type of [
      'DATE',
      'TIME',
      'TIMESTAMP',
      'TIMESTAMPTZ',
      'TIMETZ',
      'VARCHAR',
      'BIGINT',
      'INTERVAL',
    ]) {
      expect(isPointInTimeType(type), type).toBe(pointsInTime.has(type))
    }
  })
})

describe('stagedTypeName', () => {
  it('gives the name batches stage for another name of the same type, any other name in upper case', () => {
    expect(
      ['int8', 'LONG', ' text ', 'Timestamp With Time Zone', 'bool', 'float8', 'decimal(10,2)'].map(
        stagedTypeName,
      ),
    ).toEqual(['BIGINT', 'BIGINT', 'VARCHAR', 'TIMESTAMPTZ', 'BOOLEAN', 'DOUBLE', 'DECIMAL(10,2)'])
  })
})
