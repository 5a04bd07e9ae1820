import type { Proto } from './zetasql-service.ts'

/**
 * Values are kept as ZetaSQL ValueProto objects (what the reference implementation reads and answers), so a
 * table's cells go back to ZetaSQL unchanged. This file converts them to BigQuery's REST form and builds them
 * from text. A NULL is a ValueProto with no value set.
 */
export type Value = Proto

export const NULL_VALUE: Value = Object.freeze({})

export function isNull(value: Value): boolean {
  return value === null || value === undefined || valueField(value) === undefined
}

/** The set field of a ValueProto (`int64Value`, `stringValue`, ...), or undefined for NULL. */
function valueField(value: Value): string | undefined {
  if (typeof value.value === 'string' && value[value.value] !== undefined && value[value.value] !== null)
    return value.value
  for (const key of Object.keys(value))
    if (key.endsWith('Value') && value[key] !== null && value[key] !== undefined) return key
  return undefined
}

const NUMERIC_SCALE = 9
const BIGNUMERIC_SCALE = 38
const MICROS_PER_SECOND = 1_000_000n

// ---- decimals: two's complement little-endian integers of the value times 10^scale ---------------------------

function decodeScaledInteger(bytes: Uint8Array): bigint {
  let result = 0n
  for (let i = bytes.length - 1; i >= 0; i--) result = (result << 8n) | BigInt(bytes[i]!)
  if (bytes.length > 0 && bytes[bytes.length - 1]! & 0x80) result -= 1n << BigInt(8 * bytes.length)
  return result
}

function encodeScaledInteger(value: bigint): Buffer {
  const bytes: number[] = []
  let rest = value
  for (;;) {
    const byte = Number(rest & 0xffn)
    bytes.push(byte)
    rest >>= 8n
    const signBitClear = (byte & 0x80) === 0
    if ((rest === 0n && signBitClear) || (rest === -1n && !signBitClear)) break
  }
  return Buffer.from(bytes)
}

