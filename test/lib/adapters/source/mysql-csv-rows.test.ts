import { EventEmitter } from 'node:events'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import {
  CSV_ROW,
  installMysqlCsvRows,
  isHookable,
  MysqlCsvRows,
  type MysqlPacket,
  type MysqlRowField,
} from '../../../../lib/adapters/source/mysql-csv-rows.ts'
import { RowCsvEncoder } from '../../../../lib/adapters/source/row-csv-encoder.ts'
import { MYSQL_VALUE_SETTINGS } from '../../../../lib/adapters/source/mysql-source.ts'

// mysql2's own packet class and text-row parser: the path mysql-source.ts took before (and still takes when the
// hook does not apply) is `getTextParser(...)` → a row array → RowCsvEncoder.
const require = createRequire(import.meta.url)
const mysql2Dir = dirname(require.resolve('mysql2'))
const Packet = require(join(mysql2Dir, 'lib/packets/packet.js')) as new (
  id: number,
  buffer: Buffer,
  start: number,
  end: number,
) => MysqlPacket
const getTextParser = require(join(mysql2Dir, 'lib/parsers/text_parser.js')) as (
  fields: unknown[],
  options: object,
  config: object,
) => new (fields: unknown[]) => { next(packet: MysqlPacket, fields: unknown[], options: object): unknown[] }

/** mysql-source.ts's connection settings. */
const CONFIG = MYSQL_VALUE_SETTINGS
const OPTIONS = { rowsAsArray: true }

interface Column {
  readonly field: MysqlRowField & { name: string; flags: number; decimals: number }
  readonly value: fc.Arbitrary<Buffer | null>
}

const ascii = (text: string) => Buffer.from(text, 'latin1')
const utf8 = (text: string) => Buffer.from(text, 'utf8')
const bytes = (max = 40) => fc.uint8Array({ maxLength: max }).map((b) => Buffer.from(b))
const nullable = (value: fc.Arbitrary<Buffer>) =>
  fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 5, arbitrary: value })
/** Text with the characters CSV cares about, unicode (astral too), and arbitrary (also invalid UTF-8) bytes. */
const textValue = fc.oneof(
  fc
    .string({
      unit: fc.constantFrom('a', '"', ',', '\n', '\r', ' ', '\\', 'é', '🌍', '\u2028', '\uFEFF', 'x'),
    })
    .map(utf8),
  fc.string({ unit: 'grapheme', maxLength: 30 }).map(utf8),
  fc.string({ unit: 'binary', maxLength: 30 }).map(utf8),
  bytes(),
  fc.constantFrom(
    Buffer.from([0xed, 0xa0, 0x80]), // a surrogate
    Buffer.from([0xf4, 0x90, 0x80, 0x80]), // above U+10FFFF
    Buffer.from([0xc0, 0xaf]), // overlong
    Buffer.from([0xe0, 0x80, 0xaf]),
    Buffer.from([0xf0, 0x8f, 0xbf, 0xbf]),
    Buffer.from([0xe2, 0x82]), // truncated
    Buffer.from([0x22, 0xf0, 0x9f, 0x8c]),
  ),
)
const intText = fc
  .oneof(
    fc.integer().map(String),
    fc.integer({ min: -1e15, max: 1e15 }).map(String),
    fc.constantFrom('0', '-0', '00', '0000', '007', '+5', '', '-', '999999999999999', '1000000000000000'),
    fc.nat(99999).map((n) => String(n).padStart(8, '0')),
  )
  .map(ascii)
const decimalText = fc
  .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.nat(12))
  .map(([negative, digits, scale]) => {
    const text = digits.toString().padStart(scale + 1, '0')
    const point = scale === 0 ? text : `${text.slice(0, -scale)}.${text.slice(-scale)}`
    return ascii(negative ? `-${point}` : point)
  })
const doubleText = fc
  .oneof(
    fc
      .double({ noNaN: true, noDefaultInfinity: true })
      .chain((x) =>
        fc.constantFrom(
          String(x),
          x.toExponential(),
          x.toPrecision(17),
          x.toPrecision(15),
          x.toPrecision(6),
          Math.abs(x) < 1e21 ? x.toFixed(3) : String(x),
          String(x).replace('e+', 'e'),
        ),
      ),
    fc.double({ min: -1e6, max: 1e6, noNaN: true }).map(String),
    fc.integer({ min: -1e9, max: 1e9 }).map((n) => String(n * 1.5)),
    decimalText.map((b) => b.toString('latin1')),
    fc.constantFrom(
      '0',
      '-0',
      '0.0',
      '1e-7',
      '0.000001',
      '0.0000001',
      '1e21',
      '1e20',
      '123456789012345678',
      '-0.5',
      '5.',
    ),
  )
  .map(ascii)
