import { MANIFEST_FILE } from '../../lib/core/batch-manifest.ts'
import type { BlobStore } from '../../lib/ports/blob-store.ts'

/** How often a table's staging folder was read. */
export interface Reads {
  /** Listings of the table's staging folder. */
  lists: number
  /** Reads of a batch's `_manifest.json`. */
  manifests: number
}

/** The real file blob store, counting the reads of `table`'s folder. */
export function countingBlobs(blobs: BlobStore, table: string): { blobs: BlobStore; reads: Reads } {
  const reads: Reads = { lists: 0, manifests: 0 }
  const counted: BlobStore = {
    locate: (key) => blobs.locate(key),
    readText: (key, what) => {
      if (key.startsWith(`${table}/`) && key.endsWith(`/${MANIFEST_FILE}`)) reads.manifests++
      return blobs.readText(key, what)
    },
    writeText: (key, text, what, options) => blobs.writeText(key, text, what, options),
    exists: (key, what) => blobs.exists(key, what),
    list: (folder, what) => {
      if (folder === table) reads.lists++
      return blobs.list(folder, what)
    },
    putFile: (key, path, what, signal) => blobs.putFile(key, path, what, signal),
    readLocally: (keys, what) => blobs.readLocally(keys, what),
    delete: (key, what) => blobs.delete(key, what),
    deleteFolder: (folder, what) => blobs.deleteFolder(folder, what),
    scratchFolder: (folder) => blobs.scratchFolder(folder),
  }
  return { blobs: counted, reads }
}
