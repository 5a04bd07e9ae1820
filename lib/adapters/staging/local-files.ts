export { instantSortKey } from '../../core/instant.ts'
import { createHash, randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { link, open, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'

import { DimsyncError } from '../../core/errors.ts'

/**
 * Helpers shared by the local (folder-based) adapters: id validation, atomic writes, streamed checksums.
 */

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

/**
 * Throws unless `value` is a safe single path segment. Table and batch ids become folder names; refusing `..`,
 * slashes and leading dots means a crafted id can never reach outside the store's root or hide as a dotfile.
 */
export function assertSafeId(kind: 'table' | 'batch', value: string, makeError = defaultIdError): void {
  if (typeof value !== 'string' || !SAFE_ID.test(value) || value === '.' || value === '..') {
    throw makeError(
      `invalid ${kind} id ${JSON.stringify(value)}: use 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit`,
    )
  }
}

function defaultIdError(message: string): Error {
  return new DimsyncError(message)
}

/**
 * Writes `data` to `path` so that readers see either the old file or the whole new one, never a part: the bytes
 * go to a temporary sibling, are flushed to disk, and the temporary file is renamed over the target.
 */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = await writeTemporarySibling(path, data)
  try {
    await rename(tmp, path)
  } catch (error) {
    await rm(tmp, { force: true })
    throw error
  }
  await syncDir(dirname(path))
}

/**
 * Like `writeFileAtomic`, but only when `path` does not exist yet: the whole file is linked into place, which
 * never replaces an existing file, so of two writers exactly one succeeds. False when `path` existed.
 */
export async function writeFileIfAbsent(path: string, data: string): Promise<boolean> {
  const tmp = await writeTemporarySibling(path, data)
  try {
    await link(tmp, path)
  } catch (error) {
    if (isErrnoCode(error, 'EEXIST')) return false
    throw error
  } finally {
    await rm(tmp, { force: true })
  }
  await syncDir(dirname(path))
  return true
}

/** Writes `data` to a new hidden file next to `path` and flushes it; returns its path. */
async function writeTemporarySibling(path: string, data: string): Promise<string> {
  const tmp = join(dirname(path), `.${basename(path)}.tmp-${randomBytes(6).toString('hex')}`)
  const handle = await open(tmp, 'wx')
  try {
    await handle.writeFile(data, 'utf8')
    await handle.sync()
  } finally {
    await handle.close()
  }
  return tmp
}

/** Flushes a folder's entries (a rename is only durable once its folder is synced). Best effort. */
export async function syncDir(path: string): Promise<void> {
  try {
    const handle = await open(path, 'r')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  } catch {
    // Some file systems refuse fsync on a folder; durability then rests on the OS, as for any other program.
  }
}

/** Hex SHA-256 of a file, streamed so that a large part never sits in memory. */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256')
  await pipeline(createReadStream(path), hash)
  return hash.digest('hex')
}

/** Reads and parses a JSON file; `undefined` when it does not exist. */
export async function readJsonIfExists(path: string): Promise<unknown> {
  const text = await readTextIfExists(path)
  return text === undefined ? undefined : (JSON.parse(text) as unknown)
}

/** Reads a UTF-8 file; `undefined` when it does not exist. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    const handle = await open(path, 'r')
    try {
      return await handle.readFile('utf8')
    } finally {
      await handle.close()
    }
  } catch (error) {
    if (isErrnoCode(error, 'ENOENT')) return undefined
    throw error
  }
}

export function isErrnoCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as NodeJS.ErrnoException).code === code
}
