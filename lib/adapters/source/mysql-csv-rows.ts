/**
 * Turns mysql2's text-protocol row packets straight into the CSV bytes `RowCsvEncoder` writes for the row mysql2
 * would have parsed, without a JS value per field.
 *
 * A text-protocol row is one length-encoded byte string per column (0xFB is NULL). mysql2 (3.x) parses it with a
 * generated `TextRow` class whose `next(packet, fields, options)` returns the row; `Query` keeps that parser in
 * `_rowParser`, created right after it emits `fields`. `installMysqlCsvRows` puts a `MysqlCsvRows` there instead:
 * its `next` appends the row's CSV record to a byte buffer and returns `CSV_ROW`.
 *
 * Every column is read the way mysql2 reads it with the driver settings of mysql-source.ts (`dateStrings`,
 * `supportBigNumbers` + `bigNumberStrings`, `jsonStrings`, `decimalNumbers: false`, `rowsAsArray`, no `typeCast`)
 * and the value encoded as `RowCsvEncoder` encodes it. Bytes are copied where that gives the same bytes:
 * - integers (not BIGINT) are numbers: the digits are copied when already canonical (`String(n)` gives them back);
 * - DOUBLE (and FLOAT, selected as DOUBLE) is a number: the digits are copied when the text is a plain decimal of at
 *   most 15 significant digits (mysql2's exact integer / power of ten is then the nearest double, whose shortest
 *   form is that text), else `String(n)` of mysql2's own parse;
 * - BIGINT, DECIMAL, dates and times are ASCII strings: quoted;
 * - text in UTF-8 (and JSON) is quoted with `"` doubled, after a check that the bytes are valid UTF-8 (mysql2's
 *   decoder would replace invalid bytes by U+FFFD);
 * - binary strings (BLOB, BIT, binary charsets) are Buffers: quoted lowercase hex.
 * Anything else (other encodings, invalid UTF-8, non-canonical numbers, geometry) takes mysql2's own packet
 * method for the field and today's encoding of the value.
 */

import { MYSQL_BINARY_CHARSET, MYSQL_COLUMN_TYPES } from './db-types.ts'

/** The row value `MysqlCsvRows.next` returns to mysql2 (which emits it as the `result`). */
export const CSV_ROW = 1

/** The parts of mysql2's `Packet` that are read. */
export interface MysqlPacket {
  buffer: Buffer
  offset: number
  end: number
  readLengthCodedString(encoding: string): string | null
  readLengthCodedBuffer(): Buffer | null
  readLengthCodedNumber(): number | null
  parseLengthCodedIntNoBigCheck(): number | null
  parseLengthCodedFloat(): number | null
  parseGeometryValue(): unknown
  parseVector?(): unknown
}

/** The parts of mysql2's column definition that are read. */
export interface MysqlRowField {
  readonly columnType: number
  readonly characterSet: number
  readonly encoding?: string
  readonly extendedFormat?: string
}

const enum Kind {
  /** TINY, SHORT, LONG, INT24, YEAR: a number. */
  Int,
  /** DOUBLE, FLOAT: a number. */
  Float,
  /** BIGINT, DECIMAL, dates, times: an ASCII (latin1) string. */
  Ascii,
  /** Text in UTF-8 (and JSON): a string. */
  Utf8,
  /** A binary string: a Buffer. */
  Hex,
  /** Anything else: mysql2's packet method, today's encoding. */
  Other,
}

const T = MYSQL_COLUMN_TYPES
const BINARY_CHARSET = MYSQL_BINARY_CHARSET

type Read = (packet: MysqlPacket) => unknown

