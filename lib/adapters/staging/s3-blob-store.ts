import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join, posix } from 'node:path'
import { PassThrough, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Readable } from 'node:stream'

import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'

import { StagingError } from '../../core/errors.ts'
import type {
  BlobDigest,
  BlobInfo,
  BlobStore,
  WriteOptions,
  LocalBlob,
  LocalBlobs,
} from '../../ports/blob-store.ts'
import { isAwsError, isNotFound, wrapAwsError } from '../aws/aws-errors.ts'

export interface S3BlobStoreOptions {
  readonly client: S3Client
  readonly bucket: string
  /** Key prefix inside the bucket (`dimsync/staging`); slashes around it are dropped. Empty: the bucket root. */
  readonly prefix?: string
  /** Local folder for scratch files (files being written, objects downloaded for a reader). Default: os.tmpdir(). */
  readonly scratchRoot?: string
  /** Multipart part size in bytes (S3 minimum 5 MiB). Default 8 MiB. Memory per upload ≈ partSize × queueSize. */
  readonly partSize?: number
  /** Parts uploaded in parallel per file. Default 4. */
  readonly queueSize?: number
  /**
   * Send `If-None-Match: *` for `writeText(..., { ifAbsent })`, so that two writers can never both create an
   * object (S3 has conditional writes; s3rver ignores the header). Default true.
   */
  readonly conditionalWrites?: boolean
}

const MIN_PART_SIZE = 5 * 1024 * 1024
const DOWNLOAD_CONCURRENCY = 4

/**
 * Blobs as objects under a bucket prefix. Files are streamed to S3 with multipart uploads (memory bounded by
 * `partSize × queueSize`) and hashed on the way; readers get downloaded copies, hashed on the way too. SDK
 * errors become `AwsServiceError`s naming the object and what was being done (throttling and 5xx retryable).
 */
export class S3BlobStore implements BlobStore {
  readonly #client: S3Client
  readonly #bucket: string
  readonly #prefix: string
  readonly #scratchRoot: string
  readonly #partSize: number
  readonly #queueSize: number
  readonly #conditionalWrites: boolean

  constructor(options: S3BlobStoreOptions) {
    this.#client = options.client
    this.#bucket = options.bucket
    this.#prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '')
    this.#scratchRoot = options.scratchRoot ?? tmpdir()
    this.#partSize = Math.max(MIN_PART_SIZE, options.partSize ?? 8 * 1024 * 1024)
    this.#queueSize = Math.max(1, options.queueSize ?? 4)
    this.#conditionalWrites = options.conditionalWrites ?? true
  }

  /** `s3://bucket/prefix`. */
  get location(): string {
    return `s3://${this.#bucket}${this.#prefix ? `/${this.#prefix}` : ''}`
  }

  locate(key: string): string {
    return `s3://${this.#bucket}/${this.#key(key)}`
  }

  async readText(key: string, what: string): Promise<string | undefined> {
    try {
      const response = await this.#client.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: this.#key(key) }),
      )
      return await response.Body!.transformToString('utf8')
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw wrapAwsError('s3', `${what}: reading ${this.locate(key)}`, error)
    }
  }