const dateText = fc.oneof(
  fc
    .date({ min: new Date(-62135596800000), max: new Date(253402300799999), noInvalidDate: true })
    .map((d) => ascii(d.toISOString().replace('T', ' ').replace('Z', ''))),
  fc
    .constantFrom('0000-00-00', '0000-00-00 00:00:00', '-838:59:59.000000', '838:59:59', '2024-02-29')
    .map(ascii),
  bytes(12),
)

const field = (
  columnType: number,
  characterSet: number,
  encoding: string,
  extra: Partial<MysqlRowField> = {},
) => ({
  name: `c${columnType}_${characterSet}_${extra.extendedFormat ?? ''}`,
  flags: 0,
  decimals: 0,
  columnType,
  characterSet,
  encoding,
  ...extra,
})

/** Every column kind mysql-source.ts can receive (dimsync selects FLOAT as DOUBLE and geometry as WKB bytes). */
const COLUMNS: Column[] = [
  ...[1, 2, 3, 9, 13].map((type) => ({ field: field(type, 63, 'binary'), value: nullable(intText) })),
  {
    field: field(8, 63, 'binary'),
    value: nullable(
      fc.oneof(
        intText,
        fc.bigInt().map((n) => ascii(String(n))),
      ),
    ),
  },
  { field: field(4, 63, 'binary'), value: nullable(doubleText) },
  { field: field(5, 63, 'binary'), value: nullable(doubleText) },
  { field: field(246, 63, 'binary'), value: nullable(fc.oneof(decimalText, bytes(8))) },
  { field: field(0, 63, 'binary'), value: nullable(decimalText) },
  ...[10, 12, 7, 11].map((type) => ({ field: field(type, 63, 'binary'), value: nullable(dateText) })),
  { field: field(253, 45, 'utf8'), value: nullable(textValue) },
  { field: field(252, 224, 'utf8'), value: nullable(textValue) },
  { field: field(254, 33, 'utf8'), value: nullable(textValue) },
  { field: field(252, 224, 'utf8', { extendedFormat: 'json' }), value: nullable(textValue) },
  { field: field(245, 63, 'binary'), value: nullable(textValue) },
  { field: field(253, 8, 'latin1'), value: nullable(textValue) },
  { field: field(253, 57, 'cp1256'), value: nullable(textValue) },
  { field: field(252, 63, 'binary'), value: nullable(bytes()) },
  { field: field(251, 63, 'binary'), value: nullable(bytes()) },
  { field: field(16, 63, 'binary'), value: nullable(bytes(8)) },
  { field: field(6, 63, 'binary'), value: fc.constant(null) },
]

function lengthCoded(value: Buffer | null): Buffer {
  if (value === null) return Buffer.from([0xfb])
  const n = value.length
  let head: Buffer
  if (n < 251) head = Buffer.from([n])
  else if (n < 1 << 16) head = Buffer.from([0xfc, n & 255, n >> 8])
  else if (n < 1 << 24) head = Buffer.from([0xfd, n & 255, (n >> 8) & 255, n >> 16])
  else throw new Error('too long for the test')
  return Buffer.concat([head, value])
}

/** A row packet as mysql2 holds it: 4 header bytes, then the length-coded values, inside a larger buffer. */
function packet(values: readonly (Buffer | null)[], pad: number): MysqlPacket {
  const body = Buffer.concat(values.map(lengthCoded))
  const buffer = Buffer.concat([Buffer.alloc(pad, 0xfb), Buffer.alloc(4), body, Buffer.alloc(3, 0x22)])
  return new Packet(0, buffer, pad, pad + 4 + body.length)
}

/** The bytes (or the error) of the old path and of the reader for the same rows. */
function both(columns: readonly Column[], rows: readonly (readonly (Buffer | null)[])[], flushBytes: number) {
  const fields = columns.map((column) => column.field)
  const Parser = getTextParser(fields, OPTIONS, CONFIG)
  const parser = new Parser(fields)
  const encoder = new RowCsvEncoder(flushBytes)
  const reader = new MysqlCsvRows(fields, flushBytes)
  const old: Buffer[] = []
  const now: Buffer[] = []
  let oldError: string | undefined
  let newError: string | undefined
  rows.forEach((values, r) => {
    if (oldError === undefined) {
      try {
        encoder.add(parser.next(packet(values, r % 7), fields, OPTIONS))
      } catch (error) {
        oldError = String(error)
      }
      if (encoder.full) old.push(encoder.take())
    }
    if (newError === undefined) {
      expect(reader.next(packet(values, r % 7))).toBe(CSV_ROW)
      if (reader.error !== undefined) newError = String(reader.error)
      if (reader.full) now.push(reader.take())
    }
  })
  old.push(encoder.take())
  now.push(reader.take())
  return {
    old: { bytes: Buffer.concat(old).toString('latin1'), error: oldError },
    now: { bytes: Buffer.concat(now).toString('latin1'), error: newError },
  }
}

