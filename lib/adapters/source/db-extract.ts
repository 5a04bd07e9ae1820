/**
 * The extract of a database table, shared by the PostgreSQL and MySQL sources: one consistent snapshot, the
 * completeness count, the cursor delta, the key-range chunks, the CSV-to-Parquet parts. The two sources only
 * supply a `DbDriver` (connections, snapshot, catalog, error wording).
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'

import type { StagedColumn, Watermark } from '../../core/batch.ts'
import { caseOnlyCollision, caseOnlyCollisionText } from '../../core/column-name-case.ts'
import { SourceError } from '../../core/errors.ts'
import type { StagedParquetVersion } from '../../core/staged-parquet.ts'
import type { DatabaseSourceSpec, TableSpec } from '../../core/table-spec.ts'
import type { ExtractRequest, ExtractResult } from '../../ports/source.ts'
import { DEFAULT_SOURCE_MEMORY_LIMIT, SOURCE_MEMORY_LIMIT_VARIABLE } from '../duckdb/duckdb-errors.ts'
import { CsvPartConverter, CsvSpool, RowProblem, StagingProblem } from './db-csv-parts.ts'
import { keptOperationsPredicate } from './ignored-operations.ts'
import {
  chunkBoundsSql,
  chunkPredicates,
  freshAliases,
  deltaPredicate,
  quoteIdent,
  relationSql,
  whereClause,
  type LiteralFn,
  type SqlFlavor,
  tupleAfter,
  type SqlValue,
} from './db-sql.ts'
import { isPointInTimeType, wholeNumberType } from '../../core/staged-types.ts'
import type { DbColumn } from './db-types.ts'

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
  /** DuckDB threads converting CSV to Parquet (default: the CPUs less one, at most 2). */
  readonly duckdbThreads?: number
  /** Largest row DuckDB reads, as CSV bytes (default 8 MiB); a larger row fails the extract, naming this limit. */
  readonly maxRowBytes?: number
  /** DuckDB memory limit while converting (default '64MB'; the CLI and Lambdas: DIMSYNC_SOURCE_MEMORY_LIMIT). */
  readonly duckdbMemoryLimit?: string
  /**
   * Rows per key range of an extract that may stop early (`ExtractRequest.timeLeftMs`), default 1,000,000: a
   * pass stops between two rounds of ranges, so a range must be readable in a fraction of the time limit.
   */
  readonly sliceRows?: number
  /** Parquet version of the staged parts (default V1, which every reader decodes; lib/core/staged-parquet.ts). */
  readonly parquetVersion?: StagedParquetVersion
}

/** A chunk holds at least this many rows; smaller tables are read in fewer chunks. */
const MIN_CHUNK_ROWS = 1000
/** Rows per key range when a pass may have to stop early (`timeLeftMs`). */
const DEFAULT_SLICE_ROWS = 1_000_000
/** A pass starts another round only if the time left is this many times its slowest round so far. */
const ROUND_MARGIN = 2
const RESUME_VERSION = 1

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
 *
 * With `request.timeLeftMs` (a Lambda), a table larger than `sliceRows` is read as consecutive key ranges, and
 * the pass stops between two rounds of ranges when the time left would not fit another round; it returns a
 * `resume` (the ranges, the next one, the watermark candidate) and the next pass continues in a new snapshot.
 * Every range is then counted and read in one snapshot, so each key is read exactly once and as it was at one
 * instant of the extract: a key missing from the batch was absent when its range was read, which keeps deletes
 * by absence sound. The watermark candidate is taken before the first range is read, so a row changed while
 * later passes ran is read again by the next extract.
 */
