/**
 * The extract of a database table, shared by the PostgreSQL and MySQL sources: one consistent snapshot, the
 * completeness count, the cursor delta, the key-range chunks, the CSV-to-Parquet parts. The two sources only
 * supply a `DbDriver` (connections, snapshot, catalog, error wording).
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'

import type { StagedColumn, Watermark } from '../../core/batch.ts'
import { SourceError } from '../../core/errors.ts'
import type { DatabaseSourceSpec, TableSpec } from '../../core/table-spec.ts'
import type { ExtractRequest, ExtractResult } from '../../ports/source.ts'
import { CsvPartConverter, CsvSpool } from './db-csv-parts.ts'
import {
  chunkBoundsSql,
  chunkPredicates,
  deltaPredicate,
  quoteIdent,
  relationSql,
  whereClause,
  type LiteralFn,
  type SqlFlavor,
  type SqlValue,
} from './db-sql.ts'
import { INTEGER_TYPES, TEMPORAL_TYPES, type DbColumn } from './db-types.ts'

/** One connection inside the extract's snapshot. */
export interface DbSession {
  /** Runs a query; rows as arrays of the driver's text-like values (string, number, Buffer, null). */
  rows(sql: string): Promise<unknown[][]>
  /** Streams the rows of `select` as CSV into `spool` (backpressure included); returns the rows the server sent. */
  streamCsv(select: string, spool: CsvSpool): Promise<number>
}

/** Sessions that all read the same snapshot; `sessions[0]` coordinates (counts, bounds, watermark). */
export interface DbSnapshot {
  readonly sessions: readonly DbSession[]
  /** What identifies the snapshot in audits (PostgreSQL snapshot text, MySQL binlog-less description). */
  readonly id: string
  /** Ends the transactions and closes the connections. Never throws. */
  close(): Promise<void>
}

export interface DbDriver {
  readonly flavor: SqlFlavor
  /** `PostgreSQL at 127.0.0.1:5432/test`: where, for messages (never the password). */
  readonly endpoint: string
  readonly literal: LiteralFn
  /** Opens `count` sessions on one snapshot. */
  openSnapshot(table: TableSpec, count: number): Promise<DbSnapshot>
  /** The relation's columns (`SELECT ... LIMIT 0`) and how each is staged. */
  describe(session: DbSession, relation: string): Promise<DbColumn[]>
  /** Server expression that renders a column as the JSON-friendly text kept in watermarks and chunk bounds. */
  valueText(quoted: string, column: DbColumn): string
  /** True when a primary key or unique index on exactly these NOT NULL columns proves the key unique. */
  keyIsDeclaredUnique(session: DbSession, table: string, key: readonly string[]): Promise<boolean>
  /** A `SourceError` for a driver error while `doing` something, naming the table and the server. */
  translate(table: TableSpec, error: unknown, doing: string): SourceError
}

export interface DbExtractOptions {
  /** Size at which spooled CSV is cut into a Parquet part (default 6 MiB: above it DuckDB's read buffers grow the peak RSS). */
  readonly spoolBytes?: number
  /** DuckDB threads converting CSV to Parquet (default 2, 1 on a single CPU). */
  readonly duckdbThreads?: number
  /** Largest row DuckDB reads, as CSV bytes (default 8 MiB); a larger row fails the extract, naming this limit. */
  readonly maxRowBytes?: number
  /** DuckDB memory limit while converting (default '192MB'). */
  readonly duckdbMemoryLimit?: string
}

/** A chunk holds at least this many rows; smaller tables are read in fewer chunks. */
const MIN_CHUNK_ROWS = 1000

/** The staged columns of `table` without reading rows (one `LIMIT 0` query). */
export async function describeDatabaseTable(
  driver: DbDriver,
  table: TableSpec,
): Promise<readonly StagedColumn[]> {
  const spec = databaseSpec(table)
  const snapshot = await driver.openSnapshot(table, 1)
  try {
    const columns = await describeChecked(
      driver,
      table,
      snapshot.sessions[0]!,
      relationSql(driver.flavor, spec),
    )
    return columns.map(({ name, type }) => ({ name, type }))
  } finally {
    await snapshot.close()
  }
}

/**
 * Extracts one table (see the source classes for the contract). Rows are counted in the extract's own snapshot;
 * a difference between that count, the rows the server sent and the rows staged fails the extract, so a
 * truncated read is never merged (and never deletes keys by absence).
 */
