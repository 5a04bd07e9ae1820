/**
 * A store of named blobs (files, objects) under '/'-separated keys relative to its root: a local folder or an
 * S3 bucket prefix. The staging store keeps its batches in one (lib/adapters/staging/blob-staging-store.ts); this
 * port is only the I/O, with no notion of batches.
 *
 * Every method takes `what`, what the caller is doing it for (`table customers: batch b1`), which starts the
 * message of any error it throws; the message also names the blob's location.
 */
export interface BlobStore {
  /** Where the blob `key` is, for messages: a file path or an `s3://` URL. */
  locate(key: string): string
  /** The blob's text (UTF-8); undefined when there is no such blob. */
  readText(key: string, what: string): Promise<string | undefined>
  /**
   * Writes a text blob whole: readers see the old blob or the new one, never a part. With `ifAbsent`, nothing is
   * written when the blob exists and the answer is false (two writers can never both create it).
   */
  writeText(
    key: string,
    text: string,
    what: string,
    options?: { readonly ifAbsent?: boolean },
  ): Promise<boolean>
  exists(key: string, what: string): Promise<boolean>
  /** Every blob below `folder` (any depth), in no particular order. A missing folder has none. */
  list(folder: string, what: string): Promise<readonly BlobInfo[]>
  /**
   * Stores the local file `localPath` as blob `key` and consumes the file; answers the size and SHA-256 of the
   * bytes stored. The blob is durable when this returns. Aborting `signal` cancels a running transfer (a
   * `StagingError` saying the upload was aborted).
   */
  putFile(key: string, localPath: string, what: string, signal: AbortSignal): Promise<BlobDigest>
  /**
   * The blobs as local files, for readers that need paths (DuckDB reads Parquet from a path), with the size and
   * SHA-256 of the bytes read: the stored files themselves, or copies in a temporary folder. A missing blob is
   * undefined. `release` frees the copies; until then readers must not modify the files.
   */
  readLocally(keys: readonly string[], what: string): Promise<LocalBlobs>
  /** Deletes a blob; a missing one is fine. */
  delete(key: string, what: string): Promise<void>
  /** Deletes every blob below `folder`; a missing folder is fine. */
  deleteFolder(folder: string, what: string): Promise<void>
  /**
   * A new, empty local folder for files on their way to the blobs below `folder` (on the same disk when the
   * blobs are local, so that `putFile` is a rename). The caller removes it when done.
   */
  scratchFolder(folder: string): Promise<string>
}

export interface WriteOptions {
  /** Write only if the blob does not exist yet. */
  readonly ifAbsent?: boolean
}

export interface BlobInfo {
  readonly key: string
  readonly bytes: number
  /** Last modification, in epoch milliseconds. */
  readonly modifiedAt: number
}

export interface BlobDigest {
  readonly bytes: number
  /** Hex SHA-256 of the bytes. */
  readonly sha256: string
}

export interface LocalBlobs {
  /** One per requested key, in order: the file and what was read from it, or undefined when the blob is missing. */
  readonly files: readonly (LocalBlob | undefined)[]
  release(): Promise<void>
}

export interface LocalBlob extends BlobDigest {
  readonly path: string
}
