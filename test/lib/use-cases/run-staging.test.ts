import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { beforeEach, describe, expect, it } from 'vitest'
import { BlobStagingStore } from '../../../lib/adapters/staging/blob-staging-store.ts'
import { MemoryBlobStore } from '../../../lib/adapters/staging/memory-blob-store.ts'
import type { BatchManifest } from '../../../lib/core/batch.ts'
import { StagingError } from '../../../lib/core/errors.ts'
import type { StagingStore } from '../../../lib/ports/staging-store.ts'
import { RunStaging } from '../../../lib/use-cases/run-staging.ts'
import { countingBlobs, type Reads } from '../../support/counting-blobs.ts'
import { writeParquetPart } from '../../support/parquet-rows.ts'

let store: StagingStore
let reads: Reads

beforeEach(() => {
  const counted = countingBlobs(new MemoryBlobStore(), 'customers')
  store = new BlobStagingStore(counted.blobs)
  reads = counted.reads
})

async function stage(
  on: StagingStore,
  batchId: string,
  day: number,
  table = 'customers',
): Promise<BatchManifest> {
  const writer = await on.beginBatch(table, batchId)
  const path = join(writer.scratchDir, `tmp-${randomBytes(4).toString('hex')}.parquet`)
  await writeParquetPart(path, [{ name: 'id', type: 'INTEGER' }], [{ id: day }])
  await writer.addPart(path, 1)
  return await writer.commit({
    table,
    batchId,
    extractedAt: new Date(Date.UTC(2024, 0, day)).toISOString(),
    mode: 'full',
    rowCount: 1,
    columns: [{ name: 'id', type: 'INTEGER' }],
    sourceDescription: 'test',
  })
}

const ids = (manifests: readonly BatchManifest[]) => manifests.map((m) => m.batchId)

describe('RunStaging: a table staging as one run sees it', () => {
  it('lists the table once, on the first question, and answers every later one from that listing', async () => {
    await stage(store, 'b2', 2)
    await stage(store, 'b1', 1)
    const crashed = await store.beginBatch('customers', 'crashed')
    reads.lists = reads.manifests = 0
    const run = new RunStaging(store, 'customers')
    expect(reads).toEqual({ lists: 0, manifests: 0 })
    expect(ids(await run.listBatches('customers'))).toEqual(['b1', 'b2'])
    expect((await run.listUncommitted('customers')).map((b) => b.batchId)).toEqual(['crashed'])
    expect((await run.manifestOf('b2'))?.batchId).toBe('b2')
    const opened = await run.openBatch('customers', 'b1')
    expect(opened.manifest.batchId).toBe('b1')
    await opened.release()
    const onDemand = await run.openBatchOnDemand('customers', 'b2')
    expect(onDemand.parts.names).toEqual(['part-00000.parquet'])
    expect(reads).toEqual({ lists: 1, manifests: 2 })
    await crashed.abort()
  })

  it('keeps the listing current with its own commits, deletes and removals, without listing again', async () => {
    await stage(store, 'b2', 2)
    const crashed = await store.beginBatch('customers', 'crashed')
    const run = new RunStaging(store, 'customers')
    const old = new Date(Date.now() + 3_600_000)
    expect(await run.removeAbandoned('customers', old)).toEqual(['crashed'])
    expect(await run.listUncommitted('customers')).toEqual([])
    const b1 = await stage(run, 'b1', 1)
    expect(ids(await run.committed())).toEqual(['b1', 'b2'])
    expect(await run.manifestOf('b1')).toEqual(b1)
    await run.deleteBatch('customers', 'b2')
    expect(ids(await run.committed())).toEqual(['b1'])
    expect(reads.lists).toBe(1)
    expect(ids(await store.listBatches('customers'))).toEqual(['b1'])
    await crashed.abort()
  })

  it('once its run starts a batch, asks the store which batches are uncommitted', async () => {
    const run = new RunStaging(store, 'customers')
    expect(await run.listUncommitted('customers')).toEqual([])
    const writer = await run.beginBatch('customers', 'open')
    expect((await run.listUncommitted('customers')).map((b) => b.batchId)).toEqual(['open'])
    await writer.abort()
  })

  it('a batch it did not list is opened by the store: an uncommitted one is its StagingError', async () => {
    const run = new RunStaging(store, 'customers')
    expect(await run.committed()).toEqual([])
    await expect(run.openBatch('customers', 'nope')).rejects.toThrow(/batch nope is not committed/)
    await expect(run.openBatchOnDemand('customers', 'nope')).rejects.toBeInstanceOf(StagingError)
  })

  it('other tables go to the store as they are', async () => {
    const run = new RunStaging(store, 'customers')
    await stage(run, 's1', 1, 'suppliers')
    expect(ids(await run.listBatches('suppliers'))).toEqual(['s1'])
    await run.deleteBatch('suppliers', 's1')
    expect(await store.listBatches('suppliers')).toEqual([])
    expect(reads.lists).toBe(0)
  })
})