/** How mysql2 3.x reads a column with mysql-source.ts's settings (lib/parsers/text_parser.js `readCodeFor`). */
function plan(field: MysqlRowField): [Kind, Read] {
  const encoding = field.encoding ?? 'utf8'
  const text = (enc: string): [Kind, Read] => [
    enc === 'utf8' ? Kind.Utf8 : Kind.Other,
    (packet) => packet.readLengthCodedString(enc),
  ]
  if (field.extendedFormat === 'json') return text(encoding)
  switch (field.columnType) {
    case T.TINY:
    case T.SHORT:
    case T.LONG:
    case T.INT24:
    case T.YEAR:
      return [Kind.Int, (packet) => packet.parseLengthCodedIntNoBigCheck()]
    case T.LONGLONG:
      return [Kind.Ascii, (packet) => packet.readLengthCodedString('binary')]
    case T.FLOAT:
    case T.DOUBLE:
      return [Kind.Float, (packet) => packet.parseLengthCodedFloat()]
    case T.NULL:
      return [Kind.Other, (packet) => packet.readLengthCodedNumber()]
    case T.DECIMAL:
    case T.NEWDECIMAL:
    case T.DATE:
    case T.DATETIME:
    case T.TIMESTAMP:
    case T.TIME:
      return [Kind.Ascii, (packet) => packet.readLengthCodedString('ascii')]
    case T.GEOMETRY:
      return [Kind.Other, (packet) => packet.parseGeometryValue()]
    case T.VECTOR:
      return [Kind.Other, (packet) => packet.parseVector?.()]
    case T.JSON:
      return text('utf8')
    default:
      if (field.characterSet === BINARY_CHARSET) return [Kind.Hex, (packet) => packet.readLengthCodedBuffer()]
      return text(encoding)
  }
}

const HEX = Buffer.from('0123456789abcdef', 'latin1')
const QUOTE = 0x22
const COMMA = 0x2c
const NEWLINE = 0x0a
const QUOTES = /"/g

export class MysqlCsvRows {
  readonly #kinds: Kind[]
  readonly #reads: Read[]
  readonly #flushBytes: number
  #buffer: Buffer
  #length = 0
  /** The first value that cannot be encoded (the row is not added; mysql2 must not see a throw mid-result). */
  error: Error | undefined

  constructor(fields: readonly MysqlRowField[], flushBytes = 1 << 20) {
    const plans = fields.map(plan)
    this.#kinds = plans.map(([kind]) => kind)
    this.#reads = plans.map(([, read]) => read)
    this.#flushBytes = flushBytes
    this.#buffer = Buffer.allocUnsafe(flushBytes)
  }

  get full(): boolean {
    return this.#length >= this.#flushBytes
  }

  get length(): number {
    return this.#length
  }

  /** The encoded records so far, not copied: valid until the next `next` or `clear`. */
  records(): Buffer {
    return this.#buffer.subarray(0, this.#length)
  }

