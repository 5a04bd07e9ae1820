/**
 * AWS DMS's S3 target, as it writes a table's folder (docs.aws.amazon.com/dms/latest/userguide/CHAP_Target.S3.html):
 * full-load files named by a hexadecimal counter (LOAD00000001.csv, LOAD0000000A.parquet; LOAD_1_00000001 under
 * parallel load), which carry no operation column unless IncludeOpForFullLoad is set, and change files named by
 * the time they were written (20240102-1000000000.csv), which start with it. Pure: names and texts only.
 */

/** A full-load file's name (its last path segment): LOAD, then hexadecimal digits (and `_` under parallel load). */
const FULL_LOAD_NAME = /^LOAD[0-9A-F_]+\.(csv|csv\.gz|parquet)$/i

/** Whether the file `name` (a path or an S3 key) is one of a DMS full load. */
export function isDmsFullLoadFile(name: string): boolean {
  return FULL_LOAD_NAME.test(name.slice(name.lastIndexOf('/') + 1))
}

/**
 * `files` in the order DMS wrote them: the full-load files first, then the change files, each by name (the full
 * load's counter and the change files' time stamps both sort as text).
 */
export function dmsFileOrder<T extends { readonly name: string }>(files: readonly T[]): T[] {
  const byName = (a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  const fullLoad = files.filter((f) => isDmsFullLoadFile(f.name)).sort(byName)
  const changes = files.filter((f) => !isDmsFullLoadFile(f.name)).sort(byName)
  return [...fullLoad, ...changes]
}

/**
 * DMS's TimestampColumnName value, a STRING `yyyy-MM-dd HH:mm:ss.SSSSSS` (UTC; fewer fractional digits where the
 * source's commit time has fewer), as a DuckDB regular expression matched against the whole value.
 */
export const DMS_TIMESTAMP_PATTERN = '[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?'

/** How DMS's timestamp text is named in messages. */
export const DMS_TIMESTAMP_TEXT = 'an AWS DMS timestamp (yyyy-MM-dd HH:mm:ss.SSSSSS)'
