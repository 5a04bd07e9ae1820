import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { StagingError } from '../../core/errors.ts'
import type { BlobDigest, BlobInfo, BlobStore, LocalBlobs, WriteOptions } from '../../ports/blob-store.ts'

interface Blob {
  readonly bytes: Buffer
  readonly modifiedAt: number
}

/**
 * Blobs held in this process, for tests of the staging store's users that need no staging folder: manifests and
 * markers never touch the disk. The port hands parts over as local files both ways, so `putFile` reads the file
 * into memory (and removes it) and `readLocally` writes copies in a temporary folder that `release` removes.
 */
export class MemoryBlobStore implements BlobStore {
  readonly #blobs = new Map<string, Blob>()

  locate(key: string): string {
    return `memory:/${key}`
  }

  async readText(key: string): Promise<string | undefined> {
    return this.#blobs.get(key)?.bytes.toString('utf8')
  }

  async writeText(key: string, text: string, _what: string, options?: WriteOptions): Promise<boolean> {
    if (options?.ifAbsent && this.#blobs.has(key)) return false
    this.#put(key, Buffer.from(text, 'utf8'))
    return true
  }

  async exists(key: string): Promise<boolean> {
    return this.#blobs.has(key)
  }

  async list(folder: string): Promise<readonly BlobInfo[]> {
    const prefix = `${folder}/`
    return [...this.#blobs]
      .filter(([key]) => key.startsWith(prefix))
      .map(([key, blob]) => ({ key, bytes: blob.bytes.length, modifiedAt: blob.modifiedAt }))
  }

  async putFile(key: string, localPath: string, what: string, signal: AbortSignal): Promise<BlobDigest> {
    if (signal.aborted) throw new StagingError(`${what}: ${this.locate(key)}: upload aborted`)
    const bytes = await readFile(localPath)
    await unlink(localPath)
    this.#put(key, bytes)
    return { bytes: bytes.length, sha256: sha256(bytes) }
  }

  async readLocally(keys: readonly string[]): Promise<LocalBlobs> {
    const dir = await mkdtemp(join(tmpdir(), 'dimsync-memory-blobs-'))
    const files = await Promise.all(
      keys.map(async (key, index) => {
        const blob = this.#blobs.get(key)
        if (blob === undefined) return undefined
        const path = join(dir, `${index}-${key.split('/').at(-1)}`)
        await writeFile(path, blob.bytes)
        return { path, bytes: blob.bytes.length, sha256: sha256(blob.bytes) }
      }),
    )
    return { files, release: () => rm(dir, { recursive: true, force: true }) }
  }

  async delete(key: string): Promise<void> {
    this.#blobs.delete(key)
  }

  async deleteFolder(folder: string): Promise<void> {
    const prefix = `${folder}/`
    for (const key of [...this.#blobs.keys()]) if (key.startsWith(prefix)) this.#blobs.delete(key)
  }

  /** A new temporary folder: the blobs are not on any disk, so `putFile` reads the file whatever its folder. */
  async scratchFolder(): Promise<string> {
    return await mkdtemp(join(tmpdir(), 'dimsync-memory-scratch-'))
  }

  /** Replaces a blob's bytes as another writer would (a test damaging a part behind the staging store's back). */
  overwrite(key: string, bytes: Buffer): void {
    this.#put(key, Buffer.from(bytes))
  }

  /** A copy of a blob's bytes; undefined when there is none. */
  bytesOf(key: string): Buffer | undefined {
    const blob = this.#blobs.get(key)
    return blob === undefined ? undefined : Buffer.from(blob.bytes)
  }

  #put(key: string, bytes: Buffer): void {
    this.#blobs.set(key, { bytes, modifiedAt: Date.now() })
  }
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}