function decimalText(scaled: bigint, scale: number): string {
  const negative = scaled < 0n
  const digits = (negative ? -scaled : scaled).toString().padStart(scale + 1, '0')
  const whole = digits.slice(0, digits.length - scale)
  const fraction = digits.slice(digits.length - scale).replace(/0+$/, '')
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`
}

function scaledInteger(text: string, scale: number): bigint {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim())
  if (m === null || (m[2] === '' && (m[3] ?? '') === '')) throw new Error(`not a decimal: ${text}`)
  const exponent = Number(m[4] ?? 0)
  let digits = (m[2] ?? '') + (m[3] ?? '')
  let point = (m[2] ?? '').length + exponent
  if (point < 0) {
    digits = '0'.repeat(-point) + digits
    point = 0
  }
  digits = digits.padEnd(point + scale, '0')
  const kept = digits.slice(0, point + scale)
  // Round half away from zero on the first dropped digit, as BigQuery does when a value has too much scale.
  const roundUp = Number(digits[point + scale] ?? '0') >= 5
  const magnitude = BigInt(kept === '' ? '0' : kept) + (roundUp ? 1n : 0n)
  return m[1] === '-' ? -magnitude : magnitude
}

// ---- civil times: ZetaSQL's bit-field encodings ----------------------------------------------------------------

interface Civil {
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
  nanos: number
}

function decodeDatetime(value: Proto): Civil {
  const bits = BigInt(value.bitFieldDatetimeSeconds)
  return {
    year: Number((bits >> 26n) & 0x3fffn),
    month: Number((bits >> 22n) & 0xfn),
    day: Number((bits >> 17n) & 0x1fn),
    hour: Number((bits >> 12n) & 0x1fn),
    minute: Number((bits >> 6n) & 0x3fn),
    second: Number(bits & 0x3fn),
    nanos: Number(value.nanos ?? 0),
  }
}

function encodeDatetime(c: Civil): Proto {
  const bits =
    (BigInt(c.year) << 26n) |
    (BigInt(c.month) << 22n) |
    (BigInt(c.day) << 17n) |
    (BigInt(c.hour) << 12n) |
    (BigInt(c.minute) << 6n) |
    BigInt(c.second)
  return { bitFieldDatetimeSeconds: bits.toString(), nanos: c.nanos }
}

function decodeTime(bitsText: string): Omit<Civil, 'year' | 'month' | 'day'> {
  const bits = BigInt(bitsText)
  return {
    hour: Number((bits >> 42n) & 0x1fn),
    minute: Number((bits >> 36n) & 0x3fn),
    second: Number((bits >> 30n) & 0x3fn),
    nanos: Number(bits & 0x3fffffffn),
  }
}

function encodeTime(hour: number, minute: number, second: number, nanos: number): string {
  return (
    (BigInt(hour) << 42n) |
    (BigInt(minute) << 36n) |
    (BigInt(second) << 30n) |
    BigInt(nanos)
  ).toString()
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

function fractionText(nanos: number): string {
  if (nanos === 0) return ''
  return `.${pad(Math.floor(nanos / 1000), 6)}`.replace(/0+$/, '')
}

function clockText(hour: number, minute: number, second: number, nanos: number): string {
  return `${pad(hour)}:${pad(minute)}:${pad(second)}${fractionText(nanos)}`
}

function dateOfDays(days: number): string {
  const d = new Date(days * 86_400_000)
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
}

/** Date.UTC without its quirk of reading years 0-99 as 1900-1999. */
function utcMillis(year: number, month: number, day: number, hour = 0, minute = 0, second = 0): number {
  const d = new Date(0)
  d.setUTCFullYear(year, month, day)
  d.setUTCHours(hour, minute, second, 0)
  return d.getTime()
}

function daysOfDate(text: string): number {
  const m = /^(\d{1,4})-(\d{1,2})-(\d{1,2})$/.exec(text.trim())
  if (m === null) throw new Error(`not a date: ${text}`)
  return Math.round(utcMillis(Number(m[1]), Number(m[2]) - 1, Number(m[3])) / 86_400_000)
}

/** Microseconds since the epoch of a TIMESTAMP ValueProto. */
export function timestampMicros(value: Proto): bigint {
  const t = value.timestampValue
  return BigInt(t.seconds) * MICROS_PER_SECOND + BigInt(Math.floor(Number(t.nanos ?? 0) / 1000))
}

export function timestampOfMicros(micros: bigint): Value {
  let seconds = micros / MICROS_PER_SECOND
  let rest = micros % MICROS_PER_SECOND
  if (rest < 0n) {
    rest += MICROS_PER_SECOND
    seconds -= 1n
  }
  return { timestampValue: { seconds: seconds.toString(), nanos: Number(rest) * 1000 } }
}

/** `2024-03-10 14:30:00.123456+00` (the canonical text BigQuery prints for a TIMESTAMP in UTC). */
function timestampText(micros: bigint): string {
  const seconds = micros / MICROS_PER_SECOND - (micros % MICROS_PER_SECOND < 0n ? 1n : 0n)
  const fraction = Number(micros - seconds * MICROS_PER_SECOND)
  const d = new Date(Number(seconds) * 1000)
  return (
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${clockText(d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), fraction * 1000)}+00`
  )
}

// ---- REST form ---------------------------------------------------------------------------------------------------

export interface RestFormat {
  /** `formatOptions.useInt64Timestamp`: TIMESTAMP as microseconds (the Node client asks for it). */
  readonly int64Timestamp: boolean
}

/**
 * A cell as BigQuery's REST API writes it in `rows[].f[].v`: scalars as strings (INT64 and NUMERIC in decimal,
 * BYTES in base64, TIMESTAMP as float seconds or int64 microseconds), arrays as `[{v}]`, structs as `{f: [{v}]}`.
 */
