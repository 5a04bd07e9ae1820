import { constants, readFileSync } from 'node:fs'
import { copyFile, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

import type { CheckpointRecovery } from '../../core/checkpoint-recovery.ts'
import { DimsyncError } from '../../core/errors.ts'
import { isProcessAlive } from '../process-liveness.ts'

/**
 * A DuckDB checkpoint that a killed process cannot tear.
 *
 * DuckDB writes committed transactions to the database's write-ahead log (`<file>.wal`) and folds them into the
 * file at a checkpoint. A checkpoint rewrites the file's metadata blocks in place, blocks the file's last durable
 * header still points at, before it writes the new header. Linux stops a write between two pages when the writing
 * process gets SIGKILL, so a process killed during that write (kill -9, the OOM killer; a full disk does the same)
 * leaves a block that is half new, half old, and DuckDB then refuses the whole file ("Corrupt database file:
 * computed checksum … does not match stored checksum").
 *
 * So a writing session never lets DuckDB checkpoint on its own (`openDuckDbEngine`'s `checkpoints: 'by-caller'`):
 * its commits stay in the log, which DuckDB appends to and reads back whole or not at all. When it is done,
 * `checkpointWithBackup` copies the file first, then checkpoints, then removes the copy. The copy and the log are the
 * database as it was before the checkpoint, whatever the checkpoint left of the file;
 * `recoverInterruptedCheckpoints`, run before any process opens the file, puts the copy back where a checkpoint's
 * process died before finishing it.
 */

/** The copy's name: the file's name, this marker and the process that made it (`<pid>-<start time>`). */
const BACKUP_MARKER = '.before-checkpoint.'
/** A copy not yet complete ends with this. */
const PARTIAL = '.partial'

/**
 * Copies the database file, checkpoints with `checkpoint`, and removes the copy. Nothing is done while the log is
 * empty (nothing to fold in), or shorter than `whenLogReaches` bytes when it is given. If the checkpoint fails,
 * `release` closes the DuckDB that holds the file first, then the copy is put back (`recoverCopy`) and an error
 * says what became of the transactions. Never the other way round: a DuckDB still open writes on into the file it opened, which the copy has
 * replaced, and its next checkpoint would fold the log into that unlinked file and empty the log, losing every
 * transaction the log held (a checkpoint refused before it wrote anything leaves DuckDB usable).
 */
export async function checkpointWithBackup(
  path: string,
  checkpoint: () => Promise<void>,
  release: () => void | Promise<void>,
  whenLogReaches = 1,
): Promise<void> {
  if ((await sizeOf(walOf(path))) < Math.max(1, whenLogReaches)) return
  const backup = join(dirname(path), `${basename(path)}${BACKUP_MARKER}${processIdentity(process.pid)}`)
  try {
    await copyDurably(path, `${backup}${PARTIAL}`)
    await rename(`${backup}${PARTIAL}`, backup)
    await syncFolder(dirname(path))
  } catch (error) {
    await unlink(`${backup}${PARTIAL}`).catch(() => undefined)
    const size = await sizeOf(path)
    throw new DimsyncError(
      `warehouse ${path}: could not copy the file before folding this run's transactions into it ` +
        `(${(error as Error).message}); they are kept in ${walOf(path)} and folded in by the next run that ` +
        `closes the file: make room for a copy of it (${Math.ceil(size / 2 ** 20)} MiB) beside it`,
      { cause: error },
    )
  }
  try {
    await checkpoint()
  } catch (error) {
    await release()
    throw foldFailed(path, error, await recoverCopy(path, backup))
  }
  await unlink(backup)
}

/**
 * Puts back the copies of processes that died while they checkpointed `path` (or removes them where the checkpoint
 * had finished), so that DuckDB never opens a file a checkpoint tore. A copy of a process still alive is left: that
 * process holds the file, and DuckDB's lock makes the caller wait for it. Answers what was done, per copy.
 */
export async function recoverInterruptedCheckpoints(path: string): Promise<CheckpointRecovery[]> {
  const prefix = `${basename(path)}${BACKUP_MARKER}`
  const names = await readdir(dirname(path)).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [] as string[]
    throw error
  })
  const done: CheckpointRecovery[] = []
  for (const name of names) {
    if (!name.startsWith(prefix)) continue
    const owner = name.slice(prefix.length).replace(PARTIAL, '')
    if (await isAlive(owner)) continue
    const copy = join(dirname(path), name)
    if (name.endsWith(PARTIAL)) await removeIfThere(copy)
    else done.push(await recoverCopy(path, copy))
  }
  return done
}

