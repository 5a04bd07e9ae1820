import { createWriteStream } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import type { Readable } from 'node:stream'

import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3'
import { glob, isDynamicPattern, type GlobOptions } from 'tinyglobby'

import { SourceError } from '../../core/errors.ts'
import { S3_SCHEME, s3PathHint, splitS3Path } from '../../core/s3-path.ts'

/**
 * File sources on S3 (`path: s3://bucket/prefix/*.parquet`). DuckDB cannot read S3 here (its httpfs extension
 * is not bundled and cannot be downloaded offline), so the objects are listed with the AWS SDK, matched by the
 * same glob engine as local files (tinyglobby, run over the listing instead of a disk), and each object read is
 * streamed to a local file that DuckDB reads like any other.
 */

export { S3_SCHEME } from '../../core/s3-path.ts'

/** One object of the listing. */
export interface S3File {
  readonly bucket: string
  readonly key: string
  /** `s3://bucket/key`: the name used in messages and in the new-files watermark. */
  readonly name: string
  /** ISO instant, whole seconds (S3's resolution). */
  readonly modified: string
  readonly size: number
}

export interface S3Pattern {
  readonly bucket: string
  /** The key pattern (no leading slash). */
  readonly pattern: string
}

/** Splits `s3://bucket/key-pattern`; a path without a bucket or a key is refused naming the table. */
export function parseS3Path(tableName: string, path: string): S3Pattern {
  const split = splitS3Path(path)
  if (split === undefined) throw new SourceError(tableName, `${tableName}: ${s3PathHint(path)}`)
  return split
}

/** Virtual root the listing is mounted at for tinyglobby (any absolute path works: nothing touches the disk). */
const ROOT = '/s3-listing'

/**
 * The objects of `path` (a key or a glob), sorted by key. Lists only below the pattern's fixed leading folders,
 * then matches with the same rules as a local glob (`*` stays within a folder, `**` crosses folders, `{a,b}`).
 */
export async function listS3Files(client: S3Client, tableName: string, path: string): Promise<S3File[]> {
  const { bucket, pattern } = parseS3Path(tableName, path)
  const segments = pattern.split('/')
  const firstDynamic = segments.findIndex((segment) => isDynamicPattern(segment))
  const fixed = firstDynamic < 0 ? pattern : segments.slice(0, firstDynamic).join('/')
  const prefix = firstDynamic < 0 || fixed === '' ? fixed : `${fixed}/`
  const objects = new Map<string, S3File>()
  let token: string | undefined
  try {
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
      )
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || object.Key.endsWith('/')) continue
        objects.set(object.Key, {
          bucket,
          key: object.Key,
          name: `${S3_SCHEME}${bucket}/${object.Key}`,
          modified: (object.LastModified ?? new Date(0)).toISOString(),
          size: object.Size ?? 0,
        })
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
  } catch (error) {
    throw new SourceError(tableName, `${tableName}: cannot list ${path}: ${describeS3Error(error)}`, {
      cause: error,
      retryable: isTransient(error),
    })
  }
  if (firstDynamic < 0) {
    const only = objects.get(pattern)
    return only === undefined ? [] : [only]
  }
  const below = [...objects.keys()].map((key) => key.slice(prefix.length))
  const matched = await glob(segments.slice(firstDynamic).join('/'), {
    cwd: ROOT,
    onlyFiles: true,
    expandDirectories: false,
    fs: listingFs(below),
  })
  return matched.map((relative) => objects.get(`${prefix}${relative}`)!).sort(byKey)
}

function byKey(a: S3File, b: S3File): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0
}

interface ListingEntry {
  readonly name: string
  isFile(): boolean
  isDirectory(): boolean
  isSymbolicLink(): boolean
}

/** A read-only `fs.readdir` over the listed keys (folders are the keys' `/`-separated prefixes). */
function listingFs(keys: readonly string[]) {
  const folders = new Map<string, Map<string, boolean>>() // folder -> entry name -> is a folder
  const add = (folder: string, name: string, isFolder: boolean) => {
    let entries = folders.get(folder)
    if (entries === undefined) folders.set(folder, (entries = new Map()))
    if (!entries.get(name)) entries.set(name, isFolder)
  }
  for (const key of keys) {
    const parts = key.split('/')
    for (let i = 0; i < parts.length; i++) {
      const folder = parts.slice(0, i).join('/')
      add(folder, parts[i]!, i < parts.length - 1)
    }
  }
  const readdir = (
    path: string,
    _options: unknown,
    callback: (error: NodeJS.ErrnoException | null, entries: ListingEntry[]) => void,
  ) => {
    const folder = path.replace(/\/+$/, '').slice(ROOT.length).replace(/^\//, '')
    const entries = [...(folders.get(folder) ?? new Map<string, boolean>())].map(([name, isFolder]) => ({
      name,
      isFile: () => !isFolder,
      isDirectory: () => isFolder,
      isSymbolicLink: () => false,
    }))
    callback(null, entries)
  }
  return { readdir } as unknown as GlobOptions['fs']
}

/** Streams one object to `destination` (a local file), never holding it in memory. */
export async function downloadS3File(
  client: S3Client,
  tableName: string,
  file: S3File,
  destination: string,
): Promise<void> {
  try {
    const response = await client.send(new GetObjectCommand({ Bucket: file.bucket, Key: file.key }))
    if (response.Body === undefined) throw new Error('the response has no body')
    await pipeline(response.Body as Readable, createWriteStream(destination))
  } catch (error) {
    throw new SourceError(tableName, `${tableName}: cannot read ${file.name}: ${describeS3Error(error)}`, {
      cause: error,
      retryable: isTransient(error),
    })
  }
}

function describeS3Error(error: unknown): string {
  const name = (error as { name?: unknown }).name
  const message = error instanceof Error ? error.message : String(error)
  if (name === 'NoSuchBucket') return 'the bucket does not exist'
  if (name === 'NoSuchKey') return 'the object was removed while the extract ran; run again'
  if (name === 'AccessDenied' || name === 'Forbidden')
    return `access denied (the extract needs s3:ListBucket and s3:GetObject on the path): ${message}`
  return typeof name === 'string' && name !== 'Error' ? `${name}: ${message}` : message
}

function isTransient(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
  const name = (error as { name?: unknown }).name
  return (status !== undefined && status >= 500) || name === 'TimeoutError' || name === 'ECONNRESET'
}
