import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm, stat, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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

import { isAwsError, isNotFound, wrapAwsError } from '../aws/aws-errors.ts'
import type { BatchManifest, StagedPart } from '../../core/batch.ts'
import {
  checkpointText,
  nextCheckpoint,
  noCheckpointError,
  parseCheckpoint,
  partFileName,
  type Checkpoint,
} from '../../core/batch-checkpoint.ts'
import { StagingError } from '../../core/errors.ts'
import type { BatchCheckpoint, BatchWriter, OpenedBatch, StagingStore } from '../../ports/staging-store.ts'
import { assertSafeId } from './local-files.ts'
import { checkManifest, compareManifests, completeManifest, PART_NAME } from '../../core/batch-manifest.ts'

export interface S3StagingStoreOptions {
  readonly client: S3Client
  readonly bucket: string
  /** Key prefix inside the bucket (`dimsync/staging`); no leading or trailing slash. Empty: the bucket root. */
  readonly prefix?: string
  /** Local folder for scratch files (parts being written, parts downloaded for a merge). Default: os.tmpdir(). */
  readonly scratchRoot?: string
  /** Multipart part size in bytes (S3 minimum 5 MiB). Default 8 MiB. Memory per upload ≈ partSize × queueSize. */
  readonly partSize?: number
  /** Parts uploaded in parallel per file. Default 4. */
  readonly queueSize?: number
  /**
   * Send `If-None-Match: *` with the manifest so that two writers can never both commit one batch id (S3 has
   * conditional writes; s3rver ignores the header). Default true.
   */
  readonly conditionalManifest?: boolean
}

const MANIFEST = '_manifest.json'
/** Written by beginBatch so that an extract that crashed before its first part is still found and removed. */
const STARTED = '_started.json'
/** The checkpoint of a suspended batch (`BatchWriter.suspend`); removed by the commit of a later pass. */
const PROGRESS = '_progress.json'
const MIN_PART_SIZE = 5 * 1024 * 1024
const DOWNLOAD_CONCURRENCY = 4

/**
 * Staging on S3: `s3://<bucket>/<prefix>/<table>/<batchId>/part-NNNNN.parquet` plus `_manifest.json`, written
 * last: a batch without a manifest does not exist for readers. Parts are streamed from the local scratch file
 * with multipart uploads (memory bounded by `partSize × queueSize`), their SHA-256 computed on the way and
 * recorded in the manifest; reading a batch downloads the parts to a local folder and verifies size and
 * checksum before handing out the paths. A suspended batch holds `_progress.json` (its checkpoint) instead of a
 * manifest until a later pass commits it.
 *
 * Abandoned batches (no manifest) are removed by `removeAbandoned`; deployments also set a bucket lifecycle
 * rule that aborts incomplete multipart uploads and expires old staging objects.
 */
export class S3StagingStore implements StagingStore {
  readonly #client: S3Client
  readonly #bucket: string
  readonly #prefix: string
  readonly #scratchRoot: string
  readonly #partSize: number
  readonly #queueSize: number
  readonly #conditionalManifest: boolean

  constructor(options: S3StagingStoreOptions) {
    this.#client = options.client
    this.#bucket = options.bucket
    this.#prefix = normalizePrefix(options.prefix ?? '')
    this.#scratchRoot = options.scratchRoot ?? tmpdir()
    this.#partSize = Math.max(MIN_PART_SIZE, options.partSize ?? 8 * 1024 * 1024)
    this.#queueSize = Math.max(1, options.queueSize ?? 4)
    this.#conditionalManifest = options.conditionalManifest ?? true
  }

