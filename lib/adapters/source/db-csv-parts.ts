/**
 * Turns a stream of CSV bytes into zstd Parquet part files with bounded memory: bytes are spooled to a CSV file
 * in the batch's scratch folder; once the file passes `spoolBytes` (cut at a record boundary) DuckDB converts it
 * into one typed Parquet part, which is handed to the batch writer, and the CSV file is deleted. At most
 * `maxQueuedFiles` spooled files wait for conversion; the producer waits beyond that (backpressure to the
 * server), so neither memory nor scratch disk grows with the table.
 */
import { createWriteStream, type WriteStream } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'

import type { BatchWriter } from '../../ports/staging-store.ts'
import { readParquetRowCounts, sqlIdentifier, sqlString } from '../duckdb/parquet-schema.ts'
import type { DbColumn } from './db-types.ts'

export interface CsvPartConverterOptions {
  /** Folder for spooled CSV, Parquet parts and DuckDB spills (inside the batch's scratch folder). */
  readonly workDir: string
  /** DuckDB threads used to convert (default: 2, or 1 on a single-CPU machine). */
  readonly threads?: number
  /** DuckDB memory limit (default '128MB'). */
  readonly memoryLimit?: string
  /** Largest single CSV record (row) DuckDB accepts, in bytes (default 8 MiB). */
  readonly maxRecordBytes?: number
}

/** zstd level 1: staged parts are read once or twice; level 3 (the default) costs 20-40% more CPU for ~5% smaller files. */
const ZSTD_LEVEL = 1
const QUOTE = 0x22
const NEWLINE = 0x0a

/**
 * One in-memory DuckDB instance for one extract. Conversions run one at a time, in the order they were queued,
 * and each finished part is added to the batch writer in that order.
 */
export class CsvPartConverter {
  readonly workDir: string
  readonly #instance: DuckDBInstance
  readonly #connection: DuckDBConnection
  readonly #maxRecordBytes: number
  #queue: Promise<unknown> = Promise.resolve()
  #files = 0

  private constructor(
    workDir: string,
    instance: DuckDBInstance,
    connection: DuckDBConnection,
    maxRecordBytes: number,
  ) {
    this.workDir = workDir
    this.#instance = instance
    this.#connection = connection
    this.#maxRecordBytes = maxRecordBytes
  }

