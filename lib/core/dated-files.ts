import type { Watermark } from './batch.ts'
import { SourceError } from './errors.ts'
import type { ListedFile } from './file-watermark.ts'
import { compileTimePattern } from './time-from-name.ts'

/**
 * The new files of a `files: new_only` table whose names carry their time (`source.time_from_name`). Their
 * upload time says when they arrived, not which data is newer: a file of an older date uploaded late would be
 * read last and its values would replace newer ones. So the new files are read in the order of the times in
 * their names (then by name), and the watermark keeps the newest of those times merged so far (`namedTime`).
 *
 * A file dated before it is late. On a snapshot table (versions start at the batch's time) it is refused, like a
 * snapshot older than the last merged one: nothing is staged and the message names the file and both times. On a
 * table whose versions start at a change time read from the rows (`valid_from: { column }`) it is read, and its
 * rows slot in at their own times.
 */
export interface DatedFiles<T> {
  /** The files in the order of the times in their names, then by name. */
  readonly files: readonly T[]
  /** The newest name time merged once these are (ISO instant), or undefined when there is none. */
  readonly newest?: string
}

export interface DatedFilesRequest {
  readonly table: string
  readonly pattern: string
  /** The newest name time of a merged file (the committed watermark's `namedTime`). */
  readonly lastMerged?: string
  /** Whether a file dated before `lastMerged` is read (change-time tables) rather than refused. */
  readonly lateFilesSlotIn: boolean
}

export function orderByNameTime<T extends ListedFile>(
  files: readonly T[],
  request: DatedFilesRequest,
): DatedFiles<T> {
  const { table, pattern, lastMerged } = request
  const timeOf = compileTimePattern(pattern)
  const dated = files.map((file) => {
    const time = timeOf(baseName(file.name))
    if (time === undefined)
      throw new SourceError(
        table,
        `${table}: file ${file.name} has no time in its name that time_from_name "${pattern}" reads; rename it ` +
          'to match the pattern, or move it out of the source path',
      )
    return { file, time: time.toISOString() }
  })
  dated.sort((a, b) => compareText(a.time, b.time) || compareText(a.file.name, b.file.name))
  const late = lastMerged === undefined ? undefined : dated.find((d) => d.time < lastMerged)
  if (late !== undefined && !request.lateFilesSlotIn)
    throw new SourceError(
      table,
      `${table}: file ${late.file.name} is dated ${late.time} by its name (time_from_name "${pattern}"), before ` +
        `the last merged file (dated ${lastMerged}): merged now, its values would replace newer ones as the ` +
        'current state. Nothing was staged; move the file out of the source path (a snapshot older than the last ' +
        'merged one cannot be merged after it), then run again',
    )
  const times = [...dated.map((d) => d.time), ...(lastMerged !== undefined ? [lastMerged] : [])]
  const newest = times.reduce<string | undefined>((a, b) => (a === undefined || b > a ? b : a), undefined)
  return { files: dated.map((d) => d.file), ...(newest !== undefined ? { newest } : {}) }
}

/** `candidate` (the file watermark after the batch) keeping the newest name time merged. */
export function withNamedTime(
  candidate: Watermark | undefined,
  newest: string | undefined,
): Watermark | undefined {
  if (candidate === undefined || newest === undefined) return candidate
  return { ...candidate, namedTime: newest }
}

/** The file's own name: after the last `/` of a path or an `s3://bucket/key`. */
function baseName(name: string): string {
  return name.slice(name.lastIndexOf('/') + 1)
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