export function restValue(type: Proto, value: Value, format: RestFormat): unknown {
  if (isNull(value)) return type.typeKind === 'TYPE_ARRAY' ? [] : null
  switch (type.typeKind) {
    case 'TYPE_ARRAY':
      return (value.arrayValue.element ?? []).map((e: Value) => ({
        v: restValue(type.arrayType.elementType, e, format),
      }))
    case 'TYPE_STRUCT':
      return {
        f: (type.structType.field ?? []).map((f: Proto, i: number) => ({
          v: restValue(f.fieldType, value.structValue.field[i] ?? NULL_VALUE, format),
        })),
      }
    case 'TYPE_TIMESTAMP': {
      const micros = timestampMicros(value)
      if (format.int64Timestamp) return micros.toString()
      return (Number(micros) / 1e6).toExponential().replace('e+', 'E').replace('e-', 'E-')
    }
    case 'TYPE_DATETIME': {
      const c = decodeDatetime(value.datetimeValue)
      return `${pad(c.year, 4)}-${pad(c.month)}-${pad(c.day)}T${clockText(c.hour, c.minute, c.second, c.nanos)}`
    }
    default:
      return scalarText(type, value)
  }
}

/**
 * A scalar as text: what `CAST(x AS STRING)` gives in BigQuery for most types; BYTES in base64 (the REST form),
 * TIMESTAMP as `YYYY-MM-DD HH:MM:SS[.ffffff]+00`.
 */
export function scalarText(type: Proto, value: Value): string {
  switch (type.typeKind) {
    case 'TYPE_INT64':
      return String(value.int64Value)
    case 'TYPE_DOUBLE': {
      const n = Number(value.doubleValue)
      if (Number.isNaN(n)) return 'NaN'
      if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity'
      return String(n)
    }
    case 'TYPE_BOOL':
      return value.boolValue ? 'true' : 'false'
    case 'TYPE_STRING':
      return String(value.stringValue)
    case 'TYPE_BYTES':
      return Buffer.from(value.bytesValue).toString('base64')
    case 'TYPE_NUMERIC':
      return decimalText(decodeScaledInteger(value.numericValue), NUMERIC_SCALE)
    case 'TYPE_BIGNUMERIC':
      return decimalText(decodeScaledInteger(value.bignumericValue), BIGNUMERIC_SCALE)
    case 'TYPE_DATE':
      return dateOfDays(Number(value.dateValue))
    case 'TYPE_TIME': {
      const t = decodeTime(value.timeValue)
      return clockText(t.hour, t.minute, t.second, t.nanos)
    }
    case 'TYPE_DATETIME': {
      const c = decodeDatetime(value.datetimeValue)
      return `${pad(c.year, 4)}-${pad(c.month)}-${pad(c.day)} ${clockText(c.hour, c.minute, c.second, c.nanos)}`
    }
    case 'TYPE_TIMESTAMP':
      return timestampText(timestampMicros(value))
    case 'TYPE_JSON':
      return String(value.jsonValue)
    default:
      throw new Error(`the BigQuery emulator cannot render ${type.typeKind}`)
  }
}

/**
 * A scalar ValueProto from text: decimal integers and decimals, `true`/`false`, `YYYY-MM-DD`,
 * `HH:MM:SS[.f]`, `YYYY-MM-DD[ T]HH:MM:SS[.f]`; TIMESTAMP from microseconds since the epoch (an integer) or an
 * ISO instant; BYTES from base64. Throws on text that does not fit the type.
 */
