import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, open, readdir, rm, stat } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { isAbsolute, join, relative, resolve } from 'node:path'

import type { DuckDBConnection } from '@duckdb/node-api'
import type { S3Client } from '@aws-sdk/client-s3'
import { glob, isDynamicPattern } from 'tinyglobby'

import type { StagedColumn, Watermark } from '../../core/batch.ts'
import { caseOnlyCollision, caseOnlyCollisionText } from '../../core/column-name-case.ts'
import { SourceError } from '../../core/errors.ts'
import { S3_SCHEME } from '../../core/s3-path.ts'
import type { StagedParquetVersion } from '../../core/staged-parquet.ts'
import {
  isFileWatermark,
  nextFileWatermark,
  selectNewFiles,
  type ListedFile,
} from '../../core/file-watermark.ts'
import { canonicalJson } from '../../core/watermark.ts'
import { orderByNameTime, withNamedTime, type DatedFiles } from '../../core/dated-files.ts'
import type { SourceColumnType, SourceTypes } from '../../core/source-types.ts'
import { isNumberType, isPointInTimeType } from '../../core/staged-types.ts'
import type { FileSourceSpec, TableSpec } from '../../core/table-spec.ts'
import type { ExtractRequest, ExtractResult, Source } from '../../ports/source.ts'
import {
  describeDuckDbError,
  duckDbTrouble,
  firstLine,
  SOURCE_MEMORY_LIMIT_VARIABLE,
  type MemoryLimitSetting,
} from '../duckdb/duckdb-errors.ts'
import {
  readParquetColumnNames,
  readParquetColumns,
  readParquetRowCounts,
  sqlIdentifier,
  sqlString,
  sqlStringList,
} from '../duckdb/parquet-schema.ts'
import {
  delimiterOption,
  describeNotCsvText,
  HEAD_BYTES,
  likelyDelimiter,
  notCsvText,
} from './csv-file-kind.ts'
import { csvColumnNames } from './csv-column-names.ts'
import { chooseColumnTypes, showValue, type SniffedFile } from './csv-column-types.ts'
import { readCsvRecords, type CsvRecord } from './csv-records.ts'
import {
  CSV_VALUE_MACROS,
  expectedText,
  hasLeadingZeros,
  readColumn,
  refusedValue,
  withoutLeadingZeros,
} from './csv-value-sql.ts'
import { formatSize, MAX_RECORD_BYTES } from './db-csv-parts.ts'
import { dmsFileOrder, DMS_TIMESTAMP_PATTERN, DMS_TIMESTAMP_TEXT, isDmsFullLoadFile } from './dms-files.ts'
import { debeziumSelect } from './debezium-select.ts'
import { duckdbSelectOfKeptOperations } from './ignored-operations.ts'
import type * as S3FilesModule from './s3-files.ts'
import type { S3File } from './s3-files.ts'
import { openDuckDbEngine, type DuckDbEngine } from '../duckdb/duckdb-engine.ts'

export interface FileSourceOptions {
  /** Folder that relative source paths and globs are resolved against (the project's `baseDir`). */
  readonly baseDir: string
  /** DuckDB `memory_limit` of each extract; beyond it DuckDB spills to the batch's scratch folder. Default '512MB'. */
  readonly memoryLimit?: string
  /** DuckDB worker threads. Default: the number of CPUs, at most 4. */
  readonly threads?: number
  /** Target size of one staged part file; DuckDB starts a new part once a file passes it. Default 64 MiB. */
  readonly partFileSizeBytes?: number
  /** Parquet version of the staged parts (default V1, which every reader decodes; lib/core/staged-parquet.ts). */
  readonly parquetVersion?: StagedParquetVersion
  /**
   * Where `s3://` paths find their settings: `DIMSYNC_S3_ENDPOINT` (an emulator) besides the SDK's own variables
   * (region, credentials; in Lambda the function's role). Default: `process.env`.
   */
  readonly env?: Readonly<Record<string, string | undefined>>
  /**
   * An extract with a time limit (a Lambda) reads Parquet files in rounds of about this many bytes (at least one
   * file), and may stop between two rounds. Default 256 MiB: many small files (DMS output) make few parts.
   */
  readonly roundBytes?: number
  /** The S3 client for `s3://` paths (tests); default: one made from `env`, destroyed by `close()`. */
  readonly s3Client?: S3Client
}

/** New files whose names carry their time, in that order (`time_from_name`); a late one refused or slotted in. */
function datedFiles<T extends ListedFile>(
  table: TableSpec,
  pattern: string,
  files: readonly T[],
  request: ExtractRequest,
): DatedFiles<T> {
  return orderByNameTime(files, {
    table: table.name,
    pattern,
    ...(request.watermark?.namedTime !== undefined ? { lastMerged: request.watermark.namedTime } : {}),
    lateFilesSlotIn: table.validFrom.kind === 'column',
  })
}

/** The prefix of a source path on S3 (its code is imported only for such paths). */

/** The S3 endpoint override (LocalStack, MinIO, s3rver), the variable the staging store reads too. */
const S3_ENDPOINT_VARIABLE = 'DIMSYNC_S3_ENDPOINT'

/** One file a source reads: a local file, or an S3 object (read through a local copy). */
interface SourceFile extends ListedFile {
  /** Local path, or `s3://bucket/key`. */
  readonly path: string
  readonly size: number
  readonly s3?: S3File
}

/** Row group size of the staged parts (DuckDB's default; a good unit for BigQuery and DuckDB loads alike). */
const ROW_GROUP_SIZE = 122_880
/**
 * Types whose values DuckDB's Parquet writer merges in its dictionary because it compares them equal (INTERVAL
 * '1 month' and '30 days', TIMETZ '12:00+01' and '11:00+00'): every row would be staged with whichever came first.
 * Parts with such a column are written without a dictionary.
 */