export async function extractDatabaseTable(
  driver: DbDriver,
  request: ExtractRequest,
  options: DbExtractOptions = {},
): Promise<ExtractResult> {
  const { table, writer } = request
  const spec = databaseSpec(table)
  const flavor = driver.flavor
  const q = (name: string) => quoteIdent(flavor, name)
  const relation = relationSql(flavor, spec)
  const snapshot = await driver.openSnapshot(table, spec.chunks ?? 1)
  let converter: CsvPartConverter | undefined
  const spools: CsvSpool[] = []
  let doing = 'reading the columns of'
  try {
    const main = snapshot.sessions[0]!
    const columns = await describeChecked(driver, table, main, relation)
    const byName = new Map(columns.map((c) => [c.name, c]))
    const key = table.key.map(q)

    let delta: string | undefined
    let cursor: DbColumn | undefined
    if (table.extract.mode === 'incremental') {
      cursor = byName.get(table.extract.cursor)!
      doing = `checking cursor column ${table.extract.cursor} for NULLs in`
      const nulls = await countOf(main, `SELECT COUNT(*) FROM ${relation} WHERE ${q(cursor.name)} IS NULL`)
      if (nulls > 0) {
        throw new SourceError(
          table.name,
          `table ${table.name}: cursor column ${cursor.name} of ${sourceName(spec)} has ${nulls} NULL values ` +
            `(${driver.endpoint}); rows with a NULL cursor would never be extracted. Fill them, or use a query ` +
            `source with COALESCE(${cursor.name}, <a time>)`,
        )
      }
      delta = buildDelta(driver, table, cursor, key, request.watermark)
    }
    const where = whereClause([delta])

    doing = 'counting the rows of'
    const expected = await countOf(main, `SELECT COUNT(*) FROM ${relation}${where}`)

    if (table.extract.mode === 'full' || table.validFrom.kind === 'extracted_at') {
      doing = 'checking the key is unique in'
      await assertKeyUnique(driver, table, spec, main, relation, delta, key)
    }

    let watermarkCandidate: Watermark | undefined = request.watermark
    if (cursor !== undefined && expected > 0) {
      doing = 'reading the new watermark of'
      const order = [q(cursor.name), ...key].map((c) => `${c} DESC`).join(', ')
      const keyColumns = table.key.map((k) => byName.get(k)!)
      const texts = [cursor, ...keyColumns].map((c, i) => `${driver.valueText(q(c.name), c)} AS w${i}`)
      const [last] = await main.rows(
        `SELECT ${texts.join(', ')} FROM ${relation}${where} ORDER BY ${order} LIMIT 1`,
      )
      const candidate: Watermark = {
        cursor: watermarkValue(table, cursor, last![0]),
        key: keyColumns.map((c, i) => watermarkValue(table, c, last![i + 1])),
      }
      // Deleted rows can make the newest remaining row older than the stored watermark: never move back.
      watermarkCandidate =
        request.watermark && !isAfter(candidate, request.watermark) ? request.watermark : candidate
    }

    doing = 'splitting into key ranges'
    const wanted = Math.max(1, Math.min(snapshot.sessions.length, Math.floor(expected / MIN_CHUNK_ROWS)))
    let bounds: SqlValue[][] = []
    if (wanted > 1) {
      const keyText = table.key.map((k) => driver.valueText(q(k), byName.get(k)!))
      const step = Math.ceil(expected / wanted)
      bounds = (await main.rows(chunkBoundsSql(relation, keyText, key, where, step))).map((row) =>
        row.map((value) => boundValue(value)),
      )
    }
    const predicates = chunkPredicates(key, bounds, driver.literal)

    converter = await CsvPartConverter.open({
      workDir: join(writer.scratchDir, `db-source-${randomBytes(6).toString('hex')}`),
      threads: options.duckdbThreads,
      maxRecordBytes: options.maxRowBytes,
      memoryLimit: options.duckdbMemoryLimit,
    })
    let staged = 0
    const selectList = columns.map((c) => c.select).join(', ')
    doing = `reading ${expected} rows of`
    const results = await Promise.allSettled(
      predicates.map(async (predicate, i) => {
        const spool = new CsvSpool({
          converter: converter!,
          columns,
          writer,
          spoolBytes: options.spoolBytes,
          onPart: (rows) => {
            staged += rows
            request.onProgress?.(staged)
          },
        })
        spools.push(spool)
        const sent = await snapshot.sessions[i]!.streamCsv(
          `SELECT ${selectList} FROM ${relation}${whereClause([delta, predicate])}`,
          spool,
        )
        const rows = await spool.finish(i === 0)
        return { sent, rows }
      }),
    )
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed) throw failed.reason
    const done = results.map((r) => (r as PromiseFulfilledResult<{ sent: number; rows: number }>).value)
    const sent = done.reduce((sum, r) => sum + r.sent, 0)
    const rows = done.reduce((sum, r) => sum + r.rows, 0)
    if (sent !== expected || rows !== expected) {
      throw new SourceError(
        table.name,
        `table ${table.name}: incomplete extract of ${sourceName(spec)} (${driver.endpoint}): the snapshot holds ` +
          `${expected} rows, the server sent ${sent}, ${rows} were staged; the batch was discarded and nothing ` +
          `was merged`,
        { retryable: true },
      )
    }
    const chunkText = predicates.length > 1 ? `, ${predicates.length} chunks` : ''
    const deltaText = request.watermark
      ? `, rows after (${[request.watermark.cursor, ...request.watermark.key].join(', ')})` +
        (table.extract.mode === 'incremental' && table.extract.lookbackMinutes > 0
          ? ` with a ${table.extract.lookbackMinutes}-minute look-back`
          : '')
      : ''
    return {
      rows,
      columns: columns.map(({ name, type }) => ({ name, type })),
      ...(watermarkCandidate !== undefined ? { watermarkCandidate } : {}),
      sourceDescription: `${driver.endpoint} ${sourceName(spec)}, snapshot ${snapshot.id}${chunkText}${deltaText}`,
    }
  } catch (error) {
    if (error instanceof SourceError) throw error
    throw driver.translate(table, error, doing)
  } finally {
    await snapshot.close()
    await Promise.allSettled(spools.map((spool) => spool.discard()))
    await converter?.close().catch(() => undefined)
  }
}

