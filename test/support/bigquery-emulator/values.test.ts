import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { logicalBytes, restValue, scalarText, timestampMicros, valueFromText } from './values.ts'

const T = (typeKind: string) => ({ typeKind })
const roundTrip = (kind: string, text: string) => scalarText(T(kind), valueFromText(T(kind), text))

describe('emulator values (ZetaSQL ValueProto ⇄ BigQuery text)', () => {
  it('NUMERIC and BIGNUMERIC keep their digits, sign and scale (trailing zeros dropped, as BigQuery prints them)', () => {
    expect(roundTrip('TYPE_NUMERIC', '1.50')).toBe('1.5')
    expect(roundTrip('TYPE_NUMERIC', '-3.00')).toBe('-3')
    expect(roundTrip('TYPE_NUMERIC', '-0.000000001')).toBe('-0.000000001')
    expect(roundTrip('TYPE_NUMERIC', '99999999999999999999999999999.999999999')).toBe(
      '99999999999999999999999999999.999999999',
    )
    expect(roundTrip('TYPE_BIGNUMERIC', '-1.00000000000000000000000000000000000001')).toBe(
      '-1.00000000000000000000000000000000000001',
    )
    // More scale than NUMERIC has: rounded half away from zero.
    expect(roundTrip('TYPE_NUMERIC', '0.0000000015')).toBe('0.000000002')
  })

  it('NUMERIC: any decimal with at most 9 fractional digits survives the two’s complement encoding', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 38n) + 1n, max: 10n ** 38n - 1n }), (scaled) => {
        const negative = scaled < 0n
        const digits = (negative ? -scaled : scaled).toString().padStart(10, '0')
        const text = `${negative ? '-' : ''}${digits.slice(0, -9)}.${digits.slice(-9)}`
        const expected = text.replace(/\.?0+$/, '').replace(/^-0$/, '0')
        expect(roundTrip('TYPE_NUMERIC', text)).toBe(expected === '' ? '0' : expected)
      }),
    )
  })

  it('civil times round trip through ZetaSQL’s bit fields', () => {
    expect(roundTrip('TYPE_DATE', '2020-02-29')).toBe('2020-02-29')
    expect(roundTrip('TYPE_DATE', '0001-01-01')).toBe('0001-01-01')
    expect(roundTrip('TYPE_TIME', '08:30:00.123456')).toBe('08:30:00.123456')
    expect(roundTrip('TYPE_DATETIME', '2024-01-01 10:00:00.5')).toBe('2024-01-01 10:00:00.5')
    expect(roundTrip('TYPE_DATETIME', '9999-12-31T23:59:59.999999')).toBe('9999-12-31 23:59:59.999999')
  })

  it('TIMESTAMP reads microseconds, ISO instants with offsets, and prints UTC', () => {
    expect(roundTrip('TYPE_TIMESTAMP', '2024-03-10T14:30:00.123456Z')).toBe('2024-03-10 14:30:00.123456+00')
    expect(roundTrip('TYPE_TIMESTAMP', '2024-03-10 16:30:00+02:00')).toBe('2024-03-10 14:30:00+00')
    expect(roundTrip('TYPE_TIMESTAMP', '-1')).toBe('1969-12-31 23:59:59.999999+00')
    expect(timestampMicros(valueFromText(T('TYPE_TIMESTAMP'), '1970-01-01 00:00:01.000002Z'))).toBe(
      1_000_002n,
    )
  })

  it('REST cells: TIMESTAMP as int64 microseconds when asked, else float seconds; DATETIME with a T; arrays and structs nested', () => {
    const ts = valueFromText(T('TYPE_TIMESTAMP'), '2024-03-10T14:30:00.5Z')
    expect(restValue(T('TYPE_TIMESTAMP'), ts, { int64Timestamp: true })).toBe('1710081000500000')
    expect(Number(restValue(T('TYPE_TIMESTAMP'), ts, { int64Timestamp: false }))).toBe(1710081000.5)
    const dt = valueFromText(T('TYPE_DATETIME'), '2024-01-01 10:00:00')
    expect(restValue(T('TYPE_DATETIME'), dt, { int64Timestamp: true })).toBe('2024-01-01T10:00:00')
    const arrayType = { typeKind: 'TYPE_ARRAY', arrayType: { elementType: T('TYPE_INT64') } }
    const array = { arrayValue: { element: [{ int64Value: '1' }, { int64Value: '2' }] } }
    expect(restValue(arrayType, array, { int64Timestamp: true })).toEqual([{ v: '1' }, { v: '2' }])
    expect(restValue(T('TYPE_BYTES'), { bytesValue: Buffer.from('ab') }, { int64Timestamp: true })).toBe(
      'YWI=',
    )
    expect(restValue(T('TYPE_STRING'), {}, { int64Timestamp: true })).toBeNull()
  })

  it('logical bytes follow BigQuery’s data size rules (NULL is 0, STRING 2 + UTF-8 length)', () => {
    expect(logicalBytes(T('TYPE_STRING'), { stringValue: 'é' })).toBe(4)
    expect(logicalBytes(T('TYPE_INT64'), { int64Value: '5' })).toBe(8)
    expect(logicalBytes(T('TYPE_NUMERIC'), valueFromText(T('TYPE_NUMERIC'), '1'))).toBe(16)
    expect(logicalBytes(T('TYPE_BOOL'), { boolValue: false })).toBe(1)
    expect(logicalBytes(T('TYPE_STRING'), {})).toBe(0)
  })

  it('refuses text that does not fit the type', () => {
    expect(() => valueFromText(T('TYPE_INT64'), '1.5')).toThrow('not an INT64')
    expect(() => valueFromText(T('TYPE_DATE'), '2024/01/01')).toThrow('not a date')
    expect(() => valueFromText(T('TYPE_BOOL'), 'yes')).toThrow('not a BOOL')
  })
})