  /** Forgets the records (after `records()` were written). */
  clear(): void {
    this.#length = 0
    if (this.#buffer.length > this.#flushBytes * 4) this.#buffer = Buffer.allocUnsafe(this.#flushBytes)
  }

  /** The encoded records so far (a copy), and an empty buffer for the next ones. */
  take(): Buffer {
    const out = Buffer.from(this.#buffer.subarray(0, this.#length))
    this.#length = 0
    if (this.#buffer.length > this.#flushBytes * 4) this.#buffer = Buffer.allocUnsafe(this.#flushBytes)
    return out
  }

  /** mysql2's row parser interface: appends the packet's row as one CSV record. */
  next(packet: MysqlPacket): number {
    if (this.error !== undefined) return CSV_ROW
    const kinds = this.#kinds
    const columns = kinds.length
    const rowStart = this.#length
    // Every fast encoding writes at most 2 bytes per input byte plus 3 per field (quotes, comma).
    this.#reserve(2 * (packet.end - packet.offset) + 3 * columns + 32)
    let out = this.#buffer
    let o = rowStart
    let p = packet.offset
    for (let i = 0; i < columns; i++) {
      if (i > 0) out[o++] = COMMA
      const buf = packet.buffer
      const lead = buf[p]!
      let len: number
      if (lead < 0xfb) {
        len = lead
        p += 1
      } else if (lead === 0xfb) {
        p += 1
        continue
      } else if (lead === 0xfc) {
        len = buf[p + 1]! | (buf[p + 2]! << 8)
        p += 3
      } else if (lead === 0xfd) {
        len = buf[p + 1]! | (buf[p + 2]! << 8) | (buf[p + 3]! << 16)
        p += 4
      } else {
        len = buf.readUInt32LE(p + 1) + buf.readUInt32LE(p + 5) * 0x100000000
        p += 9
      }
      const start = p
      const end = p + len
      const kind = kinds[i]!
      let done = -1
      if (kind === Kind.Utf8 || kind === Kind.Ascii) {
        // The common case inline: ASCII without a quote, copied as it is between quotes.
        out[o] = QUOTE
        let q = o + 1
        let j = start
        for (; j < end; j++) {
          const b = buf[j]!
          if (b >= 0x80 || b === QUOTE) break
          out[q++] = b
        }
        if (j === end) {
          out[q] = QUOTE
          done = q + 1
        } else if (kind === Kind.Utf8) done = copyUtf8(buf, j, end, out, q)
      } else if (kind === Kind.Int) done = copyInt(buf, start, end, out, o)
      else if (kind === Kind.Float) done = copyFloat(buf, start, end, out, o)
      else if (kind === Kind.Hex) {
        out[o] = QUOTE
        let q = o + 1
        for (let j = start; j < end; j++) {
          const b = buf[j]!
          out[q++] = HEX[b >> 4]!
          out[q++] = HEX[b & 15]!
        }
        out[q] = QUOTE
        done = q + 1
      }
      if (done >= 0) {
        o = done
        p = end
        continue
      }
      // mysql2's own read of the field, and today's encoding of its value.
      packet.offset = start - lengthBytes(lead)
      let value: unknown
      try {
        value = this.#reads[i]!(packet)
      } catch (error) {
        this.error = error as Error
        this.#length = rowStart
        return CSV_ROW
      }
      p = packet.offset
      const text = valueText(value)
      if (text === undefined) {
        this.error = new TypeError(`cannot encode a ${describe(value)} as CSV (column ${i + 1})`)
        this.#length = rowStart
        return CSV_ROW
      }
      this.#length = o
      this.#reserve(text.length * 3 + 2 * (packet.end - p) + 3 * columns + 32)
      out = this.#buffer
      o += out.write(text, o, 'utf8')
    }
    out[o++] = NEWLINE
    this.#length = o
    return CSV_ROW
  }

  #reserve(bytes: number): void {
    if (this.#length + bytes <= this.#buffer.length) return
    const next = Buffer.allocUnsafe(Math.max(this.#length + bytes, this.#buffer.length * 2))
    this.#buffer.copy(next, 0, 0, this.#length)
    this.#buffer = next
  }
}

function lengthBytes(lead: number): number {
  return lead < 0xfb ? 1 : lead === 0xfc ? 3 : lead === 0xfd ? 4 : 9
}

/** The field text today's RowCsvEncoder writes for a value, or undefined for a value it refuses. */
function valueText(value: unknown): string | undefined {
  if (value === null || value === undefined) return ''
  if (typeof value === 'string')
    return value.indexOf('"') === -1 ? `"${value}"` : `"${value.replace(QUOTES, '""')}"`
  if (typeof value === 'number' || typeof value === 'bigint') return String(value)
  if (Buffer.isBuffer(value)) return `"${value.toString('hex')}"`
  return undefined
}

function describe(value: unknown): string {
  if (value instanceof Date) return 'Date (the driver must return dates as strings)'
  return typeof value === 'object' ? (value?.constructor?.name ?? 'object') : typeof value
}

/**
 * The rest of a quoted text field from `start` (the opening quote and the bytes before `start` are written):
 * `"` doubled, then the closing quote, when the bytes are valid UTF-8; else -1.
 */
function copyUtf8(buf: Buffer, start: number, end: number, out: Buffer, o: number): number {
  let j = start
  while (j < end) {
    const b = buf[j]!
    if (b < 0x80) {
      out[o++] = b
      if (b === QUOTE) out[o++] = QUOTE
      j++
      continue
    }
    // Well-formed sequences (Unicode table 3-7), the ones a decoder keeps as they are.
    let n: number
    if (b >= 0xc2 && b <= 0xdf) n = 2
    else if (b >= 0xe0 && b <= 0xef) n = 3
    else if (b >= 0xf0 && b <= 0xf4) n = 4
    else return -1
    if (j + n > end) return -1
    const b1 = buf[j + 1]!
    const low = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80
    const high = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf
    if (b1 < low || b1 > high) return -1
    if (n > 2 && (buf[j + 2]! & 0xc0) !== 0x80) return -1
    if (n > 3 && (buf[j + 3]! & 0xc0) !== 0x80) return -1
    out[o++] = b
    out[o++] = b1
    if (n > 2) out[o++] = buf[j + 2]!
    if (n > 3) out[o++] = buf[j + 3]!
    j += n
  }
  out[o++] = QUOTE
  return o
}

const isDigit = (b: number) => b >= 0x30 && b <= 0x39

/** The digits when `String(n)` of mysql2's integer gives them back: `0` or `-?[1-9][0-9]{0,14}`; else -1. */
function copyInt(buf: Buffer, start: number, end: number, out: Buffer, o: number): number {
  const negative = buf[start] === 0x2d
  const first = negative ? start + 1 : start
  const digits = end - first
  if (digits < 1 || digits > 15) return -1
  if (buf[first] === 0x30 && (digits > 1 || negative)) return -1
  for (let j = first; j < end; j++) if (!isDigit(buf[j]!)) return -1
  for (let j = start; j < end; j++) out[o++] = buf[j]!
  return o
}

/**
 * The text when `String(n)` of mysql2's float gives it back: `-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?`, at most 15
 * significant digits, at most 15 integer digits, and not below 1e-6 (JavaScript writes smaller numbers with an
 * exponent); not `-0`. mysql2 divides the exact integer of all digits by an exact power of ten (the one correctly
 * rounded operation), so the number is the nearest double to the text, and a text of at most 15 significant
 * digits is the shortest that reads back as that double. Else -1.
 */
function copyFloat(buf: Buffer, start: number, end: number, out: Buffer, o: number): number {
  const negative = buf[start] === 0x2d
  const first = negative ? start + 1 : start
  let j = first
  while (j < end && isDigit(buf[j]!)) j++
  const intDigits = j - first
  if (intDigits < 1 || intDigits > 15) return -1
  const intZero = buf[first] === 0x30
  if (intZero && intDigits > 1) return -1
  let significant = intZero ? 0 : intDigits
  if (j < end) {
    if (buf[j] !== 0x2e) return -1
    j++
    const fraction = j
    while (j < end && isDigit(buf[j]!)) j++
    if (j !== end || j === fraction || buf[end - 1] === 0x30) return -1
    if (intZero) {
      let zeros = fraction
      while (buf[zeros] === 0x30) zeros++
      if (zeros - fraction > 5) return -1
      significant = end - zeros
    } else significant += end - fraction
  } else if (intZero && negative) return -1
  if (significant > 15) return -1
  for (let k = start; k < end; k++) out[o++] = buf[k]!
  return o
}

/**
 * Makes `query` (a mysql2 Query, text protocol) hand its rows to a `MysqlCsvRows` made for its fields: the rows it
 * emits as `result` are then `CSV_ROW`, their records in the reader. `onReader` is called with the reader (before
 * the first row). Relies on mysql2 3.x internals (`_rowParser`, set right after `fields`); `isHookable` tells
 * whether they look as expected.
 */
export function installMysqlCsvRows(
  query: NodeJS.EventEmitter,
  onReader: (reader: MysqlCsvRows) => void,
  flushBytes?: number,
): void {
  query.once('fields', (fields: MysqlRowField[] | undefined) => {
    // No fields: a statement without a result set (mysql2 emits `fields` with nothing); its rows stay as they are.
    if (!Array.isArray(fields)) return
    const reader = new MysqlCsvRows(fields, flushBytes)
    Object.defineProperty(query, '_rowParser', {
      configurable: true,
      get: () => reader,
      set: () => undefined,
    })
    onReader(reader)
  })
}

/** True when `query` looks like the mysql2 3.x Query this module hooks into. */
export function isHookable(query: object): boolean {
  return '_rowParser' in query && typeof (query as { row?: unknown }).row === 'function'
}