export function valueFromText(type: Proto, text: string | null): Value {
  if (text === null) return NULL_VALUE
  switch (type.typeKind) {
    case 'TYPE_INT64':
      if (!/^[+-]?\d+$/.test(text.trim())) throw new Error(`not an INT64: ${text}`)
      return { int64Value: BigInt(text.trim()).toString() }
    case 'TYPE_DOUBLE':
      return { doubleValue: Number(text) }
    case 'TYPE_BOOL':
      if (!/^(true|false)$/i.test(text.trim())) throw new Error(`not a BOOL: ${text}`)
      return { boolValue: text.trim().toLowerCase() === 'true' }
    case 'TYPE_STRING':
      return { stringValue: text }
    case 'TYPE_BYTES':
      return { bytesValue: Buffer.from(text, 'base64') }
    case 'TYPE_NUMERIC':
      return { numericValue: encodeScaledInteger(scaledInteger(text, NUMERIC_SCALE)) }
    case 'TYPE_BIGNUMERIC':
      return { bignumericValue: encodeScaledInteger(scaledInteger(text, BIGNUMERIC_SCALE)) }
    case 'TYPE_DATE':
      return { dateValue: daysOfDate(text) }
    case 'TYPE_TIME': {
      const m = /^(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/.exec(text.trim())
      if (m === null) throw new Error(`not a TIME: ${text}`)
      const nanos = Number((m[4] ?? '').padEnd(9, '0'))
      return { timeValue: encodeTime(Number(m[1]), Number(m[2]), Number(m[3]), nanos) }
    }
    case 'TYPE_DATETIME': {
      const m = /^(\d{1,4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?$/.exec(
        text.trim(),
      )
      if (m === null) throw new Error(`not a DATETIME: ${text}`)
      return {
        datetimeValue: encodeDatetime({
          year: Number(m[1]),
          month: Number(m[2]),
          day: Number(m[3]),
          hour: Number(m[4] ?? 0),
          minute: Number(m[5] ?? 0),
          second: Number(m[6] ?? 0),
          nanos: Number((m[7] ?? '').padEnd(9, '0')),
        }),
      }
    }
    case 'TYPE_TIMESTAMP': {
      const trimmed = text.trim()
      if (/^[+-]?\d+$/.test(trimmed)) return timestampOfMicros(BigInt(trimmed))
      const m =
        /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|UTC|[+-]\d{2}(?::?\d{2})?)?$/i.exec(
          trimmed,
        )
      if (m === null) throw new Error(`not a TIMESTAMP: ${text}`)
      const seconds = utcMillis(
        Number(m[1]),
        Number(m[2]) - 1,
        Number(m[3]),
        Number(m[4] ?? 0),
        Number(m[5] ?? 0),
        Number(m[6] ?? 0),
      )
      let offsetMinutes = 0
      const zone = m[8]
      if (zone !== undefined && !/^(Z|UTC)$/i.test(zone)) {
        const sign = zone.startsWith('-') ? -1 : 1
        const digits = zone.slice(1).replace(':', '')
        offsetMinutes = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || 0))
      }
      const micros =
        BigInt(seconds - offsetMinutes * 60_000) * 1000n +
        BigInt(Number((m[7] ?? '').padEnd(9, '0').slice(0, 6)))
      return timestampOfMicros(micros)
    }
    case 'TYPE_JSON':
      return { jsonValue: text }
    default:
      throw new Error(`the BigQuery emulator cannot read ${type.typeKind} from text`)
  }
}

/**
 * BigQuery's logical size of a value (what on-demand pricing counts): 8 bytes for INT64, FLOAT64 and the time
 * types, 1 for BOOL, 16 for NUMERIC, 32 for BIGNUMERIC, 2 + UTF-8 length for STRING, 2 + length for BYTES,
 * 0 for NULL; arrays and structs the sum of their parts.
 */
export function logicalBytes(type: Proto, value: Value): number {
  if (isNull(value)) return 0
  switch (type.typeKind) {
    case 'TYPE_INT64':
    case 'TYPE_DOUBLE':
    case 'TYPE_DATE':
    case 'TYPE_TIME':
    case 'TYPE_DATETIME':
    case 'TYPE_TIMESTAMP':
      return 8
    case 'TYPE_BOOL':
      return 1
    case 'TYPE_NUMERIC':
      return 16
    case 'TYPE_BIGNUMERIC':
      return 32
    case 'TYPE_STRING':
      return 2 + Buffer.byteLength(String(value.stringValue))
    case 'TYPE_BYTES':
      return 2 + Buffer.from(value.bytesValue).length
    case 'TYPE_JSON':
      return Buffer.byteLength(String(value.jsonValue))
    case 'TYPE_ARRAY':
      return (value.arrayValue.element ?? []).reduce(
        (sum: number, e: Value) => sum + logicalBytes(type.arrayType.elementType, e),
        0,
      )
    case 'TYPE_STRUCT':
      return (type.structType.field ?? []).reduce(
        (sum: number, f: Proto, i: number) =>
          sum + logicalBytes(f.fieldType, value.structValue.field[i] ?? NULL_VALUE),
        0,
      )
    default:
      return 8
  }
}
