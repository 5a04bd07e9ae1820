/**
 * Reads RFC 4180 CSV records in JavaScript, streaming, for the few places that must look at records themselves:
 * the header of a file, and the record DuckDB refused (to name its key and column). Never on the fast path:
 * DuckDB reads the rows that are staged.
 */
import { createReadStream } from 'node:fs'

export interface CsvField {
  /** Bytes of the value (quotes and doubled quotes not counted). */
  readonly bytes: number
  /** The value's first characters (at most `prefixChars`), unquoted. */
  readonly text: string
}

export interface CsvRecord {
  /** Bytes of the record as written in the file, without its line end. */
  readonly bytes: number
  /** The file's line (1-based) the record starts on: a quoted value may hold line ends. */
  readonly line: number
  readonly fields: readonly CsvField[]
}

export interface CsvRecordOptions {
  /** One character (default ','). */
  readonly delimiter?: string
  /** Characters of each value kept in `text` (default 200). */
  readonly prefixChars?: number
  /** Stop after this many bytes of the file (default: the whole file). */
  readonly maxFileBytes?: number
  /** Bytes read at a time (default 64 KiB). */
  readonly chunkBytes?: number
}

/**
 * The records of a CSV file: `"` quotes, `""` inside quotes is a quote, a line end outside quotes ends a record
 * (`\r\n` or `\n`). The file is read as bytes (latin1), so byte counts are exact whatever the encoding; texts are
 * decoded as UTF-8.
 */
export async function* readCsvRecords(
  path: string,
  options: CsvRecordOptions = {},
): AsyncGenerator<CsvRecord> {
  const delimiter = Buffer.from(options.delimiter ?? ',', 'utf8').toString('latin1')
  const prefixChars = options.prefixChars ?? 200
  const stream = createReadStream(path, {
    encoding: 'latin1',
    highWaterMark: options.chunkBytes ?? 64 * 1024,
    ...(options.maxFileBytes !== undefined ? { end: options.maxFileBytes - 1 } : {}),
  })
  let fields: CsvField[] = []
  let prefix = ''
  let fieldBytes = 0
  let recordBytes = 0
  let quoted = false
  /** A quote inside a quoted value: either the closing quote or the first of `""`. */
  let quotePending = false
  let pending = ''
  /** Line ends seen so far, and the line the current record started on. */
  let lineEnds = 0
  let recordLine = 1
  let quotedCr = false
  const take = (ch: string) => {
    fieldBytes++
    if (prefix.length < prefixChars * 4) prefix += ch
  }
  const endField = () => {
    const text = Buffer.from(prefix, 'latin1').toString('utf8')
    fields.push({ bytes: fieldBytes, text: [...text].slice(0, prefixChars).join('') })
    prefix = ''
    fieldBytes = 0
  }
  const endRecord = (): CsvRecord => {
    endField()
    const record = { bytes: recordBytes, line: recordLine, fields }
    fields = []
    recordBytes = 0
    recordLine = lineEnds + 1
    return record
  }
  try {
    for await (const chunk of stream as AsyncIterable<string>) {
      const text = pending + chunk
      pending = ''
      for (let i = 0; i < text.length; i++) {
        const ch = text[i]!
        if (quotePending) {
          quotePending = false
          if (ch === '"') {
            take('"')
            recordBytes++
            continue
          }
          quoted = false
        }
        if (quoted) {
          recordBytes++
          // `\r\n` is one line end, also when a chunk ends between the two.
          if (ch === '\r' || (ch === '\n' && !quotedCr)) lineEnds++
          quotedCr = ch === '\r'
          if (ch === '"') quotePending = true
          else take(ch)
          continue
        }
        // A `\r` or the start of a delimiter at the end of a chunk is decided with the next chunk.
        const rest = text.length - i
        if ((ch === '\r' && rest === 1) || (rest < delimiter.length && delimiter.startsWith(text.slice(i)))) {
          pending = text.slice(i)
          break
        }
        if (ch === '\n' || ch === '\r') {
          if (ch === '\r' && text[i + 1] === '\n') i++
          lineEnds++
          yield endRecord()
          continue
        }
        if (text.startsWith(delimiter, i)) {
          endField()
          recordBytes += delimiter.length
          i += delimiter.length - 1
          continue
        }
        recordBytes++
        if (ch === '"' && fieldBytes === 0 && prefix === '') quoted = true
        else take(ch)
      }
    }
  } finally {
    stream.destroy()
  }
  if (pending !== '' && pending !== '\r') {
    recordBytes += pending.length
    for (const ch of pending) take(ch)
  }
  if (pending !== '' || recordBytes > 0 || fields.length > 0) yield endRecord()
}