function databaseSpec(table: TableSpec): DatabaseSourceSpec {
  if (table.source.type !== 'postgres' && table.source.type !== 'mysql') {
    throw new SourceError(
      table.name,
      `table ${table.name}: a database source cannot read a ${table.source.type} source`,
    )
  }
  return table.source
}

export function sourceName(spec: DatabaseSourceSpec): string {
  return spec.table ?? 'query'
}

/** Describes the relation and checks every column the table's config names is there. */
async function describeChecked(
  driver: DbDriver,
  table: TableSpec,
  session: DbSession,
  relation: string,
): Promise<DbColumn[]> {
  const spec = databaseSpec(table)
  let columns: DbColumn[]
  try {
    columns = await driver.describe(session, relation)
  } catch (error) {
    if (error instanceof SourceError) throw error
    throw driver.translate(table, error, 'reading the columns of')
  }
  const where = `${sourceName(spec)} (${driver.endpoint})`
  const seen = new Set<string>()
  for (const column of columns) {
    if (seen.has(column.name)) {
      throw new SourceError(
        table.name,
        `table ${table.name}: the query returns column ${column.name} twice (${driver.endpoint}); give each column a distinct alias`,
      )
    }
    seen.add(column.name)
  }
  const needed: [string, string][] = table.key.map((k) => [k, 'key column'])
  if (table.extract.mode === 'incremental') needed.push([table.extract.cursor, 'cursor column'])
  if (table.softDeleteColumn !== undefined) needed.push([table.softDeleteColumn, 'soft delete column'])
  if (table.validFrom.kind === 'column') needed.push([table.validFrom.column, 'valid_from column'])
  for (const [name, role] of needed) {
    if (seen.has(name)) continue
    const nearly = columns.find((c) => c.name.toLowerCase() === name.toLowerCase())
    throw new SourceError(
      table.name,
      `table ${table.name}: ${role} ${name} is not a column of ${where}` +
        (nearly
          ? `; did you mean ${nearly.name} (names are case-sensitive)?`
          : `; its columns are ${columns.map((c) => c.name).join(', ')}`),
    )
  }
  if (table.extract.mode === 'incremental') {
    const cursor = columns.find((c) => c.name === (table.extract as { cursor: string }).cursor)!
    if (table.extract.lookbackMinutes > 0 && !TEMPORAL_TYPES.has(cursor.type)) {
      throw new SourceError(
        table.name,
        `table ${table.name}: lookback_minutes needs a date or timestamp cursor, but ${cursor.name} of ${where} ` +
          `is ${cursor.serverType}; remove lookback_minutes or use a timestamp cursor`,
      )
    }
    if (cursor.type === 'BLOB' || table.key.some((k) => columns.find((c) => c.name === k)!.type === 'BLOB')) {
      throw new SourceError(
        table.name,
        `table ${table.name}: binary cursor or key columns cannot be kept in a watermark (${where}); use a full extract`,
      )
    }
  }
  // An integer flag (0/1) marks a soft delete when non-zero; the merge reads any non-BOOLEAN as "deleted when
  // not NULL", which would mark every row deleted, so the flag is staged as a BOOLEAN.
  const soft = table.softDeleteColumn
  return columns.map((column) =>
    column.name === soft && INTEGER_TYPES.has(column.type)
      ? { ...column, type: 'BOOLEAN', convert: (ref: string) => `(${ref} <> 0)` }
      : column,
  )
}

