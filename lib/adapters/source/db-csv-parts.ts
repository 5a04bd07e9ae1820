/**
 * Turns a stream of CSV bytes into zstd Parquet part files with bounded memory: bytes are spooled to a CSV file
 * in the batch's scratch folder; once the file passes `spoolBytes` (cut at a record boundary) DuckDB converts it
 * into one typed Parquet part, which is handed to the batch writer, and the CSV file is deleted. At most
 * `maxQueuedFiles` spooled files wait for conversion; the producer waits beyond that (backpressure to the
 * server), so neither memory nor scratch disk grows with the table.
 */
import { closeSync, openSync, writeSync } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'

import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api'

import type { StagedParquetVersion } from '../../core/staged-parquet.ts'
import type { BatchWriter } from '../../ports/staging-store.ts'
import {
  DEFAULT_SOURCE_MEMORY_LIMIT,
  describeDuckDbError,
  duckDbTrouble,
  type MemoryLimitSetting,
} from '../duckdb/duckdb-errors.ts'
import { registerCanonicalJson } from '../duckdb/canonical-json-function.ts'
import { readParquetRowCounts, sqlIdentifier, sqlString } from '../duckdb/parquet-schema.ts'
import { readCsvRecords } from './csv-records.ts'
import { CANONICAL_JSON_FUNCTION, type DbColumn } from './db-types.ts'
import { openDuckDbEngine } from '../duckdb/duckdb-engine.ts'

export interface CsvPartConverterOptions {
  /** Folder for spooled CSV, Parquet parts and DuckDB spills (inside the batch's scratch folder). */
  readonly workDir: string
  /** DuckDB threads used to convert (default: `defaultConverterThreads()`). */
  readonly threads?: number
  /** DuckDB memory limit, and the variable that sets it (default DEFAULT_SOURCE_MEMORY_LIMIT). */
  readonly memoryLimit?: MemoryLimitSetting
  /** Largest single CSV record (row) DuckDB accepts, in bytes (default 8 MiB). */
  readonly maxRecordBytes?: number
  /** Key columns, to name the row a conversion error is about. */
  readonly keyColumns?: readonly string[]
  /** Parquet version of the parts (default V1, which every reader decodes; lib/core/staged-parquet.ts). */
  readonly parquetVersion?: StagedParquetVersion
}

/** A conversion failure said in the user's terms (the column, the problem), never in DuckDB's CSV terms. */
export class StagingProblem extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'StagingProblem'
  }
}

/** One row cannot be staged: `key` names it (`id=7`), `problem` says why (`is larger than …`). */
export class RowProblem extends StagingProblem {
  constructor(
    readonly key: string,
    readonly problem: string,
    options?: ErrorOptions,
  ) {
    super(`the row with ${key} ${problem}`, options)
    this.name = 'RowProblem'
  }
}

/** zstd level 1: staged parts are read once or twice; level 3 (the default) costs 20-40% more CPU for ~5% smaller files. */
const ZSTD_LEVEL = 1

/**
 * Most distinct values per row group a column is dictionary-encoded with (DuckDB's default is a fifth of the row
 * group, 24,576). A column of unique texts (names, e-mails, notes) would build a dictionary that large before the
 * writer gives up on it: a 1M-row, 10-column PostgreSQL table was written in 0.62-0.69 s instead of 0.79 s, and its
 * extract took a median 1.87 s instead of 1.98 s (bench/results/log.md). Columns of few values keep their dictionary.
 */
const DICTIONARY_SIZE_LIMIT = 1000
/** Largest row, as CSV text, a database extract stages (the documented limit). */
export const MAX_RECORD_BYTES = 8 << 20
/** Characters of a value shown in a message. */
const SHOWN_CHARS = 60
const QUOTE = 0x22
const NEWLINE = 0x0a

/**
 * DuckDB threads converting an extract's CSV: the CPUs less one, at most 2. The JavaScript thread that reads the
 * wire and spools the rows needs a core of its own; on 2 CPUs a second DuckDB thread competed with it and made a
 * 1M-row PostgreSQL extract slower (median 4.1 s against 3.3 s with one thread, bench/results/log.md).
 */
export function defaultConverterThreads(cpus = availableParallelism()): number {
  return Math.max(1, Math.min(2, cpus - 1))
}

/**
 * One in-memory DuckDB instance for one extract. Conversions run one at a time, in the order they were queued,
 * and each finished part is added to the batch writer in that order.
 */
