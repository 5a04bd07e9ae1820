import { BlobStagingStore } from './blob-staging-store.ts'
import { MemoryBlobStore } from './memory-blob-store.ts'

/** The staging store over blobs held in this process (tests): the same batches, manifests and checks. */
export class MemoryStagingStore extends BlobStagingStore {
  readonly blobs: MemoryBlobStore

  constructor(blobs = new MemoryBlobStore()) {
    super(blobs)
    this.blobs = blobs
  }
}