  async writeText(key: string, text: string, what: string, options?: WriteOptions): Promise<boolean> {
    const ifAbsent = options?.ifAbsent === true && this.#conditionalWrites
    try {
      await this.#client.send(
        new PutObjectCommand({
          Bucket: this.#bucket,
          Key: this.#key(key),
          Body: text,
          ContentType: key.endsWith('.json') ? 'application/json' : 'text/plain',
          ...(ifAbsent ? { IfNoneMatch: '*' } : {}),
        }),
      )
      return true
    } catch (error) {
      if (ifAbsent && isAwsError(error, 'PreconditionFailed', 'ConditionalRequestConflict')) return false
      throw wrapAwsError('s3', `${what}: writing ${this.locate(key)}`, error)
    }
  }

  async exists(key: string, what: string): Promise<boolean> {
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: this.#key(key) }))
      return true
    } catch (error) {
      if (isNotFound(error)) return false
      throw wrapAwsError('s3', `${what}: checking ${this.locate(key)}`, error)
    }
  }

  /** Lists without a delimiter: s3rver's CommonPrefixes are unreliable, and staging folders hold few objects. */
  async list(folder: string, what: string): Promise<readonly BlobInfo[]> {
    const prefix = `${this.#key(folder)}/`
    const strip = this.#prefix ? this.#prefix.length + 1 : 0
    const blobs: BlobInfo[] = []
    let token: string | undefined
    do {
      let page
      try {
        page = await this.#client.send(
          new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: prefix, ContinuationToken: token }),
        )
      } catch (error) {
        throw wrapAwsError('s3', `${what}: listing s3://${this.#bucket}/${prefix}`, error)
      }
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue
        blobs.push({
          key: object.Key.slice(strip),
          bytes: object.Size ?? 0,
          modifiedAt: object.LastModified?.getTime() ?? 0,
        })
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return blobs
  }

  /** Streams the file up (multipart above `partSize`), hashing it on the way, then deletes it. */
  async putFile(key: string, localPath: string, what: string, signal: AbortSignal): Promise<BlobDigest> {
    const url = this.locate(key)
    // A batch aborted before this upload started: an already aborted signal never fires its listener.
    if (signal.aborted) throw new StagingError(`${what}: ${url}: upload aborted`)
    const digest = hashing()
    const body = new PassThrough()
    const source = createReadStream(localPath, { highWaterMark: 1024 * 1024 })
    const piping = pipeline(source, digest.tap, body)
    const upload = new Upload({
      client: this.#client,
      params: {
        Bucket: this.#bucket,
        Key: this.#key(key),
        Body: body,
        ContentType: key.endsWith('.parquet') ? 'application/vnd.apache.parquet' : 'application/octet-stream',
      },
      partSize: this.#partSize,
      queueSize: this.#queueSize,
      leavePartsOnError: false,
    })
    const onAbort = () => void upload.abort().catch(() => undefined)
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      await Promise.all([upload.done(), piping])
    } catch (error) {
      source.destroy()
      body.destroy()
      if (signal.aborted) throw new StagingError(`${what}: ${url}: upload aborted`, { cause: error })
      throw wrapAwsError('s3', `${what}: uploading ${localPath} to ${url}`, error)
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
    await unlink(localPath)
    return digest.result()
  }

  /** Downloads the objects (a few at a time) into a new temporary folder; `release` removes it. */
  async readLocally(keys: readonly string[], what: string): Promise<LocalBlobs> {
    const folder = await mkdtemp(
      join(this.#scratchRoot, `dimsync-read-${label(keys.length > 0 ? posix.dirname(keys[0]!) : '')}-`),
    )
    const release = () => rm(folder, { recursive: true, force: true })
    const names = new Set<string>()
    const paths = keys.map((key, index) => {
      const name = names.has(basename(key)) ? `${index}-${basename(key)}` : basename(key)
      names.add(name)
      return join(folder, name)
    })
    const files: (LocalBlob | undefined)[] = new Array<undefined>(keys.length).fill(undefined)
    let next = 0
    const worker = async () => {
      while (next < keys.length) {
        const index = next++
        files[index] = await this.#download(keys[index]!, paths[index]!, what)
      }
    }
    try {
      await Promise.all(Array.from({ length: Math.min(DOWNLOAD_CONCURRENCY, keys.length) }, worker))
      return { files, release }
    } catch (error) {
      await release()
      throw error
    }
  }

  async delete(key: string, what: string): Promise<void> {
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#key(key) }))
    } catch (error) {
      if (isNotFound(error)) return
      throw wrapAwsError('s3', `${what}: deleting ${this.locate(key)}`, error)
    }
  }

  async deleteFolder(folder: string, what: string): Promise<void> {
    const keys = (await this.list(folder, what)).map((blob) => this.#key(blob.key))
    const url = `${this.locate(folder)}/`
    for (let i = 0; i < keys.length; i += 1000) {
      const chunk = keys.slice(i, i + 1000)
      let response
      try {
        response = await this.#client.send(
          new DeleteObjectsCommand({
            Bucket: this.#bucket,
            Delete: { Objects: chunk.map((Key) => ({ Key })), Quiet: true },
          }),
        )
      } catch (error) {
        throw wrapAwsError('s3', `${what}: deleting ${chunk.length} objects under ${url}`, error)
      }
      const failed = (response.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey')
      if (failed.length > 0) {
        const first = failed[0]!
        throw new StagingError(
          `${what}: could not delete ${failed.length} objects under ${url} ` +
            `(first: ${first.Key}: ${first.Code} ${first.Message ?? ''})`,
        )
      }
    }
  }

  /** A new folder in the scratch root (the objects are remote: any local disk will do). */
  async scratchFolder(folder: string): Promise<string> {
    return await mkdtemp(join(this.#scratchRoot, `dimsync-${label(folder)}-`))
  }

  async #download(key: string, path: string, what: string): Promise<LocalBlob | undefined> {
    const url = this.locate(key)
    let body: Readable
    try {
      const response = await this.#client.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: this.#key(key) }),
      )
      body = response.Body as Readable
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw wrapAwsError('s3', `${what}: downloading ${url}`, error)
    }
    const digest = hashing()
    try {
      await pipeline(body, digest.tap, createWriteStream(path))
    } catch (error) {
      throw wrapAwsError('s3', `${what}: downloading ${url}`, error)
    }
    return { path, ...digest.result() }
  }

  #key(key: string): string {
    return this.#prefix ? `${this.#prefix}/${key}` : key
  }
}

/** A pass-through stream that counts and hashes what flows through it. */
function hashing(): { tap: Transform; result: () => BlobDigest } {
  const hash = createHash('sha256')
  let bytes = 0
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk)
      bytes += chunk.length
      callback(null, chunk)
    },
  })
  return { tap, result: () => ({ bytes, sha256: hash.digest('hex') }) }
}

/** `customers/b1` → `customers-b1`: scratch folders named after what they hold. */
function label(folder: string): string {
  return folder.replaceAll('/', '-')
}