export class CsvPartConverter {
  readonly workDir: string
  readonly #instance: DuckDBInstance
  readonly #connection: DuckDBConnection
  readonly #maxRecordBytes: number
  readonly #memory: MemoryLimitSetting | undefined
  readonly #keyColumns: readonly string[]
  readonly #parquetVersion: StagedParquetVersion
  #queue: Promise<unknown> = Promise.resolve()
  #files = 0

  private constructor(
    workDir: string,
    instance: DuckDBInstance,
    connection: DuckDBConnection,
    options: CsvPartConverterOptions,
  ) {
    this.workDir = workDir
    this.#instance = instance
    this.#connection = connection
    this.#maxRecordBytes = options.maxRecordBytes ?? MAX_RECORD_BYTES
    this.#memory = options.memoryLimit
    this.#keyColumns = options.keyColumns ?? []
    this.#parquetVersion = options.parquetVersion ?? 'V1'
  }

  static async open(options: CsvPartConverterOptions): Promise<CsvPartConverter> {
    await mkdir(options.workDir, { recursive: true })
    const { instance, connection, close } = await openDuckDbEngine({
      threads: options.threads ?? defaultConverterThreads(),
      memoryLimit: options.memoryLimit?.limit ?? DEFAULT_SOURCE_MEMORY_LIMIT,
      anyOrder: true,
      spillDirectory: join(options.workDir, 'duckdb-tmp'),
    })
    try {
      registerCanonicalJson(connection, CANONICAL_JSON_FUNCTION)
      return new CsvPartConverter(options.workDir, instance, connection, options)
    } catch (error) {
      close()
      throw error
    }
  }

  /** A fresh file name in the work folder. */
  nextPath(extension: string): string {
    return join(this.workDir, `f${String(this.#files++).padStart(6, '0')}.${extension}`)
  }