/**
 * The checkpoint that `copy` was made for did not finish while the log still holds transactions (DuckDB empties it
 * only once the new header is written): the copy is the file as it was, and it replaces the file. Otherwise the
 * checkpoint finished and the copy is removed. Another process recovering the same copy at once does the same.
 */
async function recoverCopy(path: string, copy: string): Promise<CheckpointRecovery> {
  if ((await sizeOf(walOf(path))) > 0) {
    await rename(copy, path).catch(ignoreMissing)
    await syncFolder(dirname(path))
    return 'restored'
  }
  await removeIfThere(copy)
  return 'discarded'
}

/** A checkpoint failed: what became of the transactions it was folding in, after `recoverCopy` did `recovery`. */
function foldFailed(path: string, cause: unknown, recovery: CheckpointRecovery): DimsyncError {
  const reason = cause instanceof Error ? cause.message : String(cause)
  const kept =
    recovery === 'restored'
      ? `the file was put back as it was before and ${walOf(path)} keeps them: the next run that opens the file ` +
        'folds them in'
      : 'DuckDB had written them into the file before it failed'
  return new DimsyncError(
    `warehouse ${path}: folding this run's committed transactions into the file failed (${reason}); ${kept}. ` +
      'This run stops here; what it committed is kept',
    { cause },
  )
}

function walOf(path: string): string {
  return `${path}.wal`
}

async function sizeOf(path: string): Promise<number> {
  return (await stat(path).catch(() => undefined))?.size ?? 0
}

/** Copies `from` to `to` and flushes `to` to disk: the copy must outlive a power cut during the checkpoint. */
async function copyDurably(from: string, to: string): Promise<void> {
  // A clone where the file system shares blocks (XFS, btrfs, APFS): no bytes copied.
  await copyFile(from, to, constants.COPYFILE_FICLONE)
  await flushToDisk(to)
}

/** A folder's entries are on disk once it is flushed: a rename in it survives a power cut. */
async function syncFolder(folder: string): Promise<void> {
  await flushToDisk(folder)
}

async function flushToDisk(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

async function removeIfThere(path: string): Promise<void> {
  await unlink(path).catch(ignoreMissing)
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error
}

/**
 * `<pid>-<start time>`: the process id and, on Linux, when the process started (in clock ticks since boot), so that
 * a later process given the same id is not taken for the one that made the copy.
 */
export function processIdentity(pid: number): string {
  return `${pid}-${startTimeOf(pid) ?? 0}`
}

async function isAlive(identity: string): Promise<boolean> {
  const match = /^(\d+)-(\d+)$/.exec(identity)
  if (match === null) return false
  const pid = Number(match[1])
  if (!isProcessAlive(pid)) return false
  const started = await readFile(`/proc/${pid}/stat`, 'utf8').then(startTimeIn, () => undefined)
  return started === undefined || match[2] === '0' || String(started) === match[2]
}

function startTimeOf(pid: number): number | undefined {
  try {
    return startTimeIn(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined
  }
}

/** Field 22 of /proc/<pid>/stat (the start time); the name in field 2 may hold spaces and parentheses. */
function startTimeIn(stat: string): number | undefined {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const value = Number(fields[19])
  return Number.isInteger(value) ? value : undefined
}