export async function extractDatabaseTable(
  driver: DbDriver,
  request: ExtractRequest,
  options: DbExtractOptions = {},
): Promise<ExtractResult> {
  const { table } = request
  const spec = databaseSpec(table)
  const resumed = request.resume === undefined ? undefined : parseResume(table, request.resume)
  // DuckDB starts (about 100 ms the first time in a process) while the server opens the snapshot and counts.
  const converter = openConverter(request, options)
  converter.catch(() => undefined)
  let snapshot: DbSnapshot
  try {
    snapshot = await driver.openSnapshot(table, spec.chunks ?? 1)
  } catch (error) {
    await closeConverter(converter)
    throw error
  }
  const pass: ExtractPass = {
    driver,
    request,
    options,
    table,
    spec,
    relation: relationSql(driver.flavor, spec),
    key: table.key.map((k) => quoteIdent(driver.flavor, k)),
    snapshot,
    doing: 'reading the columns of',
    spools: [],
  }
  try {
    const columns = await describeChecked(driver, table, snapshot.sessions[0]!, pass.relation)
    const staged = columns.map(({ name, type }) => ({ name, type }))
    if (resumed) assertSameColumns(table, spec, driver, resumed.columns, staged)
    const byName = new Map(columns.map((c) => [c.name, c]))
    const cursor = table.extract.mode === 'incremental' ? byName.get(table.extract.cursor) : undefined
    const delta = allOf([
      cursor === undefined ? undefined : buildDelta(driver, table, cursor, pass.key, request.watermark),
      keptRows(driver, table),
    ])
    const plan = resumed ?? (await planNewExtract(pass, byName, cursor, delta))
    const ranges = chunkPredicates(pass.key, plan.bounds, driver.literal)
    pass.converter = await converter
    const read = await readRanges(pass, { plan, ranges, delta, columns })
    return passResult(pass, plan, read, staged)
  } catch (error) {
    if (error instanceof SourceError) throw error
    if (error instanceof StagingProblem) throw stagingFailure(driver, table, spec, error)
    throw driver.translate(table, error, pass.doing)
  } finally {
    await snapshot.close()
    await Promise.allSettled(pass.spools.map((spool) => spool.discard()))
    await closeConverter(converter)
  }
}

/** One pass of a database extract: what every step reads, and what the pass holds open until it ends. */
interface ExtractPass {
  readonly driver: DbDriver
  readonly request: ExtractRequest
  readonly options: DbExtractOptions
  readonly table: TableSpec
  readonly spec: DatabaseSourceSpec
  readonly relation: string
  /** The key columns, quoted. */
  readonly key: readonly string[]
  readonly snapshot: DbSnapshot
  /** What the pass is doing, for the message of a driver error (`… while counting the rows of …`). */
  doing: string
  converter?: CsvPartConverter
  readonly spools: CsvSpool[]
}

/** The ranges of one pass and how far it got. */
interface RangesRead {
  /** Index of the next range to read (every range read: `ranges`). */
  readonly next: number
  readonly ranges: number
  readonly inRounds: boolean
  /** Rows staged by this pass. */
  readonly stagedRows: number
}

/**
 * The first pass's plan (see planExtract), split into key ranges: as many as connections for a table large enough
 * to share among them, and, for a pass that may stop early, ranges of at most `sliceRows` rows.
 */
async function planNewExtract(
  pass: ExtractPass,
  byName: ReadonlyMap<string, DbColumn>,
  cursor: DbColumn | undefined,
  delta: string | undefined,
): Promise<ExtractPlan> {
  const { driver, table, spec, relation, key, snapshot, request, options } = pass
  const main = snapshot.sessions[0]!
  const plan = await planExtract({ driver, table, spec, main, relation, byName, key, cursor, delta, request })
  pass.doing = 'splitting into key ranges'
  const sessions = snapshot.sessions.length
  const wanted = Math.max(1, Math.min(sessions, Math.floor(plan.expected / MIN_CHUNK_ROWS)))
  const sliceRows = Math.max(1, spec.sliceRows ?? options.sliceRows ?? DEFAULT_SLICE_ROWS)
  const ranges =
    request.timeLeftMs !== undefined ? Math.max(wanted, Math.ceil(plan.expected / sliceRows)) : wanted
  if (ranges > 1) {
    const keyText = table.key.map((k) => driver.valueText(quoteIdent(driver.flavor, k), byName.get(k)!))
    const step = Math.ceil(plan.expected / ranges)
    const bounds = chunkBoundsSql(relation, keyText, key, whereClause([delta]), step, byName.keys())
    plan.bounds = (await main.rows(bounds)).map((row) => row.map((value) => boundValue(value)))
  }
  return plan
}