  /**
   * Queues the conversion of `csvPath` into a Parquet part and its hand-off to `writer`. Resolves with the part's
   * row count once the part is in the batch; the CSV file is deleted either way.
   */
  convert(csvPath: string, columns: readonly DbColumn[], writer: BatchWriter): Promise<number> {
    const converted = this.#queue.then(async () => {
      const partPath = this.nextPath('parquet')
      try {
        await this.#connection.run(
          `COPY (${this.#selectSql(csvPath, columns)}) TO ${sqlString(partPath)} ` +
            `(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL ${ZSTD_LEVEL}, ROW_GROUP_SIZE 122880, ` +
            `DICTIONARY_SIZE_LIMIT ${DICTIONARY_SIZE_LIMIT}, PARQUET_VERSION ${this.#parquetVersion})`,
        )
      } catch (error) {
        throw await this.#explain(csvPath, columns, error)
      } finally {
        await rm(csvPath, { force: true })
      }
      const rows = (await readParquetRowCounts([partPath], this.#connection))[0]?.rows ?? 0
      return { partPath, rows }
    })
    this.#queue = converted.catch(() => undefined)
    // The hand-off (a move and a checksum locally, an upload on S3) overlaps the next conversion; the writer
    // numbers parts in call order, and calls happen here in conversion order.
    return converted.then(async ({ partPath, rows }) => {
      await writer.addPart(partPath, rows)
      return rows
    })
  }

  /** The DuckDB SELECT reading one spooled file into the staged column types. */
  #selectSql(csvPath: string, columns: readonly DbColumn[]): string {
    const fields = columns
      .map((column, i) => `${sqlString(`c${i}`)}: ${sqlString(column.csvType)}`)
      .join(', ')
    const select = columns
      .map((column, i) => {
        const ref = sqlIdentifier(`c${i}`)
        return `${column.convert ? column.convert(ref) : ref} AS ${sqlIdentifier(column.name)}`
      })
      .join(', ')
    const bufferSize = this.#bufferSize()
    return (
      `SELECT ${select} FROM read_csv(${sqlString(csvPath)}, auto_detect=false, header=false, delim=',', ` +
      `quote='"', escape='"', new_line='\\n', columns={${fields}}, strict_mode=true, null_padding=false, ` +
      `allow_quoted_nulls=false, ignore_errors=false, max_line_size=${this.#maxRecordBytes}, buffer_size=${bufferSize})`
    )
  }

  /**
   * What made DuckDB refuse a spooled file, in the source's terms: the row (by its key) that is too large or
   * holds a value that cannot be staged, a full disk, or memory. Looks at the file again, so only on failure.
   */
  async #explain(csvPath: string, columns: readonly DbColumn[], error: unknown): Promise<StagingProblem> {
    try {
      if (duckDbTrouble(error) !== 'other') {
        return new StagingProblem(describeDuckDbError(error, 'converting rows to Parquet', this.#memory), {
          cause: error,
        })
      }
      if (/Maximum line size/i.test(error instanceof Error ? error.message : String(error))) {
        const oversized = await this.#largestRecord(csvPath, columns)
        if (oversized !== undefined) return oversized
      } else {
        const invalid = await this.#firstInvalidValue(csvPath, columns)
        if (invalid !== undefined) return invalid
      }
    } catch {
      // The file could not be looked at again: say what DuckDB said.
    }
    return new StagingProblem(`converting rows to Parquet failed: ${duckDbReason(error)}`, { cause: error })
  }

  async #largestRecord(csvPath: string, columns: readonly DbColumn[]): Promise<RowProblem | undefined> {
    let largest: { bytes: number; fields: readonly { bytes: number; text: string }[] } | undefined
    for await (const record of readCsvRecords(csvPath, { prefixChars: SHOWN_CHARS })) {
      if (largest === undefined || record.bytes > largest.bytes) largest = record
    }
    if (largest === undefined) return undefined
    const fields = largest.fields
    const widest = fields.reduce((best, field, i) => (field.bytes > fields[best]!.bytes ? i : best), 0)
    const key = this.#keyText(columns, (i) => fields[i]?.text)
    return new RowProblem(
      key,
      `is larger than the ${formatSize(this.#maxRecordBytes)} a row may hold (column ${columns[widest]?.name ?? widest + 1} ` +
        `holds ${formatSize(fields[widest]!.bytes)})`,
    )
  }

  /** The first value whose conversion fails, found by DuckDB itself (`try`) over the file read as text. */
  async #firstInvalidValue(csvPath: string, columns: readonly DbColumn[]): Promise<RowProblem | undefined> {
    const fields = columns.map((_, i) => `${sqlString(`c${i}`)}: 'VARCHAR'`).join(', ')
    const keys = this.#keyColumns.map((name) => columns.findIndex((c) => c.name === name))
    const read =
      `read_csv(${sqlString(csvPath)}, auto_detect=false, header=false, delim=',', quote='"', escape='"', ` +
      `new_line='\\n', columns={${fields}}, strict_mode=true, null_padding=false, allow_quoted_nulls=false, ` +
      `max_line_size=${this.#maxRecordBytes}, buffer_size=${this.#bufferSize()})`
    for (const [i, column] of columns.entries()) {
      if (column.csvType === 'VARCHAR' && column.convert === undefined) continue
      const ref = sqlIdentifier(`c${i}`)
      const parsed = column.csvType === 'VARCHAR' ? ref : `CAST(${ref} AS ${column.csvType})`
      const staged = column.convert ? column.convert(parsed) : parsed
      const select = [...keys.map((k) => (k < 0 ? 'NULL' : sqlIdentifier(`c${k}`))), ref].join(', ')
      // `x IS NULL` is never NULL: only an error, turned into NULL by try(), makes it so.
      const [row] = await this.query(
        `SELECT ${select} FROM ${read} WHERE try((${staged}) IS NULL) IS NULL LIMIT 1`,
      )
      if (row === undefined) continue
      const values = Object.values(row).map((v) => (v === null ? null : String(v)))
      const key = this.#keyText(columns, (k) => values[keys.indexOf(k)] ?? undefined)
      return new RowProblem(key, describeInvalidValue(column, values.at(-1) ?? ''))
    }
    return undefined
  }

  #keyText(columns: readonly DbColumn[], valueAt: (index: number) => string | null | undefined): string {
    const parts = this.#keyColumns.map((name) => {
      const index = columns.findIndex((c) => c.name === name)
      return `${name}=${showValue(valueAt(index) ?? null)}`
    })
    return parts.length > 0 ? parts.join(', ') : 'no key'
  }

  #bufferSize(): number {
    return Math.max(16 << 20, this.#maxRecordBytes * 2)
  }

  /** Runs a query on the converter's DuckDB (checks over finished parts). */
  async query(sql: string): Promise<Record<string, unknown>[]> {
    const reader = await this.#connection.runAndReadAll(sql)
    return reader.getRowObjectsJson() as Record<string, unknown>[]
  }

  /** Closes DuckDB and deletes the work folder. */
  async close(): Promise<void> {
    await this.#queue
    this.#connection.closeSync()
    this.#instance.closeSync()
    await rm(this.workDir, { recursive: true, force: true })
  }
}

