/**
 * Encodes driver rows (arrays of string, number, bigint, Buffer or null) as RFC 4180 CSV records straight into a
 * reusable byte buffer. Writing each record with `Buffer.write` is what keeps this fast: building one large JS
 * string and encoding it afterwards costs more than the driver's own parsing.
 *
 * Encoding: NULL is an empty unquoted field; a string is always quoted (`"` doubled), so the empty string `""`
 * stays distinct from NULL; numbers and bigints as their decimal text; bytes as quoted lowercase hex (so empty bytes stay distinct from NULL too).
 */

const QUOTE = /"/g

export class RowCsvEncoder {
  #buffer: Buffer
  #length = 0
  readonly #flushBytes: number

  /** `flushBytes`: size at which `full` turns true (the buffer grows past it for one large record). */
  constructor(flushBytes = 1 << 20) {
    this.#flushBytes = flushBytes
    this.#buffer = Buffer.allocUnsafe(flushBytes)
  }

  /** True once the encoded records reach the flush size: take them with `take()`. */
  get full(): boolean {
    return this.#length >= this.#flushBytes
  }

  get length(): number {
    return this.#length
  }

  /** Appends one record. Throws a TypeError for a value of another kind (a driver setting gone wrong). */
  add(row: readonly unknown[]): void {
    let line = ''
    for (let i = 0; i < row.length; i++) {
      if (i > 0) line += ','
      const value = row[i]
      if (value === null || value === undefined) continue
      if (typeof value === 'string') {
        line += value.indexOf('"') === -1 ? `"${value}"` : `"${value.replace(QUOTE, '""')}"`
      } else if (typeof value === 'number' || typeof value === 'bigint') {
        line += String(value)
      } else if (Buffer.isBuffer(value)) {
        line += `"${value.toString('hex')}"`
      } else {
        throw new TypeError(`cannot encode a ${describe(value)} as CSV (column ${i + 1})`)
      }
    }
    line += '\n'
    // A UTF-16 code unit is at most 3 UTF-8 bytes.
    const worst = line.length * 3
    if (this.#length + worst > this.#buffer.length) this.#grow(this.#length + worst)
    this.#length += this.#buffer.write(line, this.#length, 'utf8')
  }

  /** The encoded records so far (a copy), and an empty buffer for the next ones. */
  take(): Buffer {
    const out = Buffer.from(this.#buffer.subarray(0, this.#length))
    this.#length = 0
    if (this.#buffer.length > this.#flushBytes * 4) this.#buffer = Buffer.allocUnsafe(this.#flushBytes)
    return out
  }

  #grow(needed: number): void {
    const next = Buffer.allocUnsafe(Math.max(needed, this.#buffer.length * 2))
    this.#buffer.copy(next, 0, 0, this.#length)
    this.#buffer = next
  }
}

function describe(value: unknown): string {
  if (value instanceof Date) return 'Date (the driver must return dates as strings)'
  return typeof value === 'object' ? (value?.constructor?.name ?? 'object') : typeof value
}