/** The CSV-to-Parquet converter of the pass, within the source memory limit. */
async function openConverter(request: ExtractRequest, options: DbExtractOptions): Promise<CsvPartConverter> {
  return await CsvPartConverter.open({
    workDir: join(request.writer.scratchDir, `db-source-${randomBytes(6).toString('hex')}`),
    threads: options.duckdbThreads,
    maxRecordBytes: options.maxRowBytes,
    memoryLimit: {
      limit: options.duckdbMemoryLimit ?? DEFAULT_SOURCE_MEMORY_LIMIT,
      variable: SOURCE_MEMORY_LIMIT_VARIABLE,
    },
    keyColumns: request.table.key,
    parquetVersion: options.parquetVersion,
  })
}

/** Closes the pass's converter, whether it opened or not. Never throws. */
async function closeConverter(opening: Promise<CsvPartConverter>): Promise<void> {
  const converter = await opening.catch(() => undefined)
  await converter?.close().catch(() => undefined)
}

/**
 * Reads the pass's key ranges, a round of one range per connection at a time, and proves that it staged every
 * row: the rows of its ranges are counted in its snapshot before and after, and must equal the rows the server
 * sent, which must equal the rows staged. A pass that may stop early stops between two rounds.
 */
async function readRanges(
  pass: ExtractPass,
  input: {
    readonly plan: ExtractPlan
    readonly ranges: readonly string[]
    readonly delta: string | undefined
    readonly columns: readonly DbColumn[]
  },
): Promise<RangesRead> {
  const { snapshot, request } = pass
  const { plan, ranges, delta, columns } = input
  // More ranges than connections: read in rounds, and a pass may stop between two of them.
  const inRounds = ranges.length > snapshot.sessions.length
  let stagedRows = 0
  const sessionSpools = openSpools(pass, columns, (rows) => {
    stagedRows += rows
    request.onProgress?.(plan.staged + stagedRows)
  })
  let next = plan.next
  // The completeness proof of a pass: the rows of its ranges, counted in its snapshot before and after it.
  pass.doing = 'counting the rows left to read of'
  const passStart = await rowsFrom(pass, plan, delta, next)
  const selectList = columns.map((c) => c.select).join(', ')
  let sent = 0
  let slowestRoundMs = 0
  while (next < ranges.length) {
    const round = ranges.slice(next, next + snapshot.sessions.length)
    const roundStarted = Date.now()
    pass.doing = inRounds
      ? `reading key ranges ${next + 1}-${next + round.length} of ${ranges.length} of`
      : `reading ${plan.expected} rows of`
    sent += await readRound(pass, round, delta, selectList, sessionSpools)
    next += round.length
    slowestRoundMs = Math.max(slowestRoundMs, Date.now() - roundStarted)
    // Go on only while another round surely fits (a round cut by the time limit would be lost with its
    // snapshot); a round too quick for the clock to see still stops when no time is left.
    const timeLeft = request.timeLeftMs?.()
    if (next < ranges.length && timeLeft !== undefined && timeLeft <= slowestRoundMs * ROUND_MARGIN) break
  }
  pass.doing = 'counting the rows left to read of'
  const holds = passStart - (next < ranges.length ? await rowsFrom(pass, plan, delta, next) : 0)
  if (sent !== holds) {
    const which = inRounds ? `key ranges ${plan.next + 1}-${next} hold` : 'the snapshot holds'
    throw incompleteExtract(pass, `${which} ${holds} rows, the server sent ${sent}`)
  }
  pass.doing = `staging the rows read from`
  const finished = await Promise.all(
    sessionSpools.map((spool, i) => spool.finish(plan.next === 0 && i === 0)),
  )
  const stagedThisPass = finished.reduce((sum, rows) => sum + rows, 0)
  if (stagedThisPass !== sent)
    throw incompleteExtract(pass, `the server sent ${sent} rows, ${stagedThisPass} were staged`)
  return { next, ranges: ranges.length, inRounds, stagedRows }
}

/**
 * One spool per connection for the whole pass: the next range is read while the last one's parts are still being
 * converted, so key ranges cost no pipeline stall. Staged rows are therefore proven per pass.
 */
function openSpools(
  pass: ExtractPass,
  columns: readonly DbColumn[],
  onPart: (rows: number) => void,
): CsvSpool[] {
  return pass.snapshot.sessions.map(() => {
    const spool = new CsvSpool({
      converter: pass.converter!,
      columns,
      writer: pass.request.writer,
      spoolBytes: pass.options.spoolBytes,
      onPart,
    })
    pass.spools.push(spool)
    return spool
  })
}

