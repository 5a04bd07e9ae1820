import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { invalid } from './api-errors.ts'
import { fieldOfZetaType, googleSqlTypeName, legacyTypeName, zetaTypeOfField } from './field-types.ts'
import type { Column } from './table-store.ts'
import type { Proto } from './zetasql-service.ts'
import { valueFromText, type Value } from './values.ts'

/** A column of a Parquet file as DuckDB reads it (`BIGINT`, `DECIMAL(12,2)`, `TIMESTAMP WITH TIME ZONE`, ...). */
export interface ParquetColumn {
  readonly name: string
  readonly duckDbType: string
}

export interface ParquetContent {
  readonly columns: readonly ParquetColumn[]
  /** Every row as text per column (what `valueFromText` reads), in file order. */
  readonly rows: readonly (readonly (string | null)[])[]
}

/**
 * Reads a Parquet file (the bytes of an upload) with DuckDB, each value as the text `valueFromText` reads for
 * the BigQuery type it loads into: integers and decimals in decimal, TIMESTAMP (UTC-adjusted) as
 * microseconds since the epoch, DATETIME as `YYYY-MM-DD HH:MM:SS.ffffff`, BYTES in base64.
 */
export async function readParquet(bytes: Buffer): Promise<ParquetContent> {
  const dir = await mkdtemp(join(tmpdir(), 'bq-emulator-load-'))
  const path = join(dir, 'upload.parquet')
  const connection = await (await readerInstance()).connect()
  try {
    await writeFile(path, bytes)
    await connection.run(`SET TimeZone='UTC'`)
    const source = `read_parquet('${path.replaceAll("'", "''")}')`
    await refuseUncheckedEncodings(connection, path)
    const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM ${source}`)
    const columns = described
      .getRowObjectsJson()
      .map((row) => ({ name: String(row.column_name), duckDbType: String(row.column_type) }))
    if (columns.length === 0) return { columns, rows: [] }
    const select = columns.map((c) => `${textOf(c)} AS ${quote(c.name)}`).join(', ')
    const reader = await connection.runAndReadAll(`SELECT ${select} FROM ${source}`)
    const rows = reader.getRowsJson().map((row) => row.map((cell) => (cell === null ? null : String(cell))))
    return { columns, rows }
  } catch (error) {
    throw invalid(`Error while reading data, error message: ${(error as Error).message}`)
  } finally {
    connection.closeSync()
    await rm(dir, { recursive: true, force: true })
  }
}

let reader: Promise<DuckDBInstance> | undefined

/**
 * One in-memory DuckDB for every load of the process, each on its own connection: opening and closing an instance
 * per load took about 25 ms, a load's whole time for the few rows a test loads. It holds no table.
 */
function readerInstance(): Promise<DuckDBInstance> {
  reader ??= DuckDBInstance.create(':memory:').catch((error: unknown) => {
    reader = undefined
    throw error
  })
  return reader
}

/**
 * Parquet 1.0's encodings. BigQuery's reader of Parquet 2.0's (DELTA_*, BYTE_STREAM_SPLIT) cannot be checked
 * here, so the stand-in refuses a file that uses them: dimsync must never send one.
 */
const CHECKED_ENCODINGS = new Set(['PLAIN', 'PLAIN_DICTIONARY', 'RLE_DICTIONARY', 'RLE', 'BIT_PACKED'])

async function refuseUncheckedEncodings(connection: DuckDBConnection, path: string): Promise<void> {
  const reader = await connection.runAndReadAll(
    `SELECT path_in_schema, encodings FROM parquet_metadata('${path.replaceAll("'", "''")}') ORDER BY row_group_id, column_id`,
  )
  for (const [column, encodings] of reader.getRows()) {
    const unchecked = String(encodings)
      .split(/,\s*/)
      .filter((encoding) => !CHECKED_ENCODINGS.has(encoding))
    if (unchecked.length > 0)
      throw new Error(
        `column ${String(column)} uses ${unchecked.join(', ')}, which this emulator does not load`,
      )
  }
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

function textOf(column: ParquetColumn): string {
  const c = quote(column.name)
  const type = column.duckDbType.toUpperCase()
  // A list as a JSON array of its elements' texts (NULL elements as null), read back by rowsForTable.
  if (type.endsWith('[]'))
    return `to_json(list_transform(${c}, dimsync_e -> ${textOf({ name: 'dimsync_e', duckDbType: type.slice(0, -2) }).replace('"dimsync_e"', 'dimsync_e')}))`
  if (type === 'TIMESTAMP WITH TIME ZONE') return `CAST(epoch_us(${c}) AS VARCHAR)`
  if (type.startsWith('TIMESTAMP')) return `strftime(${c}, '%Y-%m-%d %H:%M:%S.%f')`
  if (type === 'BLOB') return `to_base64(${c})`
  return `CAST(${c} AS VARCHAR)`
}

/**
 * The BigQuery type a Parquet column loads as (what a load job that creates the table gives it); a LIST (with
 * list inference, which dimsync's loads ask for) loads as a REPEATED column of its element's type.
 */
function loadedField(
  column: ParquetColumn,
  decimalTargets: readonly string[],
): { readonly type: string; readonly repeated: boolean } | undefined {
  const type = column.duckDbType.toUpperCase()
  const element = type.endsWith('[]') ? type.slice(0, -2) : undefined
  if (element?.endsWith('[]')) return undefined
  const loaded = loadedTypeName(element ?? type, decimalTargets)
  return loaded === undefined ? undefined : { type: loaded, repeated: element !== undefined }
}

function loadedTypeName(duckDbType: string, decimalTargets: readonly string[]): string | undefined {
  const type = duckDbType
  const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(type)
  if (decimal) {
    const precision = Number(decimal[1])
    const scale = Number(decimal[2])
    const fitsNumeric = scale <= 9 && precision - scale <= 29
    if (fitsNumeric && decimalTargets.includes('NUMERIC')) return 'NUMERIC'
    if (scale <= 38 && precision - scale <= 38 && decimalTargets.includes('BIGNUMERIC')) return 'BIGNUMERIC'
    return undefined
  }
  if (/^(BIGINT|INTEGER|SMALLINT|TINYINT|UINTEGER|USMALLINT|UTINYINT)$/.test(type)) return 'INTEGER'
  if (type === 'DOUBLE' || type === 'FLOAT') return 'FLOAT'
  if (type === 'BOOLEAN') return 'BOOLEAN'
  if (type === 'VARCHAR') return 'STRING'
  if (type === 'BLOB') return 'BYTES'
  if (type === 'DATE') return 'DATE'
  if (type === 'TIME') return 'TIME'
  if (type === 'TIMESTAMP WITH TIME ZONE') return 'TIMESTAMP'
  if (type.startsWith('TIMESTAMP')) return 'DATETIME'
  if (type === 'JSON') return 'JSON'
  return undefined
}

/** Types a loaded column may widen into (BigQuery loads INT64 into NUMERIC or FLOAT64 columns). */
const WIDENS_TO: Readonly<Record<string, readonly string[]>> = Object.freeze({
  INTEGER: ['NUMERIC', 'BIGNUMERIC', 'FLOAT'],
  NUMERIC: ['BIGNUMERIC'],
})

export interface LoadTarget {
  /** `project:dataset.table`, for messages. */
  readonly name: string
  /** The destination's columns; undefined when the load creates the table. */
  readonly columns?: readonly Column[]
  /** `decimalTargetTypes` of the load (default NUMERIC, BIGNUMERIC). */
  readonly decimalTargetTypes?: readonly string[]
}

/**
 * Maps a Parquet file onto a table, by column name as BigQuery does: a file column the table lacks, a type that
 * does not fit, or a REQUIRED column the file lacks fail the load with BigQuery's "Provided Schema does not
 * match" message; a NULLABLE column the file lacks is NULL. Without a table, the file's columns make one.
 */
export function rowsForTable(
  content: ParquetContent,
  target: LoadTarget,
): { columns: readonly Column[]; rows: Value[][] } {
  const decimalTargets = target.decimalTargetTypes ?? ['NUMERIC', 'BIGNUMERIC']
  const loaded = content.columns.map((c) => {
    const field = loadedField(c, decimalTargets)
    if (field === undefined)
      throw invalid(
        `Error while reading data: column ${c.name} has type ${c.duckDbType}, which BigQuery cannot load`,
      )
    return field
  })
  const mismatch = (detail: string) =>
    invalid(`Provided Schema does not match Table ${target.name}. ${detail}`)
  const columns =
    target.columns ??
    content.columns.map((c, i) => {
      const type = zetaTypeOfField({
        name: c.name,
        type: loaded[i]!.type,
        ...(loaded[i]!.repeated ? { mode: 'REPEATED' as const } : {}),
      })
      return { field: fieldOfZetaType(c.name, type), type }
    })
  // Names compared case-insensitively through maps (a wide table has thousands of columns): a file column's
  // first position by lowercase name, and the table's lowercase names.
  const fileIndex = new Map<string, number>()
  content.columns.forEach((c, i) => {
    const name = c.name.toLowerCase()
    if (!fileIndex.has(name)) fileIndex.set(name, i)
  })
  const positions = columns.map((column) => {
    const index = fileIndex.get(column.field.name.toLowerCase()) ?? -1
    if (index < 0) {
      if (column.field.mode === 'REQUIRED')
        throw mismatch(`Field ${column.field.name} is missing in new schema`)
      return -1
    }
    const { type: from, repeated } = loaded[index]!
    const to = legacyTypeName(column.field.type) ?? column.field.type
    // "If you use a batch load job to ingest JSON data into a table, the source data must be in CSV, Avro, or
    // JSON format. Other batch load formats are not supported." (Working with JSON data in GoogleSQL, Limitations)
    if (to === 'JSON')
      throw invalid(
        `Unsupported field type: JSON (field ${column.field.name} of ${target.name}): a load job fills a JSON column ` +
          'only from CSV, Avro or newline-delimited JSON files, not from Parquet',
      )
    if (
      (from !== to && !(WIDENS_TO[from] ?? []).includes(to)) ||
      repeated !== (column.field.mode === 'REPEATED')
    )
      throw mismatch(
        `Field ${column.field.name} has changed type from ${googleSqlTypeName(column.field)} to ${googleSqlTypeName({ name: '', type: from, ...(repeated ? { mode: 'REPEATED' as const } : {}) })}`,
      )
    return index
  })
  const tableNames = new Set(columns.map((column) => column.field.name.toLowerCase()))
  const extra = content.columns.find((c) => !tableNames.has(c.name.toLowerCase()))
  if (extra !== undefined) throw mismatch(`Cannot add fields (field: ${extra.name})`)
  const rows = content.rows.map((row, rowIndex) =>
    columns.map((column, i) => {
      const position = positions[i]!
      const text = position < 0 ? null : (row[position] ?? null)
      if (text === null && column.field.mode === 'REQUIRED')
        throw invalid(
          `Error while reading data: row ${rowIndex + 1}: required field ${column.field.name} is NULL`,
        )
      try {
        if (column.type.typeKind === 'TYPE_ARRAY') return arrayFromJson(column.type, text)
        return valueFromText(column.type, text === null ? null : normalizedText(column.type.typeKind, text))
      } catch (error) {
        throw invalid(
          `Error while reading data: row ${rowIndex + 1}, field ${column.field.name}: ${(error as Error).message}`,
        )
      }
    }),
  )
  return { columns, rows }
}

/**
 * A REPEATED column's value from the JSON array of its elements' texts. BigQuery has no NULL arrays (a NULL list
 * loads as an empty array) and no NULL elements (a list holding one fails the load).
 */
function arrayFromJson(type: Proto, json: string | null): Value {
  if (json === null) return { arrayValue: { element: [] } }
  const elementType = type.arrayType.elementType
  const texts = JSON.parse(json) as (string | null)[]
  if (texts.some((t) => t === null)) throw new Error('an array cannot hold a NULL element')
  return {
    arrayValue: {
      element: texts.map((t) => valueFromText(elementType, normalizedText(elementType.typeKind, t!))),
    },
  }
}

/** DuckDB's text of doubles (`inf`, `nan`) in the form valueFromText reads. */
function normalizedText(kind: string, text: string): string {
  if (kind !== 'TYPE_DOUBLE') return text
  if (/^-?inf(inity)?$/i.test(text)) return text.startsWith('-') ? '-Infinity' : 'Infinity'
  if (/^nan$/i.test(text)) return 'NaN'
  return text
}
