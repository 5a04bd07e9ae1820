/**
 * The canonical text of a JSON document: the text BigQuery gives its JSON type (`TO_JSON_STRING`, ZetaSQL's
 * serializer), so that DuckDB stores and hashes the very text BigQuery hashes, and a document whose keys were
 * reordered or re-spaced (PostgreSQL `json` keeps its input text; `jsonb` and MySQL print `{"a": 1}` with spaces)
 * is one value on both warehouses. Pure, no I/O.
 *
 * - no insignificant white space; object keys in code point order (UTF-8 byte order); of duplicate keys the
 *   first is kept, as BigQuery keeps it (PostgreSQL `jsonb` keeps the last);
 * - strings escape `"`, `\`, and control characters (`\b \f \n \r \t`, others `\u00XX`); everything else as is;
 * - whole numbers that fit a signed or unsigned 64-bit integer in decimal digits (`-0` is `0`); other numbers as
 *   BigQuery prints a double (`2.5`, `100.0`, `1e-05`, `1e+16`, `1e+20` for `100000000000000000000`) when the
 *   double is the number exactly as written (`2.50`, `1e2`, `0.1`); a number no double or 64-bit integer holds as
 *   written (`0.10000000000000001`, `1e400`, `18446744073709551616`) keeps its text: BigQuery refuses it, and
 *   DuckDB keeps it exact.
 *
 * Text that is not one JSON document is returned unchanged (the staging cast to JSON reports it).
 */
export function canonicalJson(text: string): string {
  try {
    const parser = new Parser(text)
    const value = parser.document()
    return write(value)
  } catch (error) {
    if (error instanceof NotCanonical) return text
    throw error
  }
}

type JsonValue =
  | { readonly kind: 'object'; readonly entries: ReadonlyMap<string, JsonValue> }
  | { readonly kind: 'array'; readonly items: readonly JsonValue[] }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'number'; readonly token: string }
  | { readonly kind: 'literal'; readonly token: 'true' | 'false' | 'null' }

/** The text has no canonical form (not JSON, or a string no UTF-8 holds): it is kept as it is. */
class NotCanonical extends Error {}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const SURROGATE = /[\uD800-\uDFFF]/
const WHITE_SPACE = new Set([' ', '\t', '\n', '\r'])
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const SHORT_ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
}

class Parser {
  #at = 0
  constructor(readonly text: string) {}