export interface CsvSpoolOptions {
  readonly converter: CsvPartConverter
  readonly columns: readonly DbColumn[]
  readonly writer: BatchWriter
  /** Size at which a spooled CSV file is cut and converted (default 6 MiB). */
  readonly spoolBytes?: number
  /** Spooled files allowed to wait for conversion before `write` waits (default 3). */
  readonly maxQueuedFiles?: number
  /** Called with the rows of each part once it is in the batch. */
  readonly onPart?: (rows: number) => void
}

/**
 * The CSV stream of one connection (one chunk). Bytes may come in arbitrary pieces (PostgreSQL COPY data): the
 * spool tracks whether it is inside a quoted field, so a file is only ever cut between two records.
 *
 * Bytes go to the spooled file with synchronous writes: a write into the page cache takes microseconds, while an
 * asynchronous one is a round trip through libuv's thread pool (which DuckDB's conversions also use) for every
 * piece, and the reader waited for each (1.2-1.9 s of a 2.3-2.9 s read of 1M rows, bench/results/log.md).
 */
export class CsvSpool {
  readonly #options: Required<Omit<CsvSpoolOptions, 'onPart'>> & Pick<CsvSpoolOptions, 'onPart'>
  #fd: number | undefined
  #path = ''
  #bytes = 0
  #inQuotes = false
  #rows = 0
  #queued = 0
  readonly #pending = new Set<Promise<number>>()
  #failure: unknown

  constructor(options: CsvSpoolOptions) {
    // `?? default` per option: a caller passing `spoolBytes: undefined` must get the default, not a spool that
    // never cuts (one CSV file and one part for the whole extract).
    this.#options = {
      ...options,
      spoolBytes: options.spoolBytes ?? 6 << 20,
      maxQueuedFiles: options.maxQueuedFiles ?? 3,
    }
  }

  /**
   * Appends CSV bytes. `aligned`: the piece ends at a record boundary (the caller encoded whole records), which
   * saves the quote scan. Resolves when the bytes are written and the conversion queue has room.
   */
  async write(piece: Buffer, aligned = false): Promise<void> {
    if (aligned) {
      await this.append(piece, true)
      return
    }
    this.#throwIfFailed()
    if (this.#bytes + piece.length < this.#options.spoolBytes) {
      this.#advanceQuotes(piece)
      this.#appendBytes(piece)
      return
    }
    const cut = this.#lastBoundary(piece)
    if (cut < 0) {
      this.#appendBytes(piece)
      return
    }
    this.#appendBytes(piece.subarray(0, cut + 1))
    const room = this.#cut()
    if (cut + 1 < piece.length) this.#appendBytes(piece.subarray(cut + 1))
    await room
  }

  /**
   * Appends bytes whose record boundaries the caller knows (PostgreSQL sends one row per COPY message), without
   * a quote scan. `recordEnd`: the bytes end where a record ends, so the file may be cut after them. The bytes
   * are written before it returns (the caller may reuse the buffer); it returns a promise only when the caller
   * must wait before appending more (conversions are behind), and throws once a conversion has failed.
   */
  append(bytes: Buffer, recordEnd: boolean): Promise<void> | undefined {
    this.#throwIfFailed()
    this.#appendBytes(bytes)
    return recordEnd && this.#bytes >= this.#options.spoolBytes ? this.#cut() : undefined
  }

  /**
   * Converts what is left and waits for every conversion of this spool. `ensurePart`: write an empty part when
   * nothing was spooled, so that an empty extract still stages its columns and types. Returns the rows staged.
   */
  async finish(ensurePart = false): Promise<number> {
    this.#throwIfFailed()
    if (this.#fd !== undefined || (ensurePart && this.#queued === 0)) await this.#cut(true)
    while (this.#pending.size > 0) await Promise.all(this.#pending)
    this.#throwIfFailed()
    return this.#rows
  }

  /** Closes the open spool file after a failure; the converter's close removes the files. */
  async discard(): Promise<void> {
    const fd = this.#fd
    this.#fd = undefined
    if (fd !== undefined) closeSync(fd)
    await Promise.allSettled([...this.#pending])
  }

  /**
   * Index of the last newline of `piece` that ends a record (outside quotes), or -1. Also advances the
   * quote state to the end of `piece`. In CSV every `"` opens or closes quoting (a doubled `""` does both), so
   * the parity of quotes seen so far says whether a newline is inside a value.
   */
  #lastBoundary(piece: Buffer): number {
    let last = -1
    let inQuotes = this.#inQuotes
    for (let i = 0; i < piece.length; i++) {
      const byte = piece[i]
      if (byte === QUOTE) inQuotes = !inQuotes
      else if (byte === NEWLINE && !inQuotes) last = i
    }
    this.#inQuotes = inQuotes
    return last
  }

  /** Advances the quote state over `piece`: only the parity of its quotes matters (found with native search). */
  #advanceQuotes(piece: Buffer): void {
    let odd = false
    for (let i = piece.indexOf(QUOTE); i !== -1; i = piece.indexOf(QUOTE, i + 1)) odd = !odd
    if (odd) this.#inQuotes = !this.#inQuotes
  }

  #appendBytes(bytes: Buffer): void {
    if (bytes.length === 0) return
    const fd = (this.#fd ??= this.#open())
    for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done)
    this.#bytes += bytes.length
  }

  #open(): number {
    this.#path = this.#options.converter.nextPath('csv')
    this.#bytes = 0
    return openSync(this.#path, 'w')
  }

  /**
   * Closes the current file and queues its conversion. Returns a promise only when too many files are queued:
   * it resolves once one of them is converted (and rejects if a conversion failed).
   */
  #cut(evenIfEmpty = false): Promise<void> | undefined {
    // An empty part: the batch still has the extract's columns and types.
    if (this.#fd === undefined && evenIfEmpty) this.#fd = this.#open()
    const fd = this.#fd
    if (fd === undefined) return undefined
    this.#fd = undefined
    this.#bytes = 0
    closeSync(fd)
    this.#queued++
    const conversion = this.#options.converter.convert(
      this.#path,
      this.#options.columns,
      this.#options.writer,
    )
    const tracked = conversion.then(
      (rows) => {
        this.#rows += rows
        this.#options.onPart?.(rows)
        return rows
      },
      (error: unknown) => {
        this.#failure ??= error
        return 0
      },
    )
    this.#pending.add(tracked)
    void tracked.finally(() => this.#pending.delete(tracked))
    return this.#pending.size >= this.#options.maxQueuedFiles ? this.#room() : undefined
  }

  async #room(): Promise<void> {
    while (this.#pending.size >= this.#options.maxQueuedFiles) await Promise.race(this.#pending)
    this.#throwIfFailed()
  }

  #throwIfFailed(): void {
    if (this.#failure !== undefined) throw this.#failure
  }
}

