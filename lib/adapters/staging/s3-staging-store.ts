import { BlobStagingStore } from './blob-staging-store.ts'
import { S3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.ts'

export type S3StagingStoreOptions = S3BlobStoreOptions

/**
 * Staging on S3: `s3://<bucket>/<prefix>/<table>/<batchId>/part-NNNNN.parquet` plus `_manifest.json`, written
 * last, with `If-None-Match: *` (two writers can never both commit one batch id). Parts are streamed up from the
 * local scratch folder and downloaded for a merge. Deployments also set a bucket lifecycle rule that aborts
 * incomplete multipart uploads and expires old staging objects.
 */
export class S3StagingStore extends BlobStagingStore {
  readonly #blobs: S3BlobStore

  constructor(options: S3StagingStoreOptions) {
    const blobs = new S3BlobStore(options)
    super(blobs)
    this.#blobs = blobs
  }

  /** `s3://bucket/prefix`, for messages and logs. */
  get location(): string {
    return this.#blobs.location
  }
}
