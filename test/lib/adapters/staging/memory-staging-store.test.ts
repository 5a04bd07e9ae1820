import { MemoryStagingStore } from '../../../../lib/adapters/staging/memory-staging-store.ts'
import { describeStagingStoreContract } from '../../../contract/staging-store.contract.ts'

describeStagingStoreContract('in memory', async () => {
  const store = new MemoryStagingStore()
  return {
    store,
    damagePart: async (table, batchId, partName, how) => {
      const key = `${table}/${batchId}/${partName}`
      if (how === 'delete') return await store.blobs.delete(key)
      // Same length, different bytes: only the checksum can tell.
      const bytes = store.blobs.bytesOf(key)!
      bytes[0] = bytes[0]! ^ 0xff
      store.blobs.overwrite(key, bytes)
    },
    batchFiles: async (table, batchId) => {
      const folder = `${table}/${batchId}/`
      return (await store.blobs.list(`${table}/${batchId}`))
        .map((blob) => blob.key.slice(folder.length))
        .filter((name) => !name.includes('/'))
        .sort()
    },
    cleanup: async () => {},
  }
})