const rowsOf = (columns: readonly Column[]) =>
  fc.array(fc.tuple(...columns.map((column) => column.value)), { maxLength: 12 })

describe('MysqlCsvRows stages exactly the bytes of mysql2 rows + RowCsvEncoder', () => {
  it('for random rows over every column kind', () => {
    fc.assert(
      fc.property(rowsOf(COLUMNS), fc.constantFrom(1, 64, 1 << 20), (rows, flushBytes) => {
        const { old, now } = both(COLUMNS, rows, flushBytes)
        expect(now).toEqual(old)
      }),
      { numRuns: 400 },
    )
  })

  it('for random column subsets and orders', () => {
    const subset = fc
      .array(fc.nat(COLUMNS.length - 1), { minLength: 1, maxLength: 6 })
      .map((indexes) => indexes.map((i) => COLUMNS[i]!))
    fc.assert(
      fc.property(
        subset.chain((columns) => fc.tuple(fc.constant(columns), rowsOf(columns))),
        ([columns, rows]) => {
          const { old, now } = both(columns, rows, 128)
          expect(now).toEqual(old)
        },
      ),
      { numRuns: 400 },
    )
  })

  it('for long values (2- and 3-byte lengths)', () => {
    const long = utf8(`${'é"x,'.repeat(20_000)}🌍`)
    const columns = [
      COLUMNS.find((c) => c.field.characterSet === 45)!,
      COLUMNS.find((c) => c.field.columnType === 251)!,
    ]
    for (const value of [long.subarray(0, 300), long, long.subarray(0, 65_535)]) {
      const { old, now } = both(
        columns,
        [
          [value, value],
          [null, long.subarray(1, 70_000)],
        ],
        1 << 10,
      )
      expect(now).toEqual(old)
    }
  })

  it('a value the encoder refuses (a geometry object) fails the same way, naming the column', () => {
    const columns: Column[] = [
      { field: field(3, 63, 'binary'), value: fc.constant(null) },
      { field: field(255, 63, 'binary'), value: fc.constant(null) },
    ]
    // WKB point (1, 2) after a 4-byte SRID.
    const point = Buffer.alloc(25)
    point.writeUInt8(1, 4)
    point.writeUInt32LE(1, 5)
    point.writeDoubleLE(1, 9)
    point.writeDoubleLE(2, 17)
    const { old, now } = both(
      columns,
      [
        [ascii('1'), null],
        [ascii('2'), point],
      ],
      1 << 20,
    )
    expect(old.error).toMatch(/cannot encode a Object as CSV \(column 2\)/)
    expect(now).toEqual(old)
  })
})

describe('installMysqlCsvRows', () => {
  /** mysql2's Query as far as the hook sees it: `fields` is emitted, then `_rowParser` is assigned. */
  class FakeQuery extends EventEmitter {
    _rowParser: unknown = null
    row(): void {}
    finishFields(fields: unknown): void {
      this.emit('fields', fields)
      this._rowParser = { next: () => ['parsed by mysql2'] }
    }
  }

  it('takes the place of the row parser mysql2 creates after `fields`', () => {
    const query = new FakeQuery()
    expect(isHookable(query)).toBe(true)
    const readers: MysqlCsvRows[] = []
    installMysqlCsvRows(query, (reader) => readers.push(reader))
    query.finishFields([COLUMNS[0]!.field])
    expect(readers).toHaveLength(1)
    expect(query._rowParser).toBe(readers[0])
    expect((query._rowParser as MysqlCsvRows).next(packet([ascii('42')], 0))).toBe(CSV_ROW)
    expect(readers[0]!.take().toString()).toBe('42\n')
  })

  it('leaves a statement without a result set (fields undefined) to mysql2', () => {
    const query = new FakeQuery()
    const readers: MysqlCsvRows[] = []
    installMysqlCsvRows(query, (reader) => readers.push(reader))
    query.finishFields(undefined)
    expect(readers).toHaveLength(0)
    expect(query._rowParser).toEqual({ next: expect.any(Function) })
  })

  it('is not applied to an object without the Query internals it relies on', () => {
    expect(isHookable(new EventEmitter())).toBe(false)
  })
})
