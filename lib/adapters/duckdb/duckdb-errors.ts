/**
 * DuckDB's errors as one line a user can act on. DuckDB reports a full disk as an "Out of Memory Error" about
 * `max_temp_directory_size` (the temporary folder's limit is the free disk space) or as an I/O error, and its
 * memory errors end with eight lines of tuning advice for DuckDB's own settings, which dimsync users do not set.
 */

/** The variable that sets DuckDB's memory limit while sources are read (files, and the CSV-to-Parquet converter). */
export const SOURCE_MEMORY_LIMIT_VARIABLE = 'DIMSYNC_SOURCE_MEMORY_LIMIT'
/**
 * Default memory limit of source reading, as DuckDB spells it. DuckDB's allocations outside its buffer pool (read
 * buffers, row groups being written) come on top: reading a 1M-row CSV peaked 40-70 MB higher at 128MB than at
 * 64MB, and was not measurably faster (bench/results/log.md).
 */
export const DEFAULT_SOURCE_MEMORY_LIMIT = '64MB'

/** Where a DuckDB instance's memory limit comes from, to say what to raise when it runs out. */
export interface MemoryLimitSetting {
  /** The limit, as given to DuckDB (`64MB`). */
  readonly limit: string
  /** The environment variable that sets it. */
  readonly variable: string
  /** What to do about it, when not `raise <variable>`. */
  readonly raise?: string
}

const DISK_FULL = /max_temp_directory_size|No space left on device|ENOSPC/
// A COMMIT that runs out reports the buffer manager's message after its own prefix.
const OUT_OF_MEMORY =
  /^(Out of Memory Error|TransactionContext Error: Failed to commit: (could not allocate block|failed to pin block))/

/** What kind of trouble a DuckDB error is. */
export type DuckDbTrouble = 'disk-full' | 'out-of-memory' | 'other'

export function duckDbTrouble(error: unknown): DuckDbTrouble {
  const message = messageOf(error)
  if (DISK_FULL.test(message)) return 'disk-full'
  if (OUT_OF_MEMORY.test(message)) return 'out-of-memory'
  return 'other'
}

/** What a source's DuckDB writes to disk: what a full disk leaves no room for, unless the caller says otherwise. */
const SOURCE_WRITES = 'temporary files and Parquet parts'

/**
 * One line saying what went wrong while `doing` something: `the disk is full: … needs room for <writes>`, `… ran
 * out of memory (DIMSYNC_SOURCE_MEMORY_LIMIT is 64MB); raise DIMSYNC_SOURCE_MEMORY_LIMIT`, or DuckDB's first line.
 */
export function describeDuckDbError(
  error: unknown,
  doing: string,
  memory?: MemoryLimitSetting,
  writes: string = SOURCE_WRITES,
): string {
  switch (duckDbTrouble(error)) {
    case 'disk-full':
      return `the disk is full: ${doing} needs room for ${writes}; free disk space and run again`
    case 'out-of-memory':
      return memory === undefined
        ? `${doing} ran out of memory`
        : `${doing} ran out of memory (${memory.variable} is ${memory.limit}); ${memory.raise ?? `raise ${memory.variable}`}`
    case 'other':
      return `${doing} failed: ${firstLine(error)}`
  }
}

export function firstLine(error: unknown): string {
  const message = messageOf(error)
  return message.split('\n')[0] ?? message
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