/** Why a value cannot be staged, phrased to follow "the row with id=7". */
export function describeInvalidValue(column: DbColumn, raw: string): string {
  const where = `in column ${column.name} (${column.serverType})`
  const dimensions = /^\[+/.exec(raw)?.[0].length ?? 0
  if (column.type.endsWith('[]') && dimensions > 1) {
    return `has a ${dimensions}-dimensional array ${where}; only one-dimensional arrays can be staged (use a query source that selects one dimension)`
  }
  const date = /^(\d{4})-(\d{2})-(\d{2})/.exec(raw)
  if (date && (date[2] === '00' || date[3] === '00')) {
    return (
      `has ${raw} ${where}, a date with a zero ${date[2] === '00' ? 'month' : 'day'}; only a whole zero date ` +
      `(0000-00-00) is staged, as NULL: fix the row, or use a query source with NULLIF`
    )
  }
  return `has ${showValue(raw)} ${where}, which cannot be staged as ${column.type}`
}

/** DuckDB's reason without its CSV vocabulary (`CSV Error on Line: 17`, the spooled file's options). */
function duckDbReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const lines = message.split('\n').map((line) => line.trim())
  const original = lines.findIndex((line) => line.startsWith('Original Line:'))
  if (original >= 0) {
    const reason = lines.slice(original + 1).find((line) => line !== '' && !line.startsWith('Possible'))
    if (reason !== undefined) return reason
  }
  return lines[0]!.replace(/\s*CSV Error on Line: \d+/, '').trim() || 'a malformed row'
}

function showValue(value: string | null): string {
  if (value === null) return 'NULL'
  const shown = [...value].length > SHOWN_CHARS ? `${[...value].slice(0, SHOWN_CHARS).join('')}…` : value
  return /^[\w.:+-]+$/.test(shown) ? shown : JSON.stringify(shown)
}

/** `8 MiB`, `9.5 MiB`, `12.0 KiB`. */
export function formatSize(bytes: number): string {
  const mib = bytes / (1 << 20)
  if (Number.isInteger(mib)) return `${mib} MiB`
  return mib >= 1 ? `${mib.toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`
}