/** Reads one range per connection at once; returns the rows the server sent. */
async function readRound(
  pass: ExtractPass,
  round: readonly string[],
  delta: string | undefined,
  selectList: string,
  spools: readonly CsvSpool[],
): Promise<number> {
  const results = await Promise.allSettled(
    round.map(async (predicate, i) => {
      const rangeWhere = whereClause([delta, predicate])
      return await pass.snapshot.sessions[i]!.streamCsv(
        `SELECT ${selectList} FROM ${pass.relation}${rangeWhere}`,
        spools[i]!,
      )
    }),
  )
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (failed) throw failed.reason
  return results.reduce((sum, r) => sum + (r as PromiseFulfilledResult<number>).value, 0)
}

/** The rows of ranges `from`..last in this snapshot (NULL keys are in range 1, so from 1 on they are excluded). */
async function rowsFrom(
  pass: ExtractPass,
  plan: ExtractPlan,
  delta: string | undefined,
  from: number,
): Promise<number> {
  if (from === 0) return plan.expected
  const { table, key, driver, relation } = pass
  const notNull = table.key.map((k) => `${quoteIdent(driver.flavor, k)} IS NOT NULL`).join(' AND ')
  const tail = `${notNull} AND ${tupleAfter(key, plan.bounds[from - 1]!, '>=', driver.literal)}`
  return await countOf(
    pass.snapshot.sessions[0]!,
    `SELECT COUNT(*) FROM ${relation}${whereClause([delta, tail])}`,
  )
}

/** A read that did not stage every row: retryable, since the next snapshot may read them all. */
function incompleteExtract(pass: ExtractPass, what: string): SourceError {
  const { table, spec, driver } = pass
  return new SourceError(
    table.name,
    `table ${table.name}: incomplete extract of ${sourceName(spec)} (${driver.endpoint}): ${what}; the batch ` +
      `was discarded and nothing was merged`,
    { retryable: true },
  )
}

/** What the pass staged, and (when ranges are left) what the next pass resumes from. */
function passResult(
  pass: ExtractPass,
  plan: ExtractPlan,
  read: RangesRead,
  staged: readonly StagedColumn[],
): ExtractResult {
  const { driver, table, spec, request, snapshot } = pass
  const snapshots = [...plan.snapshots, snapshot.id]
  const complete = read.next >= read.ranges
  const description = describeExtract(driver, table, spec, request, snapshots, read.ranges, read.inRounds)
  return {
    rows: read.stagedRows,
    columns: staged,
    ...(plan.watermarkCandidate !== undefined ? { watermarkCandidate: plan.watermarkCandidate } : {}),
    sourceDescription: description,
    ...(complete
      ? {}
      : {
          resume: encodeResume({
            ...plan,
            next: read.next,
            snapshots,
            staged: plan.staged + read.stagedRows,
            columns: staged,
          }),
        }),
  }
}

/** A row or value that cannot be staged, or a converter out of disk or memory, as the extract's one line. */
function stagingFailure(
  driver: DbDriver,
  table: TableSpec,
  spec: DatabaseSourceSpec,
  problem: StagingProblem,
): SourceError {
  const what =
    problem instanceof RowProblem
      ? `the row with ${problem.key} of ${sourceName(spec)} ${problem.problem}`
      : `staging the rows of ${sourceName(spec)}: ${problem.message}`
  return new SourceError(
    table.name,
    `table ${table.name}: ${driver.endpoint}: ${what}; the batch was discarded and nothing was merged`,
    { cause: problem },
  )
}

/** What the first pass decides for the whole extract, and how far the passes got. */
interface ExtractPlan {
  /** Rows counted in the first pass's snapshot. */
  readonly expected: number
  readonly watermarkCandidate?: Watermark
  /** First keys of key ranges 2..n (none: one range). */
  bounds: SqlValue[][]
  /** Index of the next range to read. */
  readonly next: number
  /** Snapshot ids of the passes so far. */
  readonly snapshots: readonly string[]
  /** Rows staged by the passes so far. */
  readonly staged: number
  readonly columns: readonly StagedColumn[]
}

