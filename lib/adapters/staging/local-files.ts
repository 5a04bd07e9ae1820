export { instantSortKey } from '../../core/instant.ts'
import { createHash, randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { link, mkdir, open, rename, rm, stat } from 'node:fs/promises'
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

/**
 * Creates `path` and its missing parents. Node reports a parent it could not create on a read-only file system
 * as ENOENT (no such file or directory); this throws the error of that parent's own creation instead (EROFS,
 * EACCES), with the parent as its path.
 */
export async function makeFolder(path: string): Promise<void> {
  try {
    await mkdir(path, { recursive: true })
  } catch (error) {
    if (!isErrnoCode(error, 'ENOENT')) throw error
    let child = path
    let parent = dirname(path)
    while (parent !== child && !(await isFolder(parent))) [child, parent] = [parent, dirname(parent)]
    try {
      await mkdir(child)
    } catch (cause) {
      if (!isErrnoCode(cause, 'EEXIST')) throw cause
    }
    await mkdir(path, { recursive: true })
  }
}

async function isFolder(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory()
  } catch {
    return false
  }
}

/** What a failed file-system call says about the folder it wrote in: a user can act on each of these. */
export type FolderTrouble = 'disk-full' | 'read-only' | 'no-permission'

export function folderTrouble(error: unknown): FolderTrouble | undefined {
  if (isErrnoCode(error, 'ENOSPC') || isErrnoCode(error, 'EDQUOT')) return 'disk-full'
  if (isErrnoCode(error, 'EROFS')) return 'read-only'
  if (isErrnoCode(error, 'EACCES') || isErrnoCode(error, 'EPERM')) return 'no-permission'
  return undefined
}

/** A local store's folder, to name it and the settings that move it in a message. */
export interface StoreFolder {
  /** `staging folder /data/staging` */
  readonly name: string
  /** Where another folder is set: `staging.path in dimsync.yaml, or --staging`. */
  readonly setting: string
}

/**
 * One line saying what is wrong with a store's folder and the way out, for an error `folderTrouble` knows;
 * `doing` is the call that failed (`writing /data/staging/customers/…/_manifest.json`).
 */
export function describeFolderTrouble(trouble: FolderTrouble, folder: StoreFolder, doing: string): string {
  switch (trouble) {
    case 'disk-full':
      return `the disk of the ${folder.name} is full (${doing}); free disk space and run again`
    case 'read-only':
      return `the ${folder.name} is on a read-only file system (${doing}); make it writable, or use another folder (${folder.setting})`
    case 'no-permission':
      return `no permission in the ${folder.name} (${doing}); give this user read and write access to it, or use another folder (${folder.setting})`
  }
}