function buildDelta(
  driver: DbDriver,
  table: TableSpec,
  cursor: DbColumn,
  key: readonly string[],
  watermark: Watermark | undefined,
): string | undefined {
  if (table.extract.mode !== 'incremental') return undefined
  if (watermark !== undefined && watermark.key.length !== key.length) {
    throw new SourceError(
      table.name,
      `table ${table.name}: the stored watermark has ${watermark.key.length} key values but the key has ` +
        `${key.length} columns (${table.key.join(', ')}); the key changed since the last run: reset the table's ` +
        `watermark (dimsync reset) to extract it again from the start`,
    )
  }
  return deltaPredicate({
    flavor: driver.flavor,
    cursor: quoteIdent(driver.flavor, cursor.name),
    key,
    watermark,
    lookbackMinutes: table.extract.lookbackMinutes,
    cursorCastType: cursor.serverType,
    literal: driver.literal,
  })
}

async function assertKeyUnique(
  driver: DbDriver,
  table: TableSpec,
  spec: DatabaseSourceSpec,
  session: DbSession,
  relation: string,
  delta: string | undefined,
  key: readonly string[],
): Promise<void> {
  const where = whereClause([delta])
  if (spec.table !== undefined && (await driver.keyIsDeclaredUnique(session, spec.table, table.key))) return
  const keyNull = key.map((k) => `${k} IS NULL`).join(' OR ')
  const nulls = await countOf(session, `SELECT COUNT(*) FROM ${relation}${whereClause([delta, keyNull])}`)
  if (nulls > 0) {
    throw new SourceError(
      table.name,
      `table ${table.name}: ${nulls} rows of ${sourceName(spec)} (${driver.endpoint}) have a NULL in the key ` +
        `(${table.key.join(', ')}); a natural key is never NULL: filter those rows or choose another key`,
    )
  }
  const list = key.join(', ')
  const dup = await session.rows(
    `SELECT ${list}, COUNT(*) AS n FROM ${relation}${where} GROUP BY ${list} HAVING COUNT(*) > 1 ORDER BY ${list} LIMIT 5`,
  )
  if (dup.length > 0) {
    const examples = dup.map(
      (row) => `(${row.slice(0, key.length).map(String).join(', ')}) ${String(row[key.length])} times`,
    )
    throw new SourceError(
      table.name,
      `table ${table.name}: the key (${table.key.join(', ')}) is not unique in ${sourceName(spec)} ` +
        `(${driver.endpoint}), for example ${examples.join('; ')}; fix the key in dimsync.yaml or the source rows`,
    )
  }
}

async function countOf(session: DbSession, sql: string): Promise<number> {
  const [row] = await session.rows(sql)
  return Number(row?.[0] ?? 0)
}

/** A watermark part as a JSON scalar: whole numbers as numbers when exact, everything else as its text. */
function watermarkValue(table: TableSpec, column: DbColumn, value: unknown): string | number {
  if (value === null || value === undefined) {
    throw new SourceError(
      table.name,
      `table ${table.name}: column ${column.name} is NULL in the newest row; it cannot be a watermark`,
    )
  }
  if (INTEGER_TYPES.has(column.type)) {
    const n = Number(value)
    if (Number.isSafeInteger(n)) return n
  }
  const text = Buffer.isBuffer(value) ? value.toString('hex') : String(value)
  // MySQL DATETIME text `2024-01-02 03:04:05.000001` as ISO 8601 (both servers parse it back).
  return TEMPORAL_TYPES.has(column.type) ? text.replace(' ', 'T') : text
}

function boundValue(value: unknown): SqlValue {
  if (Buffer.isBuffer(value)) return value
  if (typeof value === 'number' || typeof value === 'string') return value
  return String(value)
}

/**
 * Whether watermark `a` is not behind `b`, judged by the cursor only (numbers numerically, ISO text as text).
 * Equal cursors count as not behind: a watermark a little behind only re-reads rows, which the merge ignores.
 */
function isAfter(a: Watermark, b: Watermark): boolean {
  if (a.cursor === b.cursor) return true
  if (typeof a.cursor === 'number' && typeof b.cursor === 'number') return a.cursor > b.cursor
  return String(a.cursor) > String(b.cursor)
}