const MERGED_BY_DICTIONARY = /\bINTERVAL\b|\bTIMETZ\b|TIME WITH TIME ZONE/i
/** DuckDB's read buffer: it must hold the longest row twice. */
const CSV_BUFFER_BYTES = Math.max(16 << 20, MAX_RECORD_BYTES * 2)
/** Characters of a value shown in a message. */
const SHOWN_CHARS = 60
/** DuckDB treats these as glob characters in file names it is given, and has no escape for them. */
const DUCKDB_GLOB_CHARS = /[*?[]/

interface CsvLayout {
  readonly path: string
  readonly columns: readonly StagedColumn[]
  readonly dateFormat: string | undefined
  readonly timestampFormat: string | undefined
}

/** What a CSV read adds to its SELECT: the types it reads with, and the words for a value it refused. */
interface CsvRead {
  /** CSV: the column types read with (recorded for later loads). */
  readonly sourceTypes?: SourceTypes
  /** The refusal of a value the read stopped at (naming its file, line and column), or undefined. */
  readonly explainValue: (error: unknown) => Promise<SourceError | undefined>
}

/** Where a column's type came from, as a refused value's message says it. */
type TypeOrigin = 'declared' | 'recorded' | 'chosen' | 'excluded'
const ORIGINS: Readonly<Record<TypeOrigin, string>> = {
  declared: 'its type declared in columns:',
  recorded: 'the type the column was first loaded as',
  chosen: 'the type of its other values',
  excluded: 'an excluded column',
}

/**
 * Source kind `file`: one CSV or Parquet file, or a glob of files read as ONE snapshot (full extracts only).
 *
 * DuckDB (one in-memory instance per extract) reads the files and writes the staged Parquet parts, so rows never
 * pass through JavaScript and memory stays within `memoryLimit`.
 *
 * CSV rules (RFC 4180): `"` quotes, `""` inside quotes is a quote, no comment lines, no skipped lines. Column
 * types are declared (`columns:`), recorded by earlier loads (`ExtractRequest.sourceTypes`), or chosen from
 * every value of every file and checked (csv-column-types.ts); every value is converted exactly or refused
 * (csv-value-sql.ts). An unquoted empty field is read as NULL, a quoted empty field `""` as the empty string: a
 * CSV writer that quotes strings can thus tell the two apart.
 *
 * All files of a glob must have the same column names (in any order for Parquet and for CSV with a header).
 */
export class FileSource implements Source {
  readonly #baseDir: string
  readonly #memoryLimit: string
  readonly #threads: number
  readonly #partFileSizeBytes: number
  readonly #parquetVersion: StagedParquetVersion
  readonly #env: Readonly<Record<string, string | undefined>>
  readonly #roundBytes: number
  readonly #ownsS3Client: boolean
  #s3Client: S3Client | undefined

  constructor(options: FileSourceOptions) {
    this.#baseDir = resolve(options.baseDir)
    this.#memoryLimit = options.memoryLimit ?? '512MB'
    this.#threads = options.threads ?? Math.max(1, Math.min(4, availableParallelism()))
    this.#partFileSizeBytes = options.partFileSizeBytes ?? 64 * 1024 * 1024
    this.#parquetVersion = options.parquetVersion ?? 'V1'
    this.#env = options.env ?? process.env
    this.#roundBytes = options.roundBytes ?? 256 * 1024 * 1024
    this.#s3Client = options.s3Client
    this.#ownsS3Client = options.s3Client === undefined
  }

  /**
   * The columns (names and DuckDB types) an extract of `table` would stage, without staging anything. Same
   * checks and errors as `extract`; for CSV it costs one full read of each file (type detection). A source that
   * reads new files only is described by its newest file.
   */
  async describe(table: TableSpec, sourceTypes?: SourceTypes): Promise<readonly StagedColumn[]> {
    const spec = fileSpec(table)
    const listed = await this.#listFiles(table.name, spec.path)
    const files = spec.files === 'new_only' ? [newest(listed)] : inReadingOrder(table, listed)
    const workDir = await mkdtemp(join(tmpdir(), 'dimsync-file-source-'))
    return await this.#withSelect(
      table,
      files,
      workDir,
      async (connection, select, _files, names, csv) => {
        const columns = await describeQuery(connection, select)
        await assertValidFromColumn(connection, table, select, columns, names, csv)
        return columns
      },
      sourceTypes,
    )
  }

  /**
   * Reads the table's file(s) and hands them to `request.writer` as Parquet parts. Returns the row count, the
   * staged columns (DuckDB types) and the file names. Every failure is a `SourceError` naming the table and the
   * file (and, for a malformed CSV line, its line number). The manifest is left to the caller.
   *
   * With `files: new_only` only the files `request.watermark` does not cover are read, and the watermark that
   * covers them too is returned as the candidate (committed after the merge). When no file is new, the batch is
   * empty: no rows, the columns of the newest file.
   */
  async extract(request: ExtractRequest): Promise<ExtractResult> {
    const { table } = request
    const spec = fileSpec(table)
    if (request.resume !== undefined)
      return await this.#continuePasses(request, readPassState(table, request.resume))
    const newOnly = spec.files === 'new_only'
    if (newOnly && request.watermark !== undefined && !isFileWatermark(request.watermark)) {
      throw new SourceError(
        table.name,
        `${table.name}: the saved watermark ${canonicalJson(request.watermark)} was not written by a new-files ` +
          'source (the table was read by a cursor before?); remove it from the state store to read every file again',
      )
    }
    const listed = await this.#listFiles(table.name, spec.path)
    const fresh = newOnly ? selectNewFiles(listed, request.watermark) : listed
    const dated =
      newOnly && spec.timeFromName !== undefined
        ? datedFiles(table, spec.timeFromName, fresh, request)
        : undefined
    const chosen = dated?.files ?? inReadingOrder(table, fresh)
    const candidate = newOnly
      ? withNamedTime(nextFileWatermark(request.watermark, chosen), dated?.newest)
      : undefined
    const withCandidate = candidate !== undefined ? { watermarkCandidate: candidate } : {}
    if (chosen.length === 0) {
      // No new file: an empty part that still carries the columns (the merge then changes nothing).
      const staged = await this.#stage(request, [newest(listed)], true)
      return {
        ...staged,
        sourceDescription: `${spec.format} ${spec.path}: no new file (${listed.length} merged already)`,
        ...withCandidate,
      }
    }
    // CSV column types are chosen over all files at once, so only Parquet files may be split over passes.
    if (request.timeLeftMs !== undefined && spec.format === 'parquet' && chosen.length > 1) {
      const files = chosen.map((f) => ({
        name: f.name,
        path: f.path,
        modified: f.modified,
        size: f.size,
        ...(f.s3 ? { s3: f.s3 } : {}),
      }))
      return await this.#continuePasses(request, { version: 1, files, next: 0, ...withCandidate })
    }
    const staged = await this.#stage(request, chosen, false)
    return {
      ...staged,
      sourceDescription: describeSource(
        spec,
        chosen.map((f) => f.name),
      ),
      ...withCandidate,
    }
  }

  /**
   * Stages the files of `state` from `state.next` on, a round of files at a time, while another round surely fits in the
   * time left (twice the slowest round so far); returns a `resume` when files are left. The files and the
   * watermark candidate were fixed by the first pass, so the batch is what that pass listed.
   */
  async #continuePasses(request: ExtractRequest, state: FilePassState): Promise<ExtractResult> {
    const spec = fileSpec(request.table)
    let rows = 0
    let columns: readonly StagedColumn[] = state.columns ?? []
    let next = state.next
    let slowestMs = 0
    while (next < state.files.length) {
      const started = Date.now()
      // A round: the next files up to `roundBytes` (at least one), read as one relation into its own parts.
      const round: SourceFile[] = []
      let bytes = 0
      for (const file of state.files.slice(next)) {
        if (round.length > 0 && bytes + file.size > this.#roundBytes) break
        round.push(file)
        bytes += file.size
      }
      const staged = await this.#stage(request, round, false, rows)
      if (state.columns !== undefined || next > state.next) {
        const names = round.map((f) => f.name).join(', ')
        assertSameStagedColumns(request.table.name, state.files[0]!.name, columns, names, staged.columns)
      }
      columns = staged.columns
      rows += staged.rows
      next += round.length
      slowestMs = Math.max(slowestMs, Date.now() - started)
      const timeLeft = request.timeLeftMs?.()
      if (next < state.files.length && timeLeft !== undefined && timeLeft <= slowestMs * ROUND_MARGIN) break
    }
    const description = describeSource(
      spec,
      state.files.map((f) => f.name),
    )
    const candidate = state.watermarkCandidate
    return {
      rows,
      columns,
      sourceDescription: description,
      ...(candidate !== undefined ? { watermarkCandidate: candidate } : {}),
      ...(next < state.files.length ? { resume: { ...state, next, columns } satisfies FilePassState } : {}),
    }
  }

  /** Reads `files` as one relation and hands it to the writer as parts (none of its rows when `empty`). */
  async #stage(
    request: ExtractRequest,
    files: readonly SourceFile[],
    empty: boolean,
    rowsBefore = 0,
  ): Promise<{ rows: number; columns: readonly StagedColumn[]; sourceTypes?: SourceTypes }> {
    const { table, writer } = request
    const workDir = join(writer.scratchDir, `file-source-${randomBytes(6).toString('hex')}`)
    const stage = async (
      connection: DuckDBConnection,
      fullSelect: string,
      paths: readonly string[],
      names: ReadonlyMap<string, string>,
      csv: CsvRead | undefined,
    ) => {
      const outDir = join(workDir, 'parts')
      const select = empty ? `SELECT * FROM (${fullSelect}) LIMIT 0` : fullSelect
      const described = await describeQuery(connection, select)
      await assertValidFromColumn(connection, table, select, described, names, csv)
      try {
        await connection.run(
          `COPY (${select}) TO ${sqlString(outDir)} (FORMAT parquet, COMPRESSION zstd, ` +
            `ROW_GROUP_SIZE ${ROW_GROUP_SIZE}, FILE_SIZE_BYTES ${this.#partFileSizeBytes}, FILENAME_PATTERN 'data_{i}', ` +
            `PARQUET_VERSION ${this.#parquetVersion}` +
            `${described.some((c) => MERGED_BY_DICTIONARY.test(c.type)) ? ', DICTIONARY_SIZE_LIMIT 0' : ''})`,
        )
      } catch (error) {
        throw (
          (await csv?.explainValue(error)) ??
          (await explainReadError(table, error, names, paths, this.#memory()))
        )
      }
      const partPaths = await listParts(outDir)
      const columns = await readParquetColumns(partPaths, connection)
      const counts = await readParquetRowCounts(partPaths, connection)
      let rows = 0
      for (const { path, rows: partRows } of counts) {
        await writer.addPart(path, partRows)
        rows += partRows
        request.onProgress?.(rowsBefore + rows)
      }
      return { rows, columns, ...(csv?.sourceTypes !== undefined ? { sourceTypes: csv.sourceTypes } : {}) }
    }
    return await this.#withSelect(table, files, workDir, stage, request.sourceTypes)
  }

  /**
   * Opens a DuckDB instance working in `workDir` (removed afterwards), brings S3 objects of `files` into it, and
   * calls `action` with the SELECT that reads all files as one relation. Any non-`SourceError` becomes one.
   */
  async #withSelect<T>(
    table: TableSpec,
    sourceFiles: readonly SourceFile[],
    workDir: string,
    action: (
      connection: DuckDBConnection,
      select: string,
      files: readonly string[],
      names: ReadonlyMap<string, string>,
      csv: CsvRead | undefined,
    ) => Promise<T>,
    recorded?: SourceTypes,
  ): Promise<T> {
    const spec = fileSpec(table)
    await mkdir(workDir, { recursive: true })
    let engine: DuckDbEngine | undefined
    try {
      const files = await this.#localize(table.name, sourceFiles, workDir)
      const names = new Map(files.map((file, i) => [file, sourceFiles[i]!.name]))
      for (const file of files) {
        if ((await stat(file)).size === 0) {
          throw new SourceError(table.name, `${table.name}: ${names.get(file)} is empty (0 bytes)`)
        }
      }
      engine = await openDuckDbEngine({
        threads: this.#threads,
        memoryLimit: this.#memoryLimit,
        // Order does not matter to a snapshot.
        anyOrder: true,
        // Spills go next to the batch (removed with it), never into the working directory.
        spillDirectory: join(workDir, 'duckdb-tmp'),
      })
      const connection = engine.connection
      const read =
        spec.format === 'csv'
          ? await this.#csvSelect(connection, table, spec, files, names, recorded)
          : spec.format === 'json'
            ? { select: await debeziumSelect(connection, table, files, spec.path), csv: undefined }
            : { select: await this.#parquetSelect(connection, table, files, names), csv: undefined }
      const kept = duckdbSelectOfKeptOperations(
        table,
        await withoutExcluded(connection, table, read.select, names),
      )
      const { select, csv } = await withDmsTimes(connection, table, kept, read.csv)
      return await action(connection, select, files, names, csv)
    } catch (error) {
      if (error instanceof SourceError) throw error
      const what = describeDuckDbError(error, `reading ${spec.path}`, this.#memory())
      throw new SourceError(table.name, `${table.name}: ${what}`, { cause: error })
    } finally {
      engine?.close()
      await rm(workDir, { recursive: true, force: true })
    }
  }

  /**
   * The local paths of `files`: S3 objects are streamed to `workDir` first (one at a time: the disk, not
   * memory, holds them), under plain numbered names that DuckDB cannot mistake for a pattern.
   */
  async #localize(tableName: string, files: readonly SourceFile[], workDir: string): Promise<string[]> {
    const paths: string[] = []
    for (const [i, file] of files.entries()) {
      if (file.s3 === undefined) {
        paths.push(file.path)
        continue
      }
      const folder = join(workDir, 'objects')
      await mkdir(folder, { recursive: true })
      const path = join(folder, `object-${i}${extensionOf(file.s3.key)}`)
      const s3 = await this.#s3()
      await s3.files.downloadS3File(s3.client, tableName, file.s3, path)
      paths.push(path)
    }
    return paths
  }

  /**
   * The S3 client and helpers, imported on first use: a run that reads local files only never loads the AWS SDK
   * (10-20 MB of memory for the life of the process).
   */
  async #s3(): Promise<{ client: S3Client; files: typeof S3FilesModule }> {
    const files = await import('./s3-files.ts')
    if (this.#s3Client === undefined) {
      const { makeS3Client } = await import('../aws/aws-clients.ts')
      this.#s3Client = makeS3Client({ endpoint: this.#env[S3_ENDPOINT_VARIABLE] || undefined })
    }
    return { client: this.#s3Client, files }
  }

  #memory(): MemoryLimitSetting {
    return { limit: this.#memoryLimit, variable: SOURCE_MEMORY_LIMIT_VARIABLE }
  }

  /** Each extract opens and closes its own DuckDB instance; only an S3 client this source made is left. */
  async close(): Promise<void> {
    if (this.#ownsS3Client) this.#s3Client?.destroy()
    this.#s3Client = undefined
  }

  /** The files `pattern` names (local, or S3 objects), sorted by name; none is an error naming the pattern. */
  async #listFiles(tableName: string, pattern: string): Promise<SourceFile[]> {
    if (pattern.startsWith(S3_SCHEME)) {
      const s3 = await this.#s3()
      const objects = await s3.files.listS3Files(s3.client, tableName, pattern)
      if (objects.length === 0) throw new SourceError(tableName, `${tableName}: no object matches ${pattern}`)
      return objects.map((object) => ({
        name: object.name,
        path: object.name,
        modified: object.modified,
        size: object.size,
        s3: object,
      }))
    }
    const paths = await this.#resolveFiles(tableName, pattern)
    const files: SourceFile[] = []
    for (const path of paths) {
      const info = await stat(path)
      files.push({ name: this.#displayName(path), path, modified: info.mtime.toISOString(), size: info.size })
    }
    return files
  }

  async #resolveFiles(tableName: string, pattern: string): Promise<string[]> {
    let files: string[]
    let folder: string
    if (!isDynamicPattern(pattern)) {
      const path = resolve(this.#baseDir, pattern)
      folder = this.#baseDir
      const info = await stat(path).catch(() => undefined)
      files = info?.isFile() ? [path] : []
    } else {
      // Glob from the pattern's fixed leading folders, so `../data/*.csv` and absolute patterns work too.
      const segments = pattern.split('/')
      const firstDynamic = segments.findIndex((segment) => isDynamicPattern(segment))
      folder = resolve(this.#baseDir, segments.slice(0, firstDynamic).join('/') || '.')
      const rest = segments.slice(firstDynamic).join('/')
      files = await glob(rest, { cwd: folder, absolute: true, onlyFiles: true, expandDirectories: false })
      files.sort()
    }
    if (files.length === 0) {
      const exists = await stat(folder).then(
        (info) => info.isDirectory(),
        () => false,
      )
      throw new SourceError(
        tableName,
        `${tableName}: no file matches ${pattern} in ${folder}${exists ? '' : ' (the folder does not exist)'}`,
      )
    }
    for (const file of files) {
      if (DUCKDB_GLOB_CHARS.test(file)) {
        throw new SourceError(
          tableName,
          `${tableName}: ${this.#displayName(file)}: file names with *, ? or [ cannot be read (DuckDB takes them as a pattern)`,
        )
      }
    }
    return files
  }

  /**
   * The SELECT that reads CSV `files` as one relation, every column converted exactly to its type (values a type
   * does not hold exactly stop the read: csv-value-sql.ts). Types come from the table's declared `columns`, then
   * from `recorded` (the types of earlier loads), and only for columns neither names from the files' values
   * (csv-column-types.ts), which then costs a full read of each file.
   */
  async #csvSelect(
    connection: DuckDBConnection,
    table: TableSpec,
    spec: FileSourceSpec,
    files: readonly string[],
    names: ReadonlyMap<string, string>,
    recorded: SourceTypes | undefined,
  ): Promise<{ select: string; csv: CsvRead }> {
    const dialect =
      `header=${spec.csv.header}, delim=${sqlString(spec.csv.delimiter)}, quote='"', escape='"', ` +
      `comment='', skip=0, allow_quoted_nulls=false, max_line_size=${MAX_RECORD_BYTES}, buffer_size=${CSV_BUFFER_BYTES}`
    const read: string[][] = []
    for (const file of files) {
      await assertCsvText(table, file, names.get(file)!)
      read.push(await assertCsvHead(table, file, names.get(file)!, spec))
    }
    const fileNames = files.map((file) => names.get(file)!)
    const { heads, order, orderFrom, lacksOperation, positional } = csvColumnNames(
      table,
      spec,
      fileNames,
      read,
    )
    const columnsOf = (head: readonly string[]) => head.map((name) => ({ name, type: '' }))
    const operation = table.changes?.operation
    for (const [i, head] of heads.entries()) {
      if (i === orderFrom) continue
      const expected = lacksOperation[i] ? order.filter((name) => name !== operation?.column) : order
      const [a, b] = [fileNames[orderFrom]!, fileNames[i]!]
      assertSameColumns(table.name, a, columnsOf(expected), b, columnsOf(head), positional)
    }
    const excluded = new Set(table.exclude)
    const declared = new Map((spec.columns ?? []).map((c) => [c.name, c]))
    for (const name of declared.keys()) {
      if (order.includes(name) && !excluded.has(name)) continue
      const shown = files.map((file) => names.get(file)).join(', ')
      throw new SourceError(
        table.name,
        excluded.has(name)
          ? `${table.name}: column ${name} is excluded, so it is never read: remove it from columns:`
          : `${table.name}: column ${name} of columns: is not a column of ${shown}; its columns are ${order.join(', ')}`,
      )
    }
    const kept = new Map((recorded?.columns ?? []).map((c) => [c.name, c]))
    const origins = new Map<string, TypeOrigin>()
    const types = new Map<string, SourceColumnType>()
    for (const name of order) {
      const known = excluded.has(name) ? { name, type: 'VARCHAR' } : (declared.get(name) ?? kept.get(name))
      if (known === undefined) continue
      types.set(name, known)
      origins.set(name, excluded.has(name) ? 'excluded' : declared.has(name) ? 'declared' : 'recorded')
    }
    for (const macro of CSV_VALUE_MACROS) await connection.run(macro)
    // A declared number type reads `007` as 7 because the user said so; a chosen or recorded one refuses it.
    const numbersOf = (name: string): 'any spelling' | 'no leading zeros' =>
      declared.has(name) ? 'any spelling' : 'no leading zeros'
    const fileSelect = (file: string, index: number, typeOf: (name: string) => SourceColumnType) => {
      const head = heads[index]!
      const columns = head.map((name) => `${sqlString(name)}: 'VARCHAR'`).join(', ')
      const list = order.map((name) =>
        lacksOperation[index] && name === operation?.column
          ? `${sqlString(operation.insert[0]!)} AS ${sqlIdentifier(name)}`
          : `${readColumn(typeOf(name), sqlIdentifier(name), index, order.indexOf(name), numbersOf(name))} AS ${sqlIdentifier(name)}`,
      )
      return (
        `SELECT ${list.join(', ')} FROM read_csv(${sqlString(file)}, auto_detect=false, ${dialect}, ` +
        `columns={${columns}}, strict_mode=true, null_padding=false, ignore_errors=false)`
      )
    }
    const locate = (name: string, value: string) => locateValue(files, names, heads, spec, name, value)
    const unknown = order.filter((name) => !types.has(name))
    if (unknown.length > 0) {
      const sniffed: SniffedFile[] = []
      for (const [i, file] of files.entries()) {
        const layout = await sniffCsv(connection, table, file, names.get(file)!, dialect, spec)
        sniffed.push({
          name: names.get(file)!,
          types: new Map(
            heads[i]!.map((name, position) => [name, layout.columns[position]?.type ?? 'VARCHAR']),
          ),
          ...(layout.dateFormat !== undefined ? { dateFormat: layout.dateFormat } : {}),
          ...(layout.timestampFormat !== undefined ? { timestampFormat: layout.timestampFormat } : {}),
        })
      }
      const text = { name: '', type: 'VARCHAR' }
      const textSelect = files.map((file, i) => fileSelect(file, i, () => text)).join(' UNION ALL ')
      let chosen: SourceColumnType[]
      try {
        chosen = await chooseColumnTypes(
          {
            connection,
            tableName: table.name,
            names: order,
            textSelect,
            files: sniffed,
            locate,
            // A valid_from column of text is refused by its own check, which names the row by its key.
            plainText: table.validFrom.kind === 'column' ? [table.validFrom.column] : [],
          },
          unknown,
        )
      } catch (error) {
        if (error instanceof SourceError) throw error
        throw await explainReadError(table, error, names, files, this.#memory())
      }
      for (const column of chosen) {
        types.set(column.name, column)
        origins.set(column.name, 'chosen')
      }
    }
    const typeOf = (name: string) => types.get(name)!
    const select = files.map((file, i) => fileSelect(file, i, typeOf)).join(' UNION ALL ')
    const stored = order.filter((name) => !excluded.has(name)).map(typeOf)
    const storedNames = new Set(stored.map((c) => c.name))
    const sourceTypes: SourceTypes = {
      version: 1,
      columns: [...(recorded?.columns ?? []).filter((c) => !storedNames.has(c.name)), ...stored],
    }
    const explainValue = async (error: unknown): Promise<SourceError | undefined> => {
      const refused = refusedValue(error instanceof Error ? error.message : String(error))
      if (refused === undefined) return undefined
      const name = order[refused.column]!
      const column = typeOf(name)
      const file = files[refused.file]!
      const where = await locateValue([file], names, [heads[refused.file]!], spec, name, refused.value)
      if (
        numbersOf(name) === 'no leading zeros' &&
        isNumberType(column.type) &&
        hasLeadingZeros(refused.value)
      )
        return new SourceError(
          table.name,
          `${table.name}: ${where}: column ${name} holds ${showValue(refused.value)}, a number written with ` +
            `leading zeros, which a ${column.type} (${ORIGINS[origins.get(name)!]}) would store as ` +
            `${withoutLeadingZeros(refused.value)}; nothing was staged. If the zeros belong to the value (a ZIP ` +
            `code, an account number), declare the column as text in the source of table ${table.name}: ` +
            `columns: { ${name}: VARCHAR } (its stored values then change type: evolve it or reload); if they ` +
            `do not, declare its number type: columns: { ${name}: ${column.type} }`,
          { cause: error },
        )
      return new SourceError(
        table.name,
        `${table.name}: ${where}: column ${name} holds ${showValue(refused.value)}, which is not ` +
          `${expectedText(column)} (${ORIGINS[origins.get(name)!]}); nothing was staged. Fix the value, or ` +
          `declare the column's type in the source of table ${table.name}: columns: { ${name}: VARCHAR }`,
        { cause: error },
      )
    }
    return { select, csv: { sourceTypes, explainValue } }
  }

  async #parquetSelect(
    connection: DuckDBConnection,
    table: TableSpec,
    files: readonly string[],
    names: ReadonlyMap<string, string>,
  ): Promise<string> {
    const tableName = table.name
    const schemas: StagedColumn[][] = []
    for (const file of files) {
      const collision = caseOnlyCollision(await readParquetColumnNames(file, connection).catch(() => []))
      if (collision !== undefined)
        throw new SourceError(
          tableName,
          `${tableName}: ${names.get(file)} ${caseOnlyCollisionText(collision)}; give every column its own name`,
        )
      try {
        schemas.push(await readParquetColumns([file], connection))
      } catch (error) {
        throw new SourceError(
          tableName,
          `${tableName}: ${names.get(file)} is not a readable Parquet file: ${firstLine(error)}`,
          {
            cause: error,
          },
        )
      }
    }
    // AWS DMS full-load files lack the operation column unless IncludeOpForFullLoad is set: their rows are inserts.
    const operation = table.changes?.format === 'dms' ? table.changes.operation : undefined
    const lacksOperation = schemas.map(
      (schema, i) =>
        operation !== undefined &&
        isDmsFullLoadFile(names.get(files[i]!)!) &&
        !schema.some((column) => column.name === operation.column),
    )
    const complete = lacksOperation.indexOf(false)
    const orderFrom = Math.max(complete, 0)
    const first =
      complete >= 0 ? schemas[complete]! : [{ name: operation!.column, type: 'VARCHAR' }, ...schemas[0]!]
    for (const [i, full] of schemas.entries()) {
      if (i === orderFrom) continue
      const schema = lacksOperation[i] ? [first.find((c) => c.name === operation!.column)!, ...full] : full
      const [a, b] = [names.get(files[orderFrom]!)!, names.get(files[i]!)!]
      assertSameColumns(tableName, a, first, b, schema, false)
      const types = new Map(first.map((column) => [column.name, column.type]))
      for (const column of schema) {
        if (types.get(column.name) !== column.type) {
          throw new SourceError(
            tableName,
            `${tableName}: column "${column.name}" is ${column.type} in ${b} but ${types.get(column.name)} in ${a}`,
          )
        }
      }
    }
    // The column sets were checked equal, so matching by name only absorbs a different column order.
    const selectOf = (group: readonly string[], insert: string | undefined) =>
      `SELECT ${first
        .map((column) =>
          insert !== undefined && column.name === operation?.column
            ? `CAST(${sqlString(insert)} AS ${column.type}) AS ${sqlIdentifier(column.name)}`
            : sqlIdentifier(column.name),
        )
        .join(', ')} FROM read_parquet(${sqlStringList(group)}, union_by_name=true)`
    const fullLoad = files.filter((_, i) => lacksOperation[i])
    const others = files.filter((_, i) => !lacksOperation[i])
    return [
      ...(fullLoad.length > 0 ? [selectOf(fullLoad, operation!.insert[0]!)] : []),
      ...(others.length > 0 ? [selectOf(others, undefined)] : []),
    ].join(' UNION ALL ')
  }

  #displayName(file: string): string {
    const rel = relative(this.#baseDir, file)
    return rel.startsWith('..') || isAbsolute(rel) ? file : rel
  }
}

async function sniffCsv(
  connection: DuckDBConnection,
  table: TableSpec,
  file: string,
  name: string,
  dialect: string,
  spec: FileSourceSpec,
): Promise<CsvLayout> {
  let row: Record<string, unknown>
  try {
    // sample_size=-1: detect types from every line, not from the first 20k.
    const reader = await connection.runAndReadAll(
      `SELECT Columns, DateFormat, TimestampFormat FROM sniff_csv(${sqlString(file)}, ${dialect}, sample_size=-1)`,
    )
    row = reader.getRowObjectsJson()[0] as Record<string, unknown>
  } catch (error) {
    // The sniffer only says it could not find a layout; a strict read with explicit columns says which line is bad.
    await diagnoseCsv(connection, table, file, name, dialect, spec)
    throw await explainReadError(
      table,
      error,
      new Map([[file, name]]),
      [file],
      undefined,
      'could not detect the CSV layout: ',
    )
  }
  const columns = (row.Columns as { name: string; type: string }[]).map(({ name, type }) => ({ name, type }))
  return {
    path: file,
    columns,
    dateFormat: typeof row.DateFormat === 'string' && row.DateFormat !== '' ? row.DateFormat : undefined,
    timestampFormat:
      typeof row.TimestampFormat === 'string' && row.TimestampFormat !== '' ? row.TimestampFormat : undefined,
  }
}

/** Reads `file` as all-VARCHAR columns with strict parsing; throws the re-phrased error of the first bad line. */
async function diagnoseCsv(
  connection: DuckDBConnection,
  table: TableSpec,
  file: string,
  name: string,
  dialect: string,
  spec: FileSourceSpec,
): Promise<void> {
  const header = await firstRecord(file, spec.csv.delimiter)
  if (header === undefined) return
  const fields = header.fields.map((_, i) => `c${i}`)
  const columns = fields.map((field) => `${sqlString(field)}: 'VARCHAR'`).join(', ')
  // Every value is read (a bare count(*) skips them), so an encoding error is found too.
  const lengths = fields.map((field) => `sum(length(${sqlIdentifier(field)}))`).join(', ')
  try {
    await connection.run(
      `SELECT ${lengths} FROM read_csv(${sqlString(file)}, auto_detect=false, ${dialect}, columns={${columns}}, ` +
        `strict_mode=true, null_padding=false, ignore_errors=false)`,
    )
  } catch (error) {
    throw await explainReadError(table, error, new Map([[file, name]]), [file], undefined)
  }
}

/**
 * Refuses a file that is not UTF-8 text (UTF-16, Parquet, gzip without a .gz name) before DuckDB reads it as a
 * broken CSV, naming what it is instead.
 */
async function assertCsvText(table: TableSpec, file: string, name: string): Promise<void> {
  if (file.toLowerCase().endsWith('.gz')) return
  const handle = await open(file, 'r')
  let head: Uint8Array
  try {
    const buffer = Buffer.alloc(HEAD_BYTES)
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0)
    head = buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
  const found = notCsvText(head)
  if (found !== undefined)
    throw new SourceError(table.name, `${table.name}: ${name} ${describeNotCsvText(found, table.name)}`)
}

/** The first record of a CSV file (a byte-order mark and blank lines skipped), or undefined. */
async function firstRecord(file: string, delimiter: string): Promise<CsvRecord | undefined> {
  for await (const record of readCsvRecords(file, { delimiter, prefixChars: 1000 })) {
    if (record.bytes > 0) return withoutBom(record)
  }
  return undefined
}

function withoutBom(record: CsvRecord): CsvRecord {
  const [first, ...rest] = record.fields
  if (first === undefined || !first.text.startsWith('\ufeff')) return record
  return { ...record, fields: [{ bytes: first.bytes - 3, text: first.text.slice(1) }, ...rest] }
}

/**
 * The header names a column of each position, once (DuckDB would rename a repeated name to `name_1` and an empty
 * one to `column2`, and they would load as new columns), and a data row follows: a file with a header only has no
 * column types and no keys, and as a snapshot it would look as if every key had been deleted.
 */
async function assertCsvHead(
  table: TableSpec,
  file: string,
  name: string,
  spec: FileSourceSpec,
): Promise<string[]> {
  const tableName = table.name
  const records = readCsvRecords(file, { delimiter: spec.csv.delimiter, prefixChars: 1000 })
  let header: CsvRecord | undefined
  let firstRow: CsvRecord | undefined
  let hasRow = false
  try {
    for await (const record of records) {
      if (record.bytes === 0) continue
      if (spec.csv.header && header === undefined) {
        header = withoutBom(record)
        continue
      }
      firstRow = withoutBom(record)
      hasRow = true
      break
    }
  } finally {
    await records.return(undefined)
  }
  const refuse = (what: string, separator = ': ') =>
    new SourceError(tableName, `${tableName}: ${name}${separator}${what}`)
  const firstLine = header ?? firstRow
  if (firstLine !== undefined) {
    const texts = firstLine.fields.map((field) => field.text)
    const other = likelyDelimiter(texts, spec.csv.delimiter)
    if (other !== undefined) {
      throw refuse(
        `the ${header === undefined ? 'first line' : 'header'} ${JSON.stringify(texts[0])} is one column when ` +
          `split at ${JSON.stringify(spec.csv.delimiter).replaceAll('"', "'")}; it looks separated by ` +
          `${other === '\t' ? 'tabs' : `'${other}'`}: set ${delimiterOption(other)} in the source of table ${tableName}`,
      )
    }
  }
  if (header !== undefined) {
    const seen = new Map<string, number>()
    for (const [i, field] of header.fields.entries()) {
      const column = field.text.trim()
      if (column === '') throw refuse(`column ${i + 1} of the header has no name; give every column a name`)
      const earlier = seen.get(column.toLowerCase())
      if (earlier !== undefined) {
        throw refuse(
          `columns ${earlier + 1} and ${i + 1} of the header are both named "${column}" (names are compared ` +
            `without case); give every column its own name`,
        )
      }
      seen.set(column.toLowerCase(), i)
    }
  }
  if (!hasRow) {
    const why =
      table.changes === undefined
        ? 'an empty snapshot is refused (it has no column types, and it would look as if every key had been deleted)'
        : 'a file without rows has no column types; leave it out of the change feed'
    throw refuse(`${spec.csv.header ? 'has a header but no rows' : 'has no rows'}; ${why}`, ' ')
  }
  if (header !== undefined) return header.fields.map((field) => field.text.trim())
  const count = firstRow!.fields.length
  return firstRow!.fields.map((_, i) => headerlessName(i, count))
}

/** DuckDB's name for column `index` of `count` in a file without a header: column0, or column07 of 11. */
function headerlessName(index: number, count: number): string {
  return `column${String(index).padStart(String(count - 1).length, '0')}`
}

/**
 * Where `value` stands in column `column` of the first of `files` that holds it: `customers.csv line 4` (the
 * file's own line, a header and line ends inside quoted values counted), or the file names when none does.
 * Compares the first 200 characters, all a refused value's error keeps.
 */
async function locateValue(
  files: readonly string[],
  names: ReadonlyMap<string, string>,
  heads: readonly (readonly string[])[],
  spec: FileSourceSpec,
  column: string,
  value: string,
): Promise<string> {
  const wanted = [...value].slice(0, 200).join('')
  for (const [i, file] of files.entries()) {
    const position = heads[i]!.indexOf(column)
    if (position < 0) continue
    let header = spec.csv.header
    for await (const record of readCsvRecords(file, { delimiter: spec.csv.delimiter, prefixChars: 200 })) {
      if (record.bytes === 0) continue
      if (header) {
        header = false
        continue
      }
      if (record.fields[position]?.text === wanted) return `${names.get(file)} line ${record.line}`
    }
  }
  return files.map((file) => names.get(file)).join(', ')
}

/**
 * The SELECT without the table's excluded columns: they are never staged, so no copy of them reaches the
 * warehouse (nor its staging table). An excluded column the files lack is a mistake in the config: refused.
 */
async function withoutExcluded(
  connection: DuckDBConnection,
  table: TableSpec,
  select: string,
  names: ReadonlyMap<string, string>,
): Promise<string> {
  if (table.exclude.length === 0) return select
  const columns = await describeQuery(connection, select)
  const present = new Set(columns.map((c) => c.name))
  for (const name of table.exclude) {
    if (present.has(name)) continue
    throw new SourceError(
      table.name,
      `${table.name}: excluded column ${name} is not a column of ${[...names.values()].join(', ')}; ` +
        `its columns are ${columns.map((c) => c.name).join(', ')}`,
    )
  }
  const excluded = new Set(table.exclude)
  const kept = columns.filter((c) => !excluded.has(c.name)).map((c) => sqlIdentifier(c.name))
  return `SELECT ${kept.join(', ')} FROM (${select})`
}

/** `files` in the order the table's feed was written: AWS DMS's full load first (dms-files.ts), else as listed. */
function inReadingOrder<T extends { readonly name: string }>(table: TableSpec, files: readonly T[]): T[] {
  return table.changes?.format === 'dms' ? dmsFileOrder(files) : [...files]
}

/** Marks the DuckDB error raised by a DMS change time that is not DMS's timestamp text. */
const DMS_TIME_MARKER = 'dimsync-dms-time'

/**
 * AWS DMS writes its TimestampColumnName column as text (in Parquet files too): under `format: dms` a text
 * `valid_from` column is read as TIMESTAMP (UTC, to the microsecond), and a value that is not DMS's timestamp text
 * stops the read; the returned `csv.explainValue` names its key and value.
 */
async function withDmsTimes(
  connection: DuckDBConnection,
  table: TableSpec,
  select: string,
  csv: CsvRead | undefined,
): Promise<{ select: string; csv: CsvRead | undefined }> {
  if (table.changes?.format !== 'dms' || table.validFrom.kind !== 'column') return { select, csv }
  const name = table.validFrom.column
  const column = (await describeQuery(connection, select)).find((c) => c.name === name)
  if (column?.type !== 'VARCHAR') return { select, csv }
  const text = sqlIdentifier(name)
  const matches = `regexp_full_match(${text}, ${sqlString(DMS_TIMESTAMP_PATTERN)})`
  const read =
    `CASE WHEN ${text} IS NULL THEN NULL WHEN ${matches} THEN CAST(${text} AS TIMESTAMP) ` +
    `ELSE error(${sqlString(DMS_TIME_MARKER)}) END`
  const explainTime = async (error: unknown): Promise<SourceError | undefined> => {
    if (!String(error instanceof Error ? error.message : error).includes(DMS_TIME_MARKER)) return undefined
    const keys = table.key.map(sqlIdentifier)
    const reader = await connection.runAndReadAll(
      `SELECT ${[text, ...keys].join(', ')} FROM (${select}) WHERE ${text} IS NOT NULL AND NOT ${matches} LIMIT 1`,
    )
    const [row] = reader.getRowsJS()
    const key = table.key.map((k, i) => `${k}=${showValue(row?.[i + 1])}`).join(', ')
    return new SourceError(
      table.name,
      `${table.name}: valid_from column ${name} holds ${showValue(row?.[0])} (${key}), which is not ` +
        `${DMS_TIMESTAMP_TEXT}; nothing was staged. Fix the value, or read the table without format: dms`,
      { cause: error },
    )
  }
  return {
    select: `SELECT * REPLACE (${read} AS ${text}) FROM (${select})`,
    csv: {
      ...(csv?.sourceTypes !== undefined ? { sourceTypes: csv.sourceTypes } : {}),
      explainValue: async (error) => (await csv?.explainValue(error)) ?? (await explainTime(error)),
    },
  }
}

/**
 * A `valid_from: { column }` must hold dates or timestamps: a text column would fail in the middle of the merge.
 * Names the first row whose value is not an instant.
 */
async function assertValidFromColumn(
  connection: DuckDBConnection,
  table: TableSpec,
  select: string,
  columns: readonly StagedColumn[],
  names: ReadonlyMap<string, string>,
  csv: CsvRead | undefined,
): Promise<void> {
  if (table.validFrom.kind !== 'column') return
  const name = table.validFrom.column
  const column = columns.find((c) => c.name === name)
  if (column === undefined || isPointInTimeType(column.type)) return
  const keys = table.key.filter((k) => columns.some((c) => c.name === k))
  let reader
  try {
    reader = await connection.runAndReadAll(
      `SELECT ${[...keys, name].map(sqlIdentifier).join(', ')} FROM (${select}) ` +
        `WHERE ${sqlIdentifier(name)} IS NOT NULL AND TRY_CAST(${sqlIdentifier(name)} AS TIMESTAMPTZ) IS NULL LIMIT 1`,
    )
  } catch (error) {
    throw (await csv?.explainValue(error)) ?? error
  }
  const [row] = reader.getRowsJS()
  const files = [...names.values()].join(', ')
  const example =
    row === undefined
      ? ''
      : ` (for example the row with ${keys.map((k, i) => `${k}=${showValue(row[i])}`).join(', ')} holds ` +
        `${showValue(row[keys.length])})`
  throw new SourceError(
    table.name,
    `${table.name}: valid_from column ${name} of ${files} is ${column.type}, not dates or timestamps${example}; ` +
      'fix the values, or choose another valid_from column',
  )
}

function assertSameColumns(
  tableName: string,
  firstName: string,
  first: readonly StagedColumn[],
  otherName: string,
  other: readonly StagedColumn[],
  positional: boolean,
): void {
  const a = first.map((column) => column.name)
  const b = other.map((column) => column.name)
  if (positional) {
    if (a.length !== b.length) {
      throw new SourceError(
        tableName,
        `${tableName}: ${otherName} has ${b.length} columns but ${firstName} has ${a.length}; all files must have the same columns`,
      )
    }
    return
  }
  const extra = b.find((name) => !a.includes(name))
  if (extra !== undefined) {
    throw new SourceError(
      tableName,
      `${tableName}: ${otherName} has column "${extra}" which ${firstName} does not have; all files must have the same columns`,
    )
  }
  const missing = a.find((name) => !b.includes(name))
  if (missing !== undefined) {
    throw new SourceError(
      tableName,
      `${tableName}: ${otherName} lacks column "${missing}" which ${firstName} has; all files must have the same columns`,
    )
  }
}

/** A pass starts another file only if the time left is this many times its slowest file so far. */
const ROUND_MARGIN = 2

/** Where a file extract split over passes stands (`ExtractResult.resume`). */
interface FilePassState {
  readonly version: 1
  /** The files of the batch, fixed by its first pass, in reading order. */
  readonly files: readonly SourceFile[]
  /** Index of the next file to read. */
  readonly next: number
  /** The columns the earlier passes staged: every later file must stage the same. */
  readonly columns?: readonly StagedColumn[]
  readonly watermarkCandidate?: Watermark
}

function readPassState(table: TableSpec, resume: unknown): FilePassState {
  const state = resume as Partial<FilePassState> | null
  if (
    state === null ||
    typeof state !== 'object' ||
    state.version !== 1 ||
    !Array.isArray(state.files) ||
    typeof state.next !== 'number'
  ) {
    throw new SourceError(
      table.name,
      `${table.name}: the saved progress of the file extract is damaged; start a new extract`,
    )
  }
  return state as FilePassState
}

function assertSameStagedColumns(
  tableName: string,
  firstName: string,
  first: readonly StagedColumn[],
  otherName: string,
  other: readonly StagedColumn[],
): void {
  assertSameColumns(tableName, firstName, first, otherName, other, false)
  const types = new Map(first.map((column) => [column.name, column.type]))
  for (const column of other) {
    if (types.get(column.name) !== column.type) {
      throw new SourceError(
        tableName,
        `${tableName}: column "${column.name}" is ${column.type} in ${otherName} but ${types.get(column.name)} in ${firstName}`,
      )
    }
  }
}

/** The file of `files` modified last (ties: the last name). */
function newest(files: readonly SourceFile[]): SourceFile {
  return selectNewFiles(files, undefined).at(-1)!
}

function extensionOf(key: string): string {
  const lower = key.toLowerCase()
  if (lower.endsWith('.csv.gz')) return '.csv.gz'
  const json = /\.(json|jsonl|ndjson)\.gz$/.exec(lower)
  if (json !== null) return json[0]
  return /\.[a-z0-9]{1,8}$/.exec(lower)?.[0] ?? ''
}

/** The table's file source spec; a file source reads whole files, so its extract mode is full. */
function fileSpec(table: TableSpec): FileSourceSpec {
  const spec = table.source
  if (spec.type !== 'file') {
    throw new SourceError(table.name, `${table.name}: FileSource cannot read a ${spec.type} source`)
  }
  if (spec.format === 'json' && table.changes?.format !== 'debezium')
    throw new SourceError(
      table.name,
      `${table.name}: JSON files are read as Debezium change events only: set extract: { mode: changes, format: debezium }`,
    )
  if (table.extract.mode !== 'full') {
    throw new SourceError(
      table.name,
      `${table.name}: a file source supports full extracts only (extract.mode is ${table.extract.mode})`,
    )
  }
  return spec
}

async function describeQuery(connection: DuckDBConnection, select: string): Promise<StagedColumn[]> {
  const reader = await connection.runAndReadAll(`DESCRIBE ${select}`)
  return reader
    .getRowObjectsJson()
    .map((row) => ({ name: String(row.column_name), type: String(row.column_type) }))
}

async function listParts(outDir: string): Promise<string[]> {
  const names = (await readdir(outDir)).filter((name) => /^data_\d+\.parquet$/.test(name))
  // Numeric order (data_2 before data_10) keeps part numbering stable and readable.
  names.sort((a, b) => Number(/\d+/.exec(a)![0]) - Number(/\d+/.exec(b)![0]))
  return names.map((name) => join(outDir, name))
}

/**
 * Turns DuckDB's multi-line CSV error into one line naming the file and line (`customers: data/customers.csv
 * line 17: expected 3 columns, found 4`), a row over the size limit by its key and widest column, bytes that are
 * not UTF-8 as an encoding problem, and a full disk or memory as such. Never DuckDB's `CSV Error on Line`.
 */
async function explainReadError(
  table: Pick<TableSpec, 'name' | 'key'> & { readonly source?: TableSpec['source'] },
  error: unknown,
  names: ReadonlyMap<string, string>,
  files: readonly string[],
  memory: MemoryLimitSetting | undefined,
  context = '',
): Promise<SourceError> {
  const tableName = table.name
  const message = error instanceof Error ? error.message : String(error)
  const fileInMessage = /^\s*file = (.+)$/m.exec(message)?.[1]?.trim()
  const path = fileInMessage ?? (files.length === 1 ? files[0] : undefined)
  const file = path === undefined ? undefined : (names.get(path) ?? path)
  const make = (text: string) => new SourceError(tableName, `${tableName}: ${text}`, { cause: error })
  if (duckDbTrouble(error) !== 'other') {
    return make(describeDuckDbError(error, `reading ${file ?? 'the files'}`, memory))
  }
  if (/Maximum line size/i.test(message) && path !== undefined) {
    const oversized = await describeOversizedRow(
      path,
      table.key,
      table.source?.type === 'file' ? table.source.csv : undefined,
    )
    if (oversized !== undefined) return make(`${file}: ${oversized}`)
  }
  const line = /CSV Error on Line: (\d+)/.exec(message)?.[1]
  const where = `${file ?? 'CSV'}${line === undefined ? ':' : ` line ${line}:`}`
  const columns = /Expected Number of Columns: (\d+) Found: (\d+)/.exec(message)
  let reason: string
  if (columns !== null) reason = `expected ${columns[1]} columns, found ${columns[2]}`
  else if (/unterminated quote/i.test(message)) reason = 'unterminated quoted value'
  else if (/Invalid unicode|not utf-8/i.test(message))
    reason = 'the file is not UTF-8 text (an invalid byte sequence); save it as UTF-8'
  else if (line !== undefined) reason = `${context}${csvErrorReason(message)}`
  else reason = `${context}${firstLine(error)}`
  return make(`${where} ${reason}`)
}

/** The row over the size limit: its key and its widest column, read from the file (after its header). */
async function describeOversizedRow(
  path: string,
  key: readonly string[],
  csv: FileSourceSpec['csv'] | undefined,
): Promise<string | undefined> {
  let names: readonly string[] | undefined
  for await (const record of readCsvRecords(path, {
    delimiter: csv?.delimiter ?? ',',
    prefixChars: SHOWN_CHARS,
  })) {
    if (names === undefined && (csv?.header ?? true)) {
      names = withoutBom(record).fields.map((f) => f.text.trim())
      continue
    }
    if (record.bytes <= MAX_RECORD_BYTES) continue
    const columns = names ?? record.fields.map((_, i) => `column${i}`)
    const fields = record.fields
    const widest = fields.reduce((best, field, i) => (field.bytes > fields[best]!.bytes ? i : best), 0)
    const keyText = key.map((k) => `${k}=${showValue(fields[columns.indexOf(k)]?.text ?? null)}`).join(', ')
    return (
      `${keyText === '' ? 'a row' : `the row with ${keyText}`} is larger than the ${formatSize(MAX_RECORD_BYTES)} ` +
      `a row may hold (column ${columns[widest] ?? widest + 1} holds ${formatSize(fields[widest]?.bytes ?? 0)})`
    )
  }
  return undefined
}

function csvErrorReason(message: string): string {
  const lines = message.split('\n')
  const start = lines.findIndex((line) => line.startsWith('Original Line:'))
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('Possible')) break
    if (line.trim() !== '') return line.trim()
  }
  return 'malformed line'
}

function describeSource(spec: FileSourceSpec, names: readonly string[]): string {
  if (names.length === 1 && names[0] === spec.path) return `${spec.format} ${spec.path}`
  const shown = names.length > 20 ? [...names.slice(0, 20), `and ${names.length - 20} more`] : names
  return `${spec.format} ${spec.path}: ${shown.join(', ')}`
}
