import { copyFile, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises'
import { dirname, join, relative, resolve, sep } from 'node:path'

import { StagingError } from '../../core/errors.ts'
import type { BlobDigest, BlobInfo, BlobStore, WriteOptions, LocalBlobs } from '../../ports/blob-store.ts'
import {
  describeFolderTrouble,
  folderTrouble,
  isErrnoCode,
  makeFolder,
  readTextIfExists,
  sha256File,
  syncDir,
  writeFileAtomic,
  writeFileIfAbsent,
  type StoreFolder,
} from './local-files.ts'

/**
 * Blobs as files below a local folder (a key's segments are folders). Writes are atomic (a temporary sibling
 * renamed or linked into place) and flushed to disk, with their folder, before they return; readers get the
 * stored files themselves.
 */
export class FileBlobStore implements BlobStore {
  readonly #root: string
  readonly #folder: StoreFolder

  /**
   * `root` is created on first write; a relative path resolves against the working directory. `describe` names
   * the folder in messages (a full disk, a read-only folder) and where another one is set.
   */
  constructor(root: string, describe: (root: string) => StoreFolder) {
    this.#root = resolve(root)
    this.#folder = describe(this.#root)
  }

  get root(): string {
    return this.#root
  }

  locate(key: string): string {
    return join(this.#root, ...key.split('/'))
  }

  async readText(key: string, what: string): Promise<string | undefined> {
    const path = this.locate(key)
    try {
      return await readTextIfExists(path)
    } catch (error) {
      throw this.#ioError(what, 'reading', path, error)
    }
  }

  async writeText(key: string, text: string, what: string, options?: WriteOptions): Promise<boolean> {
    const path = this.locate(key)
    try {
      await makeFolder(dirname(path))
      if (options?.ifAbsent) return await writeFileIfAbsent(path, text)
      await writeFileAtomic(path, text)
      return true
    } catch (error) {
      throw this.#ioError(what, 'writing', path, error)
    }
  }

  async exists(key: string, what: string): Promise<boolean> {
    const path = this.locate(key)
    try {
      await stat(path)
      return true
    } catch (error) {
      if (isErrnoCode(error, 'ENOENT')) return false
      throw this.#ioError(what, 'checking', path, error)
    }
  }

  async list(folder: string, what: string): Promise<readonly BlobInfo[]> {
    const dir = this.locate(folder)
    let entries
    try {
      entries = await readdir(dir, { recursive: true, withFileTypes: true })
    } catch (error) {
      if (isErrnoCode(error, 'ENOENT')) return []
      throw this.#ioError(what, 'listing', dir, error)
    }
    const blobs: BlobInfo[] = []
    for (const entry of entries) {
      if (!entry.isFile()) continue
      const path = join(entry.parentPath, entry.name)
      let info
      try {
        info = await stat(path)
      } catch (error) {
        if (isErrnoCode(error, 'ENOENT')) continue // removed while listing
        throw this.#ioError(what, 'listing', path, error)
      }
      const key = `${folder}/${relative(dir, path).split(sep).join('/')}`
      blobs.push({ key, bytes: info.size, modifiedAt: info.mtimeMs })
    }
    return blobs
  }

  /** Moves the file into place (copied, then deleted, from another file system) and flushes it and its folder. */
  async putFile(key: string, localPath: string, what: string, signal: AbortSignal): Promise<BlobDigest> {
    const target = this.locate(key)
    if (signal.aborted) throw new StagingError(`${what}: ${target}: upload aborted`)
    try {
      await makeFolder(dirname(target))
      await moveFile(resolve(localPath), target)
      // Flushed before it can be referenced by a manifest: a crash must not leave a committed batch with a part
      // whose bytes never reached the disk.
      const handle = await open(target, 'r')
      try {
        await handle.sync()
      } finally {
        await handle.close()
      }
      await syncDir(dirname(target))
      const [sha256, info] = await Promise.all([sha256File(target), stat(target)])
      return { bytes: info.size, sha256 }
    } catch (error) {
      throw this.#ioError(what, 'storing', target, error)
    }
  }

  /** The stored files themselves, hashed; `release` has nothing to free. */
  async readLocally(keys: readonly string[], what: string): Promise<LocalBlobs> {
    const files = []
    for (const key of keys) {
      const path = this.locate(key)
      try {
        const [info, sha256] = [await stat(path), await sha256File(path)]
        files.push({ path, bytes: info.size, sha256 })
      } catch (error) {
        if (!isErrnoCode(error, 'ENOENT')) throw this.#ioError(what, 'reading', path, error)
        files.push(undefined)
      }
    }
    return { files, release: async () => {} }
  }

  async delete(key: string, what: string): Promise<void> {
    const path = this.locate(key)
    await rm(path, { force: true }).catch((error: unknown) => {
      throw this.#ioError(what, 'deleting', path, error)
    })
  }

  async deleteFolder(folder: string, what: string): Promise<void> {
    const dir = this.locate(folder)
    await rm(dir, { recursive: true, force: true }).catch((error: unknown) => {
      throw this.#ioError(what, 'deleting', dir, error)
    })
  }

  /** `<folder>/.scratch`, emptied: on the blobs' disk, so that `putFile` is a rename. */
  async scratchFolder(folder: string): Promise<string> {
    const dir = join(this.locate(folder), '.scratch')
    try {
      await rm(dir, { recursive: true, force: true })
      await makeFolder(dir)
    } catch (error) {
      throw this.#ioError(`scratch folder ${dir}`, 'creating', dir, error)
    }
    return dir
  }

  /**
   * A failed call as one line: what the folder's trouble is and the way out (a full disk, a read-only file
   * system, no permission), else the system's message. A folder that could not be created is named as such.
   */
  #ioError(what: string, doing: string, path: string, error: unknown): StagingError {
    if (error instanceof StagingError) return error
    const trouble = folderTrouble(error)
    if (trouble !== undefined) {
      const failed = error as NodeJS.ErrnoException
      const call = failed.syscall === 'mkdir' && failed.path ? `creating ${failed.path}` : `${doing} ${path}`
      return new StagingError(`${what}: ${describeFolderTrouble(trouble, this.#folder, call)}`, {
        cause: error,
      })
    }
    const detail = error instanceof Error ? error.message : String(error)
    return new StagingError(`${what}: ${doing} ${path}: ${detail}`, { cause: error })
  }
}

async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to)
  } catch (error) {
    if (!isErrnoCode(error, 'EXDEV')) throw error
    await copyFile(from, to)
    await unlink(from)
  }
}
