import {
  BigQueryDate,
  BigQueryDatetime,
  BigQueryTime,
  BigQueryTimestamp,
  Geography,
} from '@google-cloud/bigquery'
import type { Row } from '../../ports/warehouse.ts'

/**
 * INT64 values as the client hands them over (`wrapIntegers`): a number when it is exact, else its decimal text,
 * so keys and surrogate keys above 2^53 are never rounded.
 */
export const INTEGER_VALUES = Object.freeze({
  integerTypeCastFunction: (value: string): number | string =>
    Number.isSafeInteger(Number(value)) ? Number(value) : value,
})

/**
 * A result row in the forms the DuckDB warehouse answers, so that history reads the same from both: TIMESTAMP
 * as `YYYY-MM-DD HH:MM:SS[.ffffff]+00` (UTC), DATETIME as `YYYY-MM-DD HH:MM:SS[.ffffff]`, TIME as `HH:MM:SS[.ffffff]`
 * (trailing zeros of the fraction dropped), NUMERIC and BIGNUMERIC as decimal text (BigQuery keeps no scale:
 * `1.50` reads `1.5`), BYTES as text with `\xHH` escapes, arrays and structs as JSON.
 */
export function toRow(row: Record<string, unknown>): Row {
  const out: Row = {}
  for (const [key, value] of Object.entries(row)) out[key] = toCell(value)
  return out
}

function toCell(value: unknown): string | number | boolean | null {
  if (value === null || value === undefined) return null
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : String(value)
  if (value instanceof BigQueryTimestamp) return timestampText(value.value)
  if (value instanceof BigQueryDatetime) return trimFraction(value.value.replace('T', ' '))
  if (value instanceof BigQueryTime) return trimFraction(value.value)
  if (value instanceof BigQueryDate || value instanceof Geography) return value.value
  if (Buffer.isBuffer(value)) return bytesText(value)
  if (isDecimal(value)) return value.toFixed()
  return JSON.stringify(value)
}

/** `2024-03-10T14:30:00.123456000Z` → `2024-03-10 14:30:00.123456+00`. */
function timestampText(iso: string): string {
  const m = /^(\d{4,}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z$/.exec(iso)
  return m === null ? iso : `${m[1]} ${trimFraction(m[2]!)}+00`
}

function trimFraction(text: string): string {
  return text.replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '')
}

/** DuckDB's text of a BLOB: printable ASCII as is except quotes, every other byte as `\xHH`. */
function bytesText(bytes: Buffer): string {
  let out = ''
  for (const byte of bytes) {
    const plain = byte >= 0x20 && byte < 0x7f && byte !== 0x27 && byte !== 0x22
    out += plain ? String.fromCharCode(byte) : `\\x${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/** NUMERIC and BIGNUMERIC values arrive as big.js numbers (the client's dependency, not ours). */
function isDecimal(value: unknown): value is { toFixed(): string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    value.constructor?.name === 'Big' &&
    typeof (value as { toFixed?: unknown }).toFixed === 'function'
  )
}