interface PlanInput {
  readonly driver: DbDriver
  readonly table: TableSpec
  readonly spec: DatabaseSourceSpec
  readonly main: DbSession
  readonly relation: string
  readonly byName: ReadonlyMap<string, DbColumn>
  readonly key: readonly string[]
  readonly cursor: DbColumn | undefined
  readonly delta: string | undefined
  readonly request: ExtractRequest
}

/** The first pass's checks and counts, all in its snapshot: NULL cursors, row count, key uniqueness, watermark. */
async function planExtract(input: PlanInput): Promise<ExtractPlan> {
  const { driver, table, spec, main, relation, byName, key, cursor, delta, request } = input
  const q = (name: string) => quoteIdent(driver.flavor, name)
  const where = whereClause([delta])
  let doing = 'reading the columns of'
  try {
    if (cursor !== undefined) {
      doing = `checking cursor column ${cursor.name} for NULLs in`
      const nulls = await countOf(
        main,
        `SELECT COUNT(*) FROM ${relation}${whereClause([`${q(cursor.name)} IS NULL`, keptRows(driver, table)])}`,
      )
      if (nulls > 0) {
        throw new SourceError(
          table.name,
          `table ${table.name}: cursor column ${cursor.name} of ${sourceName(spec)} has ${nulls} NULL values ` +
            `(${driver.endpoint}); rows with a NULL cursor would never be extracted. Fill them, or use a query ` +
            `source with COALESCE(${cursor.name}, <a time>)`,
        )
      }
    }

    doing = 'counting the rows of'
    const expected = await countOf(main, `SELECT COUNT(*) FROM ${relation}${where}`)

    // A change feed holds several events of a key by design; its grain is checked after its events are folded.
    if (
      table.changes === undefined &&
      (table.extract.mode === 'full' || table.validFrom.kind === 'extracted_at')
    ) {
      doing = 'checking the key is unique in'
      await assertKeyUnique(driver, table, spec, main, relation, delta, key, byName.keys())
    }

    let watermarkCandidate: Watermark | undefined = request.watermark
    if (cursor !== undefined && expected > 0) {
      doing = 'reading the new watermark of'
      const order = [q(cursor.name), ...key].map((c) => `${c} DESC`).join(', ')
      const keyColumns = table.key.map((k) => byName.get(k)!)
      const aliases = freshAliases('dimsync_w', keyColumns.length + 1, byName.keys())
      const texts = [cursor, ...keyColumns].map(
        (c, i) => `${driver.valueText(q(c.name), c)} AS ${aliases[i]}`,
      )
      const [last] = await main.rows(
        `SELECT ${texts.join(', ')} FROM ${relation}${where} ORDER BY ${order} LIMIT 1`,
      )
      const candidate: Watermark = {
        cursor: watermarkValue(table, cursor, last![0]),
        // A change feed's truncate names no key: as the newest event its key parts are empty text (a feed's
        // cursor grows with every event, so no two rows share a cursor value for the key to order). A keyless row
        // of another operation is refused by the merge, naming its operation.
        key: keyColumns.map((c, i) =>
          table.changes !== undefined && last![i + 1] === null ? '' : watermarkValue(table, c, last![i + 1]),
        ),
        column: cursor.name,
      }
      // Deleted rows can make the newest remaining row older than the stored watermark: never move back.
      watermarkCandidate =
        request.watermark && !isAfter(candidate, request.watermark)
          ? { ...request.watermark, column: cursor.name }
          : candidate
    }
    return {
      expected,
      ...(watermarkCandidate !== undefined ? { watermarkCandidate } : {}),
      bounds: [],
      next: 0,
      snapshots: [],
      staged: 0,
      columns: [],
    }
  } catch (error) {
    if (error instanceof SourceError) throw error
    throw driver.translate(table, error, doing)
  }
}

