import type { Watermark } from './batch.ts'
import { SourceError } from './errors.ts'
import { instantSortKey } from './instant.ts'
import type { TableSpec } from './table-spec.ts'

/**
 * Pure helpers for watermarks stored as text: a canonical JSON form (so deep-equal watermarks compare equal as
 * strings in a DynamoDB condition) and an order (so a commit can refuse to move a watermark backwards).
 */

/** JSON with object keys sorted and undefined members dropped: deep-equal values give the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
}

/**
 * Orders two watermarks by (cursor, key...) as an incremental extract reads rows. Numbers compare as numbers,
 * integer strings as big integers, ISO instants as instants (microseconds kept), other strings as text. Values
 * of different kinds cannot be ordered and compare as equal (the commit's compare-and-set still applies), and so
 * do watermarks of different cursor columns (or one that names no column): the values of two columns say nothing
 * of each other, and a watermark moved back only makes the next extract read rows again.
 */
export function compareWatermarks(a: Watermark, b: Watermark): number {
  if (a.column !== b.column) return 0
  const first = compareScalars(a.cursor, b.cursor)
  if (first !== 0) return first
  const length = Math.min(a.key.length, b.key.length)
  for (let i = 0; i < length; i++) {
    const c = compareScalars(a.key[i]!, b.key[i]!)
    if (c !== 0) return c
  }
  return 0
}

const INTEGER = /^-?\d+$/

function compareScalars(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return Math.sign(a - b)
  if (typeof a === 'string' && typeof b === 'string') {
    if (INTEGER.test(a) && INTEGER.test(b)) {
      const x = BigInt(a)
      const y = BigInt(b)
      return x < y ? -1 : x > y ? 1 : 0
    }
    const ka = instantSortKey(a)
    const kb = instantSortKey(b)
    if (
      ka !== undefined &&
      kb !== undefined &&
      /^\d{4}-\d{2}-\d{2}/.test(a) &&
      /^\d{4}-\d{2}-\d{2}/.test(b)
    ) {
      return ka < kb ? -1 : ka > kb ? 1 : 0
    }
    return a < b ? -1 : a > b ? 1 : 0
  }
  if (typeof a === 'number' && typeof b === 'string' && Number.isInteger(a) && INTEGER.test(b)) {
    return compareScalars(String(a), b)
  }
  if (typeof a === 'string' && typeof b === 'number' && Number.isInteger(b) && INTEGER.test(a)) {
    return compareScalars(a, String(b))
  }
  return 0
}

/**
 * The position alone (cursor and key, and for dated new files the newest name time merged), as a source reads
 * after it: what the column and batch id are about.
 */
export function watermarkPosition(watermark: Watermark): Watermark {
  const { cursor, key, namedTime } = watermark
  return { cursor, key, ...(namedTime !== undefined ? { namedTime } : {}) }
}

/** The cursor column of an incremental extract, which a committed watermark names (undefined otherwise). */
export function cursorColumn(table: TableSpec): string | undefined {
  return table.extract.mode === 'incremental' ? table.extract.cursor : undefined
}

/** The watermark a merge of `batchId` commits for `candidate` (its position, its cursor column, the batch). */
export function committedWatermark(table: TableSpec, candidate: Watermark, batchId: string): Watermark {
  const column = cursorColumn(table)
  return { ...watermarkPosition(candidate), ...(column !== undefined ? { column } : {}), batchId }
}

/**
 * What a batch's ledger row records of the watermark its merge moves to (canonical JSON of its position and
 * cursor column; the row names the batch), or undefined for a batch without one (a full extract).
 */
export function recordedWatermark(table: TableSpec, candidate: Watermark | undefined): string | undefined {
  if (candidate === undefined) return undefined
  const column = cursorColumn(table)
  return canonicalJson({ ...watermarkPosition(candidate), ...(column !== undefined ? { column } : {}) })
}

/**
 * The watermark an incremental extract of `table` reads after, given the one stored (its position alone). A
 * watermark is a value of one cursor column: read as a value of another, it would skip rows (or compare a number
 * with a time).
 *
 * One of another column (the config's cursor changed), and for a change feed one that names none (kept by a
 * dimsync that did not record it, whose cursor defaulted to the change time), is not read: every row is read again
 * once. That changes nothing already merged (an unchanged state opens no version, a captured event is dropped) and
 * slots in what the old cursor missed. An append table keeps every row it reads, so reading it all again would
 * append every row twice: there a watermark of another column is refused, naming both columns and the way out. A
 * watermark that names no column on a table that is not a change feed is read as a value of the cursor, as the
 * dimsync that kept it did.
 */
export function watermarkToReadFrom(table: TableSpec, stored: Watermark | undefined): Watermark | undefined {
  if (stored === undefined || table.extract.mode !== 'incremental') return stored
  const cursor = table.extract.cursor
  if (stored.column === cursor) return watermarkPosition(stored)
  if (table.changes !== undefined) return undefined
  if (stored.column === undefined) return watermarkPosition(stored)
  if (table.mode !== 'append') return undefined
  throw new SourceError(
    table.name,
    `table ${table.name}: the stored watermark is a value of cursor column ${stored.column}, but extract.cursor is ` +
      `${cursor}; an append table reading ${cursor} from the start would append every row again. Set ` +
      `extract.cursor back to ${stored.column}, or load the table under a new name to read it by ${cursor} from ` +
      'the start',
  )
}