  document(): JsonValue {
    const value = this.#value()
    this.#space()
    if (this.#at !== this.text.length) throw new NotCanonical()
    return value
  }

  #space(): void {
    while (WHITE_SPACE.has(this.text[this.#at] ?? '')) this.#at++
  }

  #value(): JsonValue {
    this.#space()
    const c = this.text[this.#at]
    if (c === '{') return this.#object()
    if (c === '[') return this.#array()
    if (c === '"') return { kind: 'string', value: this.#string() }
    const literal = c === 't' ? 'true' : c === 'f' ? 'false' : c === 'n' ? 'null' : undefined
    if (literal !== undefined) {
      if (!this.text.startsWith(literal, this.#at)) throw new NotCanonical()
      this.#at += literal.length
      return { kind: 'literal', token: literal }
    }
    NUMBER.lastIndex = this.#at
    const number = NUMBER.exec(this.text)
    if (number === null) throw new NotCanonical()
    this.#at += number[0].length
    return { kind: 'number', token: number[0] }
  }

  #object(): JsonValue {
    this.#at++
    const entries = new Map<string, JsonValue>()
    this.#space()
    if (this.text[this.#at] === '}') {
      this.#at++
      return { kind: 'object', entries }
    }
    for (;;) {
      this.#space()
      if (this.text[this.#at] !== '"') throw new NotCanonical()
      const key = this.#string()
      this.#space()
      if (this.text[this.#at++] !== ':') throw new NotCanonical()
      const value = this.#value()
      if (!entries.has(key)) entries.set(key, value)
      this.#space()
      const next = this.text[this.#at++]
      if (next === '}') return { kind: 'object', entries }
      if (next !== ',') throw new NotCanonical()
    }
  }

  #array(): JsonValue {
    this.#at++
    const items: JsonValue[] = []
    this.#space()
    if (this.text[this.#at] === ']') {
      this.#at++
      return { kind: 'array', items }
    }
    for (;;) {
      items.push(this.#value())
      this.#space()
      const next = this.text[this.#at++]
      if (next === ']') return { kind: 'array', items }
      if (next !== ',') throw new NotCanonical()
    }
  }

  #string(): string {
    this.#at++
    let out = ''
    for (;;) {
      // A run of plain characters at once (most strings are nothing else).
      const end = plainRunEnd(this.text, this.#at)
      out += this.text.slice(this.#at, end)
      this.#at = end
      const c = this.text[this.#at++]
      if (c === undefined || c < ' ') throw new NotCanonical()
      if (c === '"') break
      if (c !== '\\') {
        out += c
        continue
      }
      const e = this.text[this.#at++] ?? ''
      if (e === 'u') {
        const hex = this.text.slice(this.#at, this.#at + 4)
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new NotCanonical()
        out += String.fromCharCode(parseInt(hex, 16))
        this.#at += 4
      } else if (SHORT_ESCAPES[e] !== undefined) out += SHORT_ESCAPES[e]
      else throw new NotCanonical()
    }
    // A lone surrogate (`"\ud800"`) is no Unicode text: BigQuery refuses it, its text is kept.
    if (LONE_SURROGATE.test(out)) throw new NotCanonical()
    return out
  }
}

function write(value: JsonValue): string {
  switch (value.kind) {
    case 'object': {
      const keys = [...value.entries.keys()]
      // Without surrogates, JavaScript's default order (UTF-16 code units) is code point order.
      keys.sort(keys.some((k) => SURROGATE.test(k)) ? byCodePoint : undefined)
      return `{${keys.map((k) => `${writeString(k)}:${write(value.entries.get(k)!)}`).join(',')}}`
    }
    case 'array':
      return `[${value.items.map(write).join(',')}]`
    case 'string':
      return writeString(value.value)
    case 'number':
      return canonicalNumber(value.token)
    case 'literal':
      return value.token
  }
}

/** UTF-8 byte order, which is code point order (JavaScript's `<` compares UTF-16 code units). */
function byCodePoint(a: string, b: string): number {
  const x = [...a]
  const y = [...b]
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!
    if (d !== 0) return d
  }
  return x.length - y.length
}

const CONTROL_ESCAPES: Readonly<Record<string, string>> = {
  '"': '\\"',
  '\\': '\\\\',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
}

/** Where the run of characters from `from` that need no escape ends (a quote, a backslash, a control character). */
function plainRunEnd(text: string, from: number): number {
  let at = from
  for (; at < text.length; at++) {
    const code = text.charCodeAt(at)
    if (code < 0x20 || code === 0x22 || code === 0x5c) break
  }
  return at
}

function writeString(value: string): string {
  if (plainRunEnd(value, 0) === value.length) return `"${value}"`
  let out = '"'
  for (const c of value) {
    const escaped = CONTROL_ESCAPES[c]
    if (escaped !== undefined) out += escaped
    else if (c < ' ') out += `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`
    else out += c
  }
  return `${out}"`
}

const INT64_MIN = -(2n ** 63n)
const UINT64_MAX = 2n ** 64n - 1n

function canonicalNumber(token: string): string {
  if (/^-?\d+$/.test(token)) {
    const whole = BigInt(token)
    if (whole >= INT64_MIN && whole <= UINT64_MAX) return whole.toString()
    // Past 64 bits a whole number is read as a double: kept only when its digits are the double's shortest
    // (`-9223372036854776000`, `100000000000000000000` print as `-9.223372036854776e+18`, `1e+20`).
  }
  const double = Number(token)
  if (!Number.isFinite(double)) return token
  // The common case, fast: a fraction JavaScript prints as written (so the double holds it exactly) in the range
  // where BigQuery prints fractions in fixed notation, as JavaScript does.
  const magnitude = Math.abs(double)
  if (magnitude >= 1e-4 && magnitude < 1e15 && token.includes('.') && String(double) === token) return token
  const shortest = bigQueryDigits(double)
  const written = decimalOf(token)
  const same =
    shortest.digits === written.digits &&
    (shortest.digits === '' ||
      (shortest.exponent === written.exponent && shortest.negative === written.negative))
  return same ? doubleText(Object.is(double, -0) || double < 0, shortest) : token
}

/**
 * The digits BigQuery prints for a double: the shortest that read back as it (JavaScript's), except where those
 * lie exactly halfway to a neighbouring double (which reads back as this one only by rounding the tie to even).
 * ZetaSQL's writer (Grisu2) keeps strictly inside the double's interval, so there it prints the nearest of the
 * next length that does: 21817874710200752 is `2.1817874710200752e+16` on BigQuery, `21817874710200750` in
 * JavaScript. Halfway points have few digits only where the doubles are whole numbers (at 2^53 and above).
 */
function bigQueryDigits(double: number): Decimal {
  const shortest = decimalOf(double.toExponential())
  if (Math.abs(double) < 2 ** 53 || !isHalfway(double, shortest)) return shortest
  for (let precision = shortest.digits.length + 1; precision <= 17; precision++) {
    const text = Math.abs(double).toExponential(precision - 1)
    if (Number(text) !== Math.abs(double)) continue
    const candidate = decimalOf(text)
    if (!isHalfway(double, candidate)) return { ...candidate, negative: double < 0 }
  }
  return shortest
}

/** Whether a decimal is exactly halfway between a whole double (2^53 or more) and one of its neighbours. */
function isHalfway(double: number, decimal: Decimal): boolean {
  const scale = decimal.exponent - (decimal.digits.length - 1)
  if (scale < 0) return false
  const value = BigInt(decimal.digits) * 10n ** BigInt(scale)
  const bits = new DataView(new Float64Array([Math.abs(double)]).buffer).getBigUint64(0, true)
  const mantissa = (bits & ((1n << 52n) - 1n)) | (1n << 52n)
  const exponent = (bits >> 52n) - 1075n
  // Above: (2m + 1) * 2^(e-1); below: (2m - 1) * 2^(e-1), or (4m - 1) * 2^(e-2) at a power of two.
  const above = (2n * mantissa + 1n) << (exponent - 1n)
  const below =
    mantissa === 1n << 52n ? (4n * mantissa - 1n) << (exponent - 2n) : (2n * mantissa - 1n) << (exponent - 1n)
  return value === above || value === below
}

/** A decimal number as its significant digits (no leading or trailing zeros) and the power of ten of the first. */
interface Decimal {
  readonly negative: boolean
  readonly digits: string
  readonly exponent: number
}

function decimalOf(text: string): Decimal {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)!
  const all = m[2]! + (m[3] ?? '')
  const lead = all.length - all.replace(/^0+/, '').length
  const digits = all.slice(lead).replace(/0+$/, '')
  return { negative: m[1] === '-', digits, exponent: m[2]!.length - lead - 1 + Number(m[4] ?? 0) }
}

/**
 * A double as BigQuery (ZetaSQL's JSON writer, nlohmann/json's grisu2 layout) prints it, from its shortest
 * digits: fixed notation with a `.0` for whole numbers below 10^15 and for fractions down to 0.0001, else
 * `d.ddde±XX`.
 */
function doubleText(negative: boolean, { digits, exponent }: Decimal): string {
  const sign = negative ? '-' : ''
  if (digits === '') return `${sign}0.0`
  const k = digits.length
  const n = exponent + 1
  if (k <= n && n <= 15) return `${sign}${digits}${'0'.repeat(n - k)}.0`
  if (0 < n && n <= 15) return `${sign}${digits.slice(0, n)}.${digits.slice(n)}`
  if (-4 < n && n <= 0) return `${sign}0.${'0'.repeat(-n)}${digits}`
  const e = n - 1
  const mantissa = k === 1 ? digits : `${digits[0]}.${digits.slice(1)}`
  return `${sign}${mantissa}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`
}