function describeExtract(
  driver: DbDriver,
  table: TableSpec,
  spec: DatabaseSourceSpec,
  request: ExtractRequest,
  snapshots: readonly string[],
  ranges: number,
  inRounds: boolean,
): string {
  const where =
    snapshots.length > 1
      ? `${snapshots.length} passes, snapshots ${snapshots.join('; ')}`
      : `snapshot ${snapshots[0] ?? ''}`
  const split = ranges > 1 ? (inRounds ? `, ${ranges} key ranges` : `, ${ranges} chunks`) : ''
  const cursorName = table.extract.mode === 'incremental' ? table.extract.cursor : 'cursor'
  const deltaText = request.watermark
    ? `, rows at or after ${cursorName} ${request.watermark.cursor}` +
      (table.extract.mode === 'incremental' && table.extract.lookbackMinutes > 0
        ? ` with a ${table.extract.lookbackMinutes}-minute look-back`
        : '')
    : ''
  return `${driver.endpoint} ${sourceName(spec)}, ${where}${split}${deltaText}`
}

/** A pass reads the columns the first pass staged, or fails: one batch has one schema. */
function assertSameColumns(
  table: TableSpec,
  spec: DatabaseSourceSpec,
  driver: DbDriver,
  before: readonly StagedColumn[],
  now: readonly StagedColumn[],
): void {
  const text = (columns: readonly StagedColumn[]) => columns.map((c) => `${c.name} ${c.type}`).join(', ')
  if (text(before) === text(now)) return
  throw new SourceError(
    table.name,
    `table ${table.name}: the columns of ${sourceName(spec)} (${driver.endpoint}) changed between two passes of ` +
      `one extract (before: ${text(before)}; now: ${text(now)}); this batch cannot be completed: start a new ` +
      `extract`,
  )
}

/** Keeps a value of a key bound in JSON: binary keys as `{ "hex": ... }`. */
type EncodedValue = string | number | { readonly hex: string }

function encodeResume(plan: ExtractPlan): unknown {
  return {
    version: RESUME_VERSION,
    expected: plan.expected,
    ...(plan.watermarkCandidate !== undefined ? { watermarkCandidate: plan.watermarkCandidate } : {}),
    bounds: plan.bounds.map((bound) =>
      bound.map((v): EncodedValue =>
        typeof v === 'string' || typeof v === 'number' ? v : { hex: Buffer.from(v).toString('hex') },
      ),
    ),
    next: plan.next,
    snapshots: plan.snapshots,
    staged: plan.staged,
    columns: plan.columns,
  }
}