  /** `s3://bucket/prefix`, for messages and logs. */
  get location(): string {
    return `s3://${this.#bucket}${this.#prefix ? `/${this.#prefix}` : ''}`
  }

  /**
   * Starts a batch: refuses a batch id that is already committed (`StagingError`: batches are immutable),
   * removes objects left by an earlier uncommitted attempt with the same id, writes the `_started.json` marker
   * and creates a local scratch folder.
   */
  async beginBatch(table: string, batchId: string): Promise<BatchWriter> {
    const dir = this.#batchKey(table, batchId)
    if (await this.#exists(`${dir}/${MANIFEST}`)) {
      throw new StagingError(`table ${table}: batch ${batchId} is already committed in ${this.#url(dir)}/`)
    }
    await this.#deletePrefix(`${dir}/`, `table ${table}: batch ${batchId}`)
    const startedAt = new Date().toISOString()
    await this.#put(`${dir}/${STARTED}`, JSON.stringify({ table, batchId, startedAt }), 'application/json')
    const scratchDir = await mkdtemp(join(this.#scratchRoot, `dimsync-${table}-${batchId}-`))
    return new S3BatchWriter(this, table, batchId, dir, scratchDir)
  }

  /**
   * Reopens a suspended batch: refuses a committed batch and one without `_progress.json` (`StagingError`),
   * checks the checkpoint, deletes the part objects it does not list (left by a pass that failed or crashed),
   * checks from the listing that every listed part is there with its recorded size (checksums are verified by
   * `openBatch`) and creates a fresh local scratch folder. The writer numbers its parts after the saved ones.
   */
  async resumeBatch(
    table: string,
    batchId: string,
  ): Promise<{ writer: BatchWriter; checkpoint: BatchCheckpoint }> {
    const dir = this.#batchKey(table, batchId)
    const where = `table ${table}: batch ${batchId}`
    if (await this.#exists(`${dir}/${MANIFEST}`)) {
      throw new StagingError(
        `${where} is already committed in ${this.#url(dir)}/; a committed batch cannot be resumed`,
      )
    }
    const key = `${dir}/${PROGRESS}`
    const text = await this.#getText(key, `${where}: reading`)
    if (text === undefined) throw noCheckpointError(table, batchId)
    const checkpoint = parseCheckpoint(table, batchId, this.#url(key), text)
    const objects = new Map<string, number>()
    for (const object of await this.#list(`${dir}/`, where)) {
      objects.set(object.key.slice(dir.length + 1), object.size)
    }
    const saved = new Set(checkpoint.parts.map((part) => part.name))
    for (const name of objects.keys()) {
      if (PART_NAME.test(name) && !saved.has(name)) await this.#delete(`${dir}/${name}`, where)
    }
    for (const part of checkpoint.parts) {
      const size = objects.get(part.name)
      if (size === undefined) {
        throw new StagingError(
          `${where}: part ${part.name} of the checkpoint is missing (${this.#url(`${dir}/${part.name}`)})`,
        )
      }
      if (size !== part.bytes) {
        throw new StagingError(
          `${where}: part ${part.name} has ${size} bytes, the checkpoint says ${part.bytes} ` +
            `(${this.#url(`${dir}/${part.name}`)})`,
        )
      }
    }
    const scratchDir = await mkdtemp(join(this.#scratchRoot, `dimsync-${table}-${batchId}-`))
    return { writer: new S3BatchWriter(this, table, batchId, dir, scratchDir, checkpoint), checkpoint }
  }

  /** Committed batches of `table` (those with a manifest), oldest `extractedAt` first, ties by batch id. */
  async listBatches(table: string): Promise<readonly BatchManifest[]> {
    const tableKey = this.#tableKey(table)
    const manifests: BatchManifest[] = []
    // No delimiter: s3rver's CommonPrefixes are unreliable, and a table folder holds few objects (merged
    // batches are deleted).
    for (const object of await this.#list(`${tableKey}/`, `table ${table}`)) {
      const rest = object.key.slice(tableKey.length + 1)
      const [batchId, name, ...deeper] = rest.split('/')
      if (name !== MANIFEST || deeper.length > 0 || batchId === undefined) continue
      const manifest = await this.#readManifest(table, batchId)
      if (manifest !== undefined) manifests.push(manifest)
    }
    return manifests.sort(compareManifests)
  }

  /**
   * Opens a committed batch: downloads each part into a local folder (streamed, SHA-256 computed on the way)
   * and checks it against the manifest (present, same size, same SHA-256). Any difference is a `StagingError`
   * naming the batch and the part, and nothing is left on disk. `release()` deletes the local copies.
   */
  async openBatch(table: string, batchId: string): Promise<OpenedBatch> {
    const dir = this.#batchKey(table, batchId)
    const manifest = await this.#readManifest(table, batchId)
    if (manifest === undefined) {
      throw new StagingError(
        `table ${table}: batch ${batchId} is not committed (no ${this.#url(`${dir}/${MANIFEST}`)})`,
      )
    }
    const localDir = await mkdtemp(join(this.#scratchRoot, `dimsync-read-${table}-${batchId}-`))
    const release = () => rm(localDir, { recursive: true, force: true })
    try {
      const partPaths = manifest.parts.map((part) => join(localDir, part.name))
      let next = 0
      const worker = async () => {
        while (next < manifest.parts.length) {
          const index = next++
          await this.#downloadVerified(table, batchId, manifest.parts[index]!, partPaths[index]!)
        }
      }
      await Promise.all(Array.from({ length: Math.min(DOWNLOAD_CONCURRENCY, manifest.parts.length) }, worker))
      return { manifest, partPaths, release }
    } catch (error) {
      await release()
      throw error
    }
  }

  /**
   * Deletes a batch, committed or not. The manifest goes first so that a crash half-way leaves an uncommitted
   * batch (removed later by `removeAbandoned`), never a manifest pointing at missing parts. Missing: no-op.
   */
  async deleteBatch(table: string, batchId: string): Promise<void> {
    const dir = this.#batchKey(table, batchId)
    await this.#delete(`${dir}/${MANIFEST}`, `table ${table}: batch ${batchId}`)
    await this.#deletePrefix(`${dir}/`, `table ${table}: batch ${batchId}`)
  }

  /**
   * Deletes uncommitted batches of `table` (no manifest) whose newest object was written before `olderThan`
   * (the `_started.json` marker, every uploaded part and the `_progress.json` of a suspended batch count, so an
   * extract still uploading, or suspended since `olderThan`, is left alone). Returns the removed ids, sorted.
   */
  async removeAbandoned(table: string, olderThan: Date): Promise<readonly string[]> {
    const tableKey = this.#tableKey(table)
    const batches = new Map<string, { committed: boolean; newest: number }>()
    for (const object of await this.#list(`${tableKey}/`, `table ${table}`)) {
      const [batchId, name] = object.key.slice(tableKey.length + 1).split('/')
      if (batchId === undefined || name === undefined) continue
      const entry = batches.get(batchId) ?? { committed: false, newest: 0 }
      entry.committed ||= name === MANIFEST
      entry.newest = Math.max(entry.newest, object.lastModified)
      batches.set(batchId, entry)
    }
    const removed: string[] = []
    for (const [batchId, entry] of batches) {
      if (entry.committed || entry.newest >= olderThan.getTime()) continue
      await this.#deletePrefix(`${tableKey}/${batchId}/`, `table ${table}: batch ${batchId}`)
      removed.push(batchId)
    }
    return removed.sort()
  }

  // ---- used by S3BatchWriter -------------------------------------------------------------------------------

  /**
   * Streams a local file to `key` (multipart above `partSize`), hashing it on the way. `signal` aborts the
   * upload (and its multipart upload) when the batch is aborted.
   */
  async uploadFile(
    key: string,
    localPath: string,
    signal: AbortSignal,
  ): Promise<{ bytes: number; sha256: string }> {
    // A batch aborted before this upload started: an already aborted signal never fires its listener.
    if (signal.aborted) throw new StagingError(`${this.#url(key)}: upload aborted`)
    const hash = createHash('sha256')
    let bytes = 0
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk)
        bytes += chunk.length
        callback(null, chunk)
      },
    })
    const body = new PassThrough()
    const source = createReadStream(localPath, { highWaterMark: 1024 * 1024 })
    const piping = pipeline(source, tap, body)
    const upload = new Upload({
      client: this.#client,
      params: {
        Bucket: this.#bucket,
        Key: key,
        Body: body,
        ContentType: 'application/vnd.apache.parquet',
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
      if (signal.aborted) throw new StagingError(`${this.#url(key)}: upload aborted`, { cause: error })
      throw wrapAwsError('s3', `${this.#url(key)}: uploading ${localPath}`, error)
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
    return { bytes, sha256: hash.digest('hex') }
  }

  async putManifest(key: string, manifest: BatchManifest): Promise<void> {
    try {
      await this.#client.send(
        new PutObjectCommand({
          Bucket: this.#bucket,
          Key: key,
          Body: `${JSON.stringify(manifest, null, 2)}\n`,
          ContentType: 'application/json',
          ...(this.#conditionalManifest ? { IfNoneMatch: '*' } : {}),
        }),
      )
    } catch (error) {
      if (isAwsError(error, 'PreconditionFailed', 'ConditionalRequestConflict')) {
        throw new StagingError(
          `table ${manifest.table}: batch ${manifest.batchId} was committed by another writer meanwhile (${this.#url(key)})`,
        )
      }
      throw wrapAwsError('s3', `${this.#url(key)}: writing the manifest`, error)
    }
  }

  /** Writes the checkpoint of a suspended batch (a plain PutObject: a later suspend replaces it). */
  async putCheckpoint(key: string, text: string): Promise<void> {
    await this.#put(key, text, 'application/json')
  }

  async exists(key: string): Promise<boolean> {
    return await this.#exists(key)
  }

  async deleteKey(key: string, what: string): Promise<void> {
    await this.#delete(key, what)
  }

  async deleteFolder(prefix: string, what: string): Promise<void> {
    await this.#deletePrefix(prefix, what)
  }

  // ---- private ---------------------------------------------------------------------------------------------

  async #downloadVerified(table: string, batchId: string, part: StagedPart, path: string): Promise<void> {
    const where = `table ${table}: batch ${batchId}: part ${part.name}`
    const key = `${this.#batchKey(table, batchId)}/${part.name}`
    let body: Readable
    try {
      const response = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }))
      body = response.Body as Readable
    } catch (error) {
      if (isNotFound(error)) throw new StagingError(`${where} is missing (${this.#url(key)})`)
      throw wrapAwsError('s3', `${where}: downloading ${this.#url(key)}`, error)
    }
    const hash = createHash('sha256')
    let bytes = 0
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk)
        bytes += chunk.length
        callback(null, chunk)
      },
    })
    try {
      await pipeline(body, tap, createWriteStream(path))
    } catch (error) {
      throw wrapAwsError('s3', `${where}: downloading ${this.#url(key)}`, error)
    }
    if (bytes !== part.bytes) {
      throw new StagingError(`${where} has ${bytes} bytes, manifest says ${part.bytes} (${this.#url(key)})`)
    }
    const sha256 = hash.digest('hex')
    if (sha256 !== part.sha256) {
      throw new StagingError(
        `${where} checksum mismatch (sha256 ${sha256}, manifest says ${part.sha256}; ${this.#url(key)})`,
      )
    }
  }

  async #readManifest(table: string, batchId: string): Promise<BatchManifest | undefined> {
    const key = `${this.#batchKey(table, batchId)}/${MANIFEST}`
    let text: string
    try {
      const response = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }))
      text = await response.Body!.transformToString('utf8')
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw wrapAwsError('s3', `table ${table}: batch ${batchId}: reading ${this.#url(key)}`, error)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (error) {
      throw new StagingError(`table ${table}: batch ${batchId}: unreadable manifest ${this.#url(key)}`, {
        cause: error,
      })
    }
    return checkManifest(table, batchId, this.#url(key), parsed)
  }

  /** The object's text; `undefined` when it does not exist. */
  async #getText(key: string, what: string): Promise<string | undefined> {
    try {
      const response = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }))
      return await response.Body!.transformToString('utf8')
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw wrapAwsError('s3', `${what} ${this.#url(key)}`, error)
    }
  }

  async #exists(key: string): Promise<boolean> {
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }))
      return true
    } catch (error) {
      if (isNotFound(error)) return false
      throw wrapAwsError('s3', `${this.#url(key)}: checking whether it exists`, error)
    }
  }

  async #put(key: string, body: string, contentType: string): Promise<void> {
    try {
      await this.#client.send(
        new PutObjectCommand({ Bucket: this.#bucket, Key: key, Body: body, ContentType: contentType }),
      )
    } catch (error) {
      throw wrapAwsError('s3', `${this.#url(key)}: writing`, error)
    }
  }

  async #delete(key: string, what: string): Promise<void> {
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key }))
    } catch (error) {
      if (isNotFound(error)) return
      throw wrapAwsError('s3', `${what}: deleting ${this.#url(key)}`, error)
    }
  }

  async #list(prefix: string, what: string): Promise<{ key: string; lastModified: number; size: number }[]> {
    const objects: { key: string; lastModified: number; size: number }[] = []
    let token: string | undefined
    do {
      let page
      try {
        page = await this.#client.send(
          new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: prefix, ContinuationToken: token }),
        )
      } catch (error) {
        throw wrapAwsError('s3', `${what}: listing ${this.#url(prefix)}`, error)
      }
      for (const object of page.Contents ?? []) {
        if (object.Key !== undefined) {
          objects.push({
            key: object.Key,
            lastModified: object.LastModified?.getTime() ?? 0,
            size: object.Size ?? 0,
          })
        }
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return objects
  }

  async #deletePrefix(prefix: string, what: string): Promise<void> {
    const keys = (await this.#list(prefix, what)).map((object) => object.key)
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
        throw wrapAwsError(
          's3',
          `${what}: deleting ${chunk.length} objects under ${this.#url(prefix)}`,
          error,
        )
      }
      const failed = (response.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey')
      if (failed.length > 0) {
        const first = failed[0]!
        throw new StagingError(
          `${what}: could not delete ${failed.length} objects under ${this.#url(prefix)} ` +
            `(first: ${first.Key}: ${first.Code} ${first.Message ?? ''})`,
        )
      }
    }
  }

  #tableKey(table: string): string {
    assertSafeId('table', table, (message) => new StagingError(message))
    return this.#prefix ? `${this.#prefix}/${table}` : table
  }

  #batchKey(table: string, batchId: string): string {
    const tableKey = this.#tableKey(table)
    assertSafeId('batch', batchId, (message) => new StagingError(`table ${table}: ${message}`))
    return `${tableKey}/${batchId}`
  }

  #url(key: string): string {
    return `s3://${this.#bucket}/${key}`
  }
}

