import { setTimeout as sleep } from 'node:timers/promises'

import { WarehouseBusyError } from '../../core/errors.ts'

/**
 * DuckDB lets one process write a database file, or several read it; any other open fails at once with
 * `IO Error: Could not set lock on file "…": Conflicting lock is held in <program> (PID n)`. The embedded mode
 * waits a bounded time for the file instead, and then says who holds it.
 */
const LOCK_CONFLICT = /Could not set lock on file[^]*?Conflicting lock is held in (.*?) \(PID (\d+)\)/

/** The process DuckDB names as holding the file's lock. */
export interface FileLockHolder {
  readonly pid: number
  readonly program: string
}

/** The holder named by DuckDB's lock-conflict error, or undefined when `error` is another error. */
export function lockConflictOf(error: unknown): FileLockHolder | undefined {
  const match = LOCK_CONFLICT.exec(error instanceof Error ? error.message : String(error))
  return match === null ? undefined : { pid: Number(match[2]), program: match[1]! }
}

export interface WaitForFileOptions {
  /** The database file (for the message). */
  readonly path: string
  readonly waitMs: number
  /** Where the wait comes from, for the message (`waited 60 s (DIMSYNC_WAREHOUSE_WAIT_SECONDS)`). */
  readonly waitSetting: string
  /** What the holding process is doing, e.g. `run run-… of table customers (…)`; undefined when unknown. */
  readonly describeHolder?: (holder: FileLockHolder) => Promise<string | undefined>
  readonly pollMs?: number
}

/**
 * Calls `open` until it does not fail with DuckDB's lock conflict, for at most `waitMs`; then throws
 * `WarehouseBusyError` naming the holder. Other errors are thrown at once.
 */
export async function openWaitingForLock<T>(open: () => Promise<T>, options: WaitForFileOptions): Promise<T> {
  const deadline = Date.now() + options.waitMs
  const pollMs = options.pollMs ?? 200
  for (;;) {
    try {
      return await open()
    } catch (error) {
      const holder = lockConflictOf(error)
      if (holder === undefined) throw error
      if (Date.now() + pollMs > deadline) {
        const known = await options.describeHolder?.(holder).catch(() => undefined)
        const who = known ?? `process ${holder.pid} (${holder.program})`
        throw new WarehouseBusyError(
          options.path,
          `warehouse ${options.path} is in use by ${who}; waited ${Math.round(options.waitMs / 1000)} s ` +
            `(${options.waitSetting}). One process at a time writes a DuckDB file: run again when it is done`,
        )
      }
      await sleep(pollMs)
    }
  }
}
