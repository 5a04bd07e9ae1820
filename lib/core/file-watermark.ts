import type { Watermark } from './batch.ts'

/**
 * The watermark of a file source that reads new files only (`files: new_only`): which files (local files or S3
 * objects) were merged already.
 *
 * A file is identified by its name and its modified time. The watermark holds the newest modified time of the
 * files processed so far (`cursor`, an ISO instant) and, in `key`, every processed file modified within
 * `FILE_LOOKBACK_MS` of it, as `<modified> <name>` entries in the order they were processed. A file is new when
 * it was modified after `cursor - FILE_LOOKBACK_MS` and its entry is not in `key`.
 *
 * Why a window rather than "modified after the newest": S3's modified time is the time an upload STARTED
 * (multipart uploads: its initiation), at one-second resolution, so an object can become visible after a newer
 * one was already processed, with an older modified time. Keeping the names of the last hour catches those;
 * an object that becomes visible more than an hour after a file that was modified later is missed (documented
 * in docs/sources.md).
 *
 * A file rewritten after it was processed has a new modified time, hence a new entry: it is read again, whole.
 *
 * The order of `compareWatermarks` holds: the cursor never decreases, and while it stays the same no entry is
 * dropped and new entries are appended, so the next watermark never sorts before the one it replaces.
 */

/** How far before the newest processed file the watermark still remembers file names. */
export const FILE_LOOKBACK_MS = 60 * 60 * 1000

/** One listed file: its name (an absolute path or `s3://bucket/key`) and modified time (ISO instant). */
export interface ListedFile {
  readonly name: string
  readonly modified: string
}

function entryOf(file: ListedFile): string {
  return `${file.modified} ${file.name}`
}

/** Modified times are whole milliseconds (`Date.toISOString()`): S3 has seconds, local files are cut to ms. */
function millis(instant: string): number {
  return Date.parse(instant)
}

/** Whether `watermark` has the shape this file writes (a cursor instant and text entries). */
export function isFileWatermark(watermark: Watermark): boolean {
  return (
    typeof watermark.cursor === 'string' &&
    !Number.isNaN(millis(watermark.cursor)) &&
    watermark.key.every((entry) => typeof entry === 'string' && entry.includes(' '))
  )
}

/**
 * The files of `listed` not merged yet according to `watermark` (all of them when it is undefined), oldest
 * first (modified time, then name), so a batch's events keep their arrival order.
 */
export function selectNewFiles<T extends ListedFile>(
  listed: readonly T[],
  watermark: Watermark | undefined,
): T[] {
  const fresh = watermark === undefined ? [...listed] : listed.filter((file) => isNew(file, watermark))
  return fresh.sort(compareFiles)
}

function isNew(file: ListedFile, watermark: Watermark): boolean {
  const horizon = millis(String(watermark.cursor)) - FILE_LOOKBACK_MS
  if (millis(file.modified) < horizon) return false
  return !watermark.key.includes(entryOf(file))
}

function compareFiles(a: ListedFile, b: ListedFile): number {
  const ta = millis(a.modified)
  const tb = millis(b.modified)
  if (ta !== tb) return ta - tb
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

/**
 * The watermark once `processed` (the files of a batch) are merged: the newest modified time so far, and the
 * entries modified within the lookback of it (earlier entries in their order, then the new ones).
 */
export function nextFileWatermark(
  watermark: Watermark | undefined,
  processed: readonly ListedFile[],
): Watermark | undefined {
  if (processed.length === 0) return watermark
  const times = processed.map((file) => millis(file.modified))
  const previous = watermark === undefined ? -Infinity : millis(String(watermark.cursor))
  const newest = Math.max(previous, ...times)
  const cursor = newest === previous ? String(watermark!.cursor) : processed[times.indexOf(newest)]!.modified
  const horizon = newest - FILE_LOOKBACK_MS
  const kept = (watermark?.key ?? []).filter(
    (entry) => millis(String(entry).slice(0, String(entry).indexOf(' '))) >= horizon,
  )
  const added = [...processed]
    .sort(compareFiles)
    .filter((file) => millis(file.modified) >= horizon)
    .map(entryOf)
    .filter((entry) => !kept.includes(entry))
  return { cursor, key: [...kept, ...added] }
}
