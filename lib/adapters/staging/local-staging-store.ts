import { BlobStagingStore } from './blob-staging-store.ts'
import { FileBlobStore } from './file-blob-store.ts'

export interface LocalStagingStoreOptions {
  /** Folder holding `<table>/<batchId>/...`; created on first use. Relative paths resolve against the cwd. */
  readonly root: string
}

/**
 * Staging in a local folder (embedded mode): `<root>/<table>/<batchId>/part-NNNNN.parquet` plus
 * `_manifest.json`. The source writes its parts in `<batch>/.scratch`, so that staging a part is a rename.
 */
export class LocalStagingStore extends BlobStagingStore {
  readonly #blobs: FileBlobStore

  constructor(options: LocalStagingStoreOptions) {
    const blobs = new FileBlobStore(options.root, (root) => ({
      name: `staging folder ${root}`,
      setting: 'staging.path in dimsync.yaml, or --staging',
    }))
    super(blobs)
    this.#blobs = blobs
  }

  /** Absolute root folder of the store. */
  get root(): string {
    return this.#blobs.root
  }
}
