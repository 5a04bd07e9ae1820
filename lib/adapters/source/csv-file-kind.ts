/**
 * What the first bytes of a file said to be CSV show it really is, when it is not UTF-8 text: DuckDB would
 * read UTF-16 as one column per line and a Parquet or gzip file as a broken CSV, and its messages say neither.
 * Pure: the caller reads the bytes.
 */

/** How many leading bytes `notCsvText` looks at. */
export const HEAD_BYTES = 4096

export type NotCsvText =
  | { readonly kind: 'utf16'; readonly endian: 'little' | 'big' }
  | { readonly kind: 'utf32'; readonly endian: 'little' | 'big' }
  | { readonly kind: 'parquet' }
  | { readonly kind: 'gzip' }

/**
 * What `head` (a file's first bytes) is when it is not UTF-8 text, or undefined. UTF-16 without a byte-order
 * mark is recognized by its zero bytes: text in Latin letters has one in every other byte.
 */
export function notCsvText(head: Uint8Array): NotCsvText | undefined {
  const starts = (...bytes: number[]) => bytes.every((b, i) => head[i] === b)
  if (starts(0x50, 0x41, 0x52, 0x31)) return { kind: 'parquet' } // "PAR1"
  if (starts(0x1f, 0x8b)) return { kind: 'gzip' }
  if (starts(0xff, 0xfe, 0x00, 0x00)) return { kind: 'utf32', endian: 'little' }
  if (starts(0x00, 0x00, 0xfe, 0xff)) return { kind: 'utf32', endian: 'big' }
  if (starts(0xff, 0xfe)) return { kind: 'utf16', endian: 'little' }
  if (starts(0xfe, 0xff)) return { kind: 'utf16', endian: 'big' }
  const pairs = Math.floor(Math.min(head.length, HEAD_BYTES) / 2)
  if (pairs < 2) return undefined
  let zeroEven = 0
  let zeroOdd = 0
  for (let i = 0; i < pairs; i++) {
    if (head[2 * i] === 0) zeroEven++
    if (head[2 * i + 1] === 0) zeroOdd++
  }
  // Mostly zeros on one side and none on the other: 16-bit code units of mostly ASCII text.
  if (zeroOdd >= pairs / 2 && zeroEven === 0) return { kind: 'utf16', endian: 'little' }
  if (zeroEven >= pairs / 2 && zeroOdd === 0) return { kind: 'utf16', endian: 'big' }
  return undefined
}

/** The sentence that follows the file's name in the refusal. */
export function describeNotCsvText(found: NotCsvText, tableName: string): string {
  switch (found.kind) {
    case 'utf16':
    case 'utf32':
      return (
        `is ${found.kind === 'utf16' ? 'UTF-16' : 'UTF-32'} (${found.endian}-endian) text; dimsync reads CSV ` +
        'as UTF-8: save the file as UTF-8'
      )
    case 'parquet':
      return `is a Parquet file, not CSV text; set format: parquet in the source of table ${tableName}`
    case 'gzip':
      return 'is gzip-compressed; give it a name ending in .csv.gz so that it is read as compressed CSV'
  }
}

/** Delimiters a file refused as one column may use instead, in the order they are suggested. */
const OTHER_DELIMITERS = [';', '\t', '|'] as const

/**
 * The delimiter a header (or first line) read as one column seems to use instead of `delimiter`, or undefined.
 */
export function likelyDelimiter(fields: readonly string[], delimiter: string): string | undefined {
  if (fields.length !== 1) return undefined
  const text = fields[0]!
  return OTHER_DELIMITERS.find((candidate) => candidate !== delimiter && text.includes(candidate))
}

/** `delimiter: ';'` as written in dimsync.yaml (a tab needs YAML's double-quoted escape). */
export function delimiterOption(delimiter: string): string {
  return delimiter === '\t' ? 'delimiter: "\\t"' : `delimiter: '${delimiter}'`
}