/** The `resume` of an earlier pass, checked: a damaged one names the table and is never half-used. */
function parseResume(table: TableSpec, value: unknown): ExtractPlan {
  const fail = (what: string) =>
    new SourceError(
      table.name,
      `table ${table.name}: the saved progress of this extract is damaged (${what}); start a new extract`,
    )
  if (typeof value !== 'object' || value === null) throw fail('not an object')
  const r = value as Record<string, unknown>
  if (r.version !== RESUME_VERSION) throw fail(`version ${JSON.stringify(r.version)}`)
  const count = (name: string) => {
    const n = r[name]
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw fail(`${name} is not a count`)
    return n
  }
  if (!Array.isArray(r.bounds)) throw fail('no key ranges')
  const bounds = r.bounds.map((bound: unknown) => {
    if (!Array.isArray(bound) || bound.length !== table.key.length) throw fail('a key range bound')
    return bound.map((v: unknown): SqlValue => {
      if (typeof v === 'string' || typeof v === 'number') return v
      if (typeof v === 'object' && v !== null && typeof (v as { hex?: unknown }).hex === 'string') {
        return Buffer.from((v as { hex: string }).hex, 'hex')
      }
      throw fail('a key range bound value')
    })
  })
  const next = count('next')
  if (next > bounds.length) throw fail('next range beyond the last')
  if (!Array.isArray(r.snapshots) || !r.snapshots.every((s) => typeof s === 'string')) throw fail('snapshots')
  if (
    !Array.isArray(r.columns) ||
    !r.columns.every(
      (c: unknown) =>
        typeof c === 'object' &&
        c !== null &&
        typeof (c as StagedColumn).name === 'string' &&
        typeof (c as StagedColumn).type === 'string',
    )
  ) {
    throw fail('columns')
  }
  const candidate = r.watermarkCandidate as Watermark | undefined
  if (
    candidate !== undefined &&
    (typeof candidate !== 'object' || candidate === null || !Array.isArray(candidate.key))
  ) {
    throw fail('watermark candidate')
  }
  return {
    expected: count('expected'),
    ...(candidate !== undefined ? { watermarkCandidate: candidate } : {}),
    bounds,
    next,
    snapshots: r.snapshots as string[],
    staged: count('staged'),
    columns: (r.columns as StagedColumn[]).map(({ name, type }) => ({ name, type })),
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
  const collision = caseOnlyCollision(
    columns.map((c) => c.name).filter((name) => !table.exclude.includes(name)),
  )
  if (collision !== undefined) {
    throw new SourceError(
      table.name,
      `table ${table.name}: ${where} ${caseOnlyCollisionText(collision)}; rename one (in a query source: AS ` +
        '<another name>) or list one in exclude',
    )
  }
  const needed: [string, string][] = table.key.map((k) => [k, 'key column'])
  if (table.extract.mode === 'incremental') needed.push([table.extract.cursor, 'cursor column'])
  if (table.softDeleteColumn !== undefined) needed.push([table.softDeleteColumn, 'soft delete column'])
  if (table.validFrom.kind === 'column') needed.push([table.validFrom.column, 'valid_from column'])
  for (const name of table.exclude) needed.push([name, 'excluded column'])
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
    if (table.extract.lookbackMinutes > 0 && !isPointInTimeType(cursor.type)) {
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
  // A column compared with a value (deletes: { when }) is staged as it is.
  const soft = table.softDeleteEquals === undefined ? table.softDeleteColumn : undefined
  const validFrom = table.validFrom.kind === 'column' ? table.validFrom.column : undefined
  // An excluded column is never read: it is not staged, so no copy of it reaches the warehouse (nor its staging).
  const excluded = new Set(table.exclude)
  return columns
    .filter((column) => !excluded.has(column.name))
    .map((column) => {
      if (column.name === soft && wholeNumberType(column.type) !== undefined)
        return { ...column, type: 'BOOLEAN', convert: (ref: string) => `(${ref} <> 0)` }
      if (column.name === validFrom) return validFromColumn(table, column, where)
      return column
    })
}

/**
 * A `valid_from: { column }` holds instants. Text is staged as TIMESTAMPTZ, so a value that is not one fails the
 * extract naming its row (not the merge, in the middle, with the warehouse's error); other types are refused.
 */
function validFromColumn(table: TableSpec, column: DbColumn, where: string): DbColumn {
  if (isPointInTimeType(column.type)) return column
  if (column.type === 'VARCHAR' && column.convert === undefined)
    return { ...column, type: 'TIMESTAMPTZ', convert: (ref: string) => `CAST(${ref} AS TIMESTAMPTZ)` }
  throw new SourceError(
    table.name,
    `table ${table.name}: valid_from column ${column.name} of ${where} is ${column.serverType}, not a date or ` +
      'timestamp; choose another valid_from column, or cast it in a query source',
  )
}

/** The rows a change feed's extract reads: all but those of its ignored operations (ignored-operations.ts). */
function keptRows(driver: DbDriver, table: TableSpec): string | undefined {
  return keptOperationsPredicate(table, {
    column: quoteIdent(driver.flavor, table.changes?.operation.column ?? ''),
    // MySQL compares text without case and trailing spaces; its bytes compare exactly, as the merge does.
    asText: (expression) => `CAST(${expression} AS ${driver.flavor === 'postgres' ? 'text' : 'BINARY'})`,
    literal: driver.literal,
  })
}

/** The conjunction of the conditions given, or undefined when none is. */
function allOf(conditions: readonly (string | undefined)[]): string | undefined {
  const present = conditions.filter((c): c is string => c !== undefined)
  return present.length === 0 ? undefined : present.map((c) => `(${c})`).join(' AND ')
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
  columns: Iterable<string>,
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
  const [count] = freshAliases('dimsync_n', 1, columns)
  const dup = await session.rows(
    `SELECT ${list}, COUNT(*) AS ${count} FROM ${relation}${where} GROUP BY ${list} HAVING COUNT(*) > 1 ORDER BY ${list} LIMIT 5`,
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
  if (wholeNumberType(column.type) !== undefined) {
    const n = Number(value)
    if (Number.isSafeInteger(n)) return n
  }
  const text = Buffer.isBuffer(value) ? value.toString('hex') : String(value)
  // MySQL DATETIME text `2024-01-02 03:04:05.000001` as ISO 8601 (both servers parse it back).
  return isPointInTimeType(column.type) ? text.replace(' ', 'T') : text
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