  static async open(options: CsvPartConverterOptions): Promise<CsvPartConverter> {
    await mkdir(options.workDir, { recursive: true })
    const instance = await DuckDBInstance.create(':memory:', {
      threads: String(options.threads ?? Math.min(2, availableParallelism())),
      memory_limit: options.memoryLimit ?? '128MB',
      preserve_insertion_order: 'false',
      temp_directory: join(options.workDir, 'duckdb-tmp'),
    })
    try {
      const connection = await instance.connect()
      // UTC-marked timestamps and zone-less TIMESTAMPTZ text are read in UTC, never in the machine's zone.
      await connection.run(`SET TimeZone='UTC'`)
      return new CsvPartConverter(options.workDir, instance, connection, options.maxRecordBytes ?? 8 << 20)
    } catch (error) {
      instance.closeSync()
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
            `(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL ${ZSTD_LEVEL}, ROW_GROUP_SIZE 122880)`,
        )
      } catch (error) {
        throw new Error(describeConversionError(error, columns), { cause: error })
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
    const bufferSize = Math.max(16 << 20, this.#maxRecordBytes * 2)
    return (
      `SELECT ${select} FROM read_csv(${sqlString(csvPath)}, auto_detect=false, header=false, delim=',', ` +
      `quote='"', escape='"', new_line='\\n', columns={${fields}}, strict_mode=true, null_padding=false, ` +
      `allow_quoted_nulls=false, ignore_errors=false, max_line_size=${this.#maxRecordBytes}, buffer_size=${bufferSize})`
    )
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
 */
export class CsvSpool {
  readonly #options: Required<Omit<CsvSpoolOptions, 'onPart'>> & Pick<CsvSpoolOptions, 'onPart'>
  #file: WriteStream | undefined
  #path = ''
  #bytes = 0
  #inQuotes = false
  #rows = 0
  #queued = 0
  readonly #pending = new Set<Promise<number>>()
  #failure: unknown

  constructor(options: CsvSpoolOptions) {
    this.#options = { spoolBytes: 6 << 20, maxQueuedFiles: 3, ...options }
  }

  /**
   * Appends CSV bytes. `aligned`: the piece ends at a record boundary (the caller encoded whole records), which
   * saves the quote scan. Resolves when the bytes are written and the conversion queue has room.
   */
  async write(piece: Buffer, aligned = false): Promise<void> {
    this.#throwIfFailed()
    let rest = piece
    if (!aligned) {
      let cut = -1
      if (this.#bytes + piece.length >= this.#options.spoolBytes) cut = this.#lastBoundary(piece)
      else this.#advanceQuotes(piece)
      if (cut < 0) {
        await this.#append(piece)
        return
      }
      await this.#append(piece.subarray(0, cut + 1))
      rest = piece.subarray(cut + 1)
      await this.#cut()
      if (rest.length > 0) await this.#append(rest)
      return
    }
    await this.#append(rest)
    if (this.#bytes >= this.#options.spoolBytes) await this.#cut()
  }

  /**
   * Converts what is left and waits for every conversion of this spool. `ensurePart`: write an empty part when
   * nothing was spooled, so that an empty extract still stages its columns and types. Returns the rows staged.
   */
  async finish(ensurePart = false): Promise<number> {
    this.#throwIfFailed()
    if (this.#file !== undefined || (ensurePart && this.#queued === 0)) await this.#cut(true)
    while (this.#pending.size > 0) await Promise.all(this.#pending)
    this.#throwIfFailed()
    return this.#rows
  }

  /** Closes the open spool file after a failure; the converter's close removes the files. */
  async discard(): Promise<void> {
    const file = this.#file
    this.#file = undefined
    if (file) await new Promise<void>((resolve) => file.end(() => resolve()))
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

  async #append(bytes: Buffer): Promise<void> {
    if (bytes.length === 0) return
    if (this.#file === undefined) {
      this.#path = this.#options.converter.nextPath('csv')
      this.#file = createWriteStream(this.#path)
      this.#bytes = 0
    }
    this.#bytes += bytes.length
    const file = this.#file
    if (!file.write(bytes)) await new Promise<void>((resolve) => file.once('drain', resolve))
  }

  /** Closes the current file and queues its conversion; waits while too many files are queued. */
  async #cut(evenIfEmpty = false): Promise<void> {
    if (this.#file === undefined) {
      if (!evenIfEmpty) return
      // An empty part: the batch still has the extract's columns and types.
      this.#path = this.#options.converter.nextPath('csv')
      this.#file = createWriteStream(this.#path)
    }
    const file = this.#file
    this.#file = undefined
    await new Promise<void>((resolve, reject) => {
      file.once('error', reject)
      file.end(() => resolve())
    })
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
    while (this.#pending.size >= this.#options.maxQueuedFiles) await Promise.race(this.#pending)
    this.#throwIfFailed()
  }

  #throwIfFailed(): void {
    if (this.#failure !== undefined) throw this.#failure
  }
}

/**
 * DuckDB names the CSV fields `c0`, `c1`, ...; a conversion error is re-worded with the source column's name and
 * types, and without the CSV line number (a line of a spooled file means nothing to a user).
 */
export function describeConversionError(error: unknown, columns: readonly DbColumn[]): string {
  const message = error instanceof Error ? error.message : String(error)
  const field = /column "c(\d+)"/.exec(message)
  const value = /Could not convert string "([^"]*)"/.exec(message)
  const column = field ? columns[Number(field[1])] : undefined
  if (column === undefined) return `converting rows to Parquet failed: ${message.split('\n')[0]}`
  return (
    `column ${column.name} (${column.serverType}) holds a value DuckDB cannot store as ${column.type}` +
    (value ? `: "${value[1]}"` : `: ${message.split('\n')[0]}`)
  )
}