class S3BatchWriter implements BatchWriter {
  readonly table: string
  readonly batchId: string
  readonly scratchDir: string
  readonly #store: S3StagingStore
  readonly #dir: string
  /** Saved parts of earlier passes first (from the checkpoint), then the parts this writer adds. */
  readonly #parts: (StagedPart | undefined)[]
  readonly #aborter = new AbortController()
  readonly #pending = new Set<Promise<unknown>>()
  /** The checkpoint this writer resumed from, or the one it saved when it suspended. */
  #checkpoint: Checkpoint | undefined
  #state: 'open' | 'suspended' | 'committed' | 'aborted' = 'open'

  constructor(
    store: S3StagingStore,
    table: string,
    batchId: string,
    dir: string,
    scratchDir: string,
    checkpoint?: Checkpoint,
  ) {
    this.#store = store
    this.table = table
    this.batchId = batchId
    this.#dir = dir
    this.scratchDir = scratchDir
    this.#checkpoint = checkpoint
    this.#parts = [...(checkpoint?.parts ?? [])]
  }

  /**
   * Uploads `localPath` as the next `part-NNNNN.parquet` (numbered in call order), records its size and SHA-256,
   * and deletes the local file. Several calls may run at once.
   */
  async addPart(localPath: string, rows: number): Promise<StagedPart> {
    this.#assertOpen('addPart')
    if (!Number.isSafeInteger(rows) || rows < 0) {
      throw new StagingError(
        `table ${this.table}: batch ${this.batchId}: invalid row count ${rows} for a part`,
      )
    }
    // Reserve the slot before any await so that concurrent calls get distinct, ordered names.
    const index = this.#parts.length
    this.#parts.push(undefined)
    const name = partFileName(index)
    const work = (async () => {
      try {
        await stat(localPath)
      } catch (error) {
        throw new StagingError(
          `table ${this.table}: batch ${this.batchId}: part file ${localPath} is not readable`,
          {
            cause: error,
          },
        )
      }
      const { bytes, sha256 } = await this.#store.uploadFile(
        `${this.#dir}/${name}`,
        localPath,
        this.#aborter.signal,
      )
      await unlink(localPath)
      const part: StagedPart = { name, rows, bytes, sha256 }
      this.#parts[index] = part
      return part
    })()
    this.#pending.add(work)
    try {
      return await work
    } finally {
      this.#pending.delete(work)
    }
  }

  /**
   * Writes `_manifest.json` (format version 1, parts in the order they were added, after the saved parts of
   * earlier passes), which commits the batch, then removes the start marker, the checkpoint and the local
   * scratch folder. Refuses a manifest for another table or batch, one whose `rowCount` differs from the parts'
   * rows, and a commit while a part is still uploading.
   */
  async commit(manifest: Omit<BatchManifest, 'parts' | 'formatVersion'>): Promise<BatchManifest> {
    this.#assertOpen('commit')
    const full = completeManifest(this.table, this.batchId, manifest, this.#parts)
    await this.#store.putManifest(`${this.#dir}/${MANIFEST}`, full)
    this.#state = 'committed'
    // Committed from here on: leftovers are harmless, so cleaning them cannot fail the commit.
    const where = `table ${this.table}: batch ${this.batchId}`
    await this.#store.deleteKey(`${this.#dir}/${STARTED}`, where).catch(() => undefined)
    await this.#store.deleteKey(`${this.#dir}/${PROGRESS}`, where).catch(() => undefined)
    await rm(this.scratchDir, { recursive: true, force: true }).catch(() => undefined)
    return full
  }

  /**
   * Writes `_progress.json` (pass, time, every part so far, `state` as JSON) with one PutObject, then removes
   * the local scratch folder; the parts stay. The writer is closed: `StagingStore.resumeBatch` continues the
   * batch. Refused while a part is still uploading.
   */
  async suspend(state: unknown): Promise<BatchCheckpoint> {
    this.#assertOpen('suspend')
    const checkpoint = nextCheckpoint(
      this.table,
      this.batchId,
      this.#checkpoint,
      this.#parts,
      state,
      new Date(),
    )
    // Closed before the first await, so an addPart or commit started meanwhile is refused.
    this.#state = 'suspended'
    try {
      await this.#store.putCheckpoint(
        `${this.#dir}/${PROGRESS}`,
        checkpointText(this.table, this.batchId, checkpoint),
      )
    } catch (error) {
      if (this.#state === 'suspended') this.#state = 'open'
      throw error
    }
    this.#checkpoint = checkpoint
    await rm(this.scratchDir, { recursive: true, force: true }).catch(() => undefined)
    return checkpoint
  }

  /**
   * Cancels running uploads and removes every object of the batch and the local scratch folder. With
   * `keepCheckpoint`, a writer that resumed or suspended removes only its scratch folder and the parts added
   * after its checkpoint. Safe after a failure and twice; a no-op after a successful commit (use
   * `StagingStore.deleteBatch` for that), and after a suspend when a later pass has committed the batch meanwhile.
   */
  async abort(options?: { readonly keepCheckpoint?: boolean }): Promise<void> {
    if (this.#state === 'committed') return
    const wasSuspended = this.#state === 'suspended'
    this.#state = 'aborted'
    this.#aborter.abort()
    await Promise.allSettled([...this.#pending])
    await rm(this.scratchDir, { recursive: true, force: true })
    const where = `table ${this.table}: batch ${this.batchId}`
    const checkpoint = this.#checkpoint
    if (options?.keepCheckpoint === true && checkpoint !== undefined) {
      for (let index = checkpoint.parts.length; index < this.#parts.length; index++) {
        await this.#store.deleteKey(`${this.#dir}/${partFileName(index)}`, where)
      }
      return
    }
    if (wasSuspended && (await this.#store.exists(`${this.#dir}/${MANIFEST}`))) return
    await this.#store.deleteFolder(`${this.#dir}/`, where)
  }

  #assertOpen(operation: string): void {
    if (this.#state !== 'open') {
      const hint = this.#state === 'suspended' ? ' (continue it with resumeBatch)' : ''
      throw new StagingError(
        `table ${this.table}: batch ${this.batchId}: ${operation} after the batch was ${this.#state}${hint}`,
      )
    }
  }
}

function normalizePrefix(prefix: string): string {
  return prefix.replace(/^\/+|\/+$/g, '')
}
