import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import { readdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { S3StagingStore } from '../../../../lib/adapters/staging/s3-staging-store.ts'
import { StagingError } from '../../../../lib/core/errors.ts'
import { describeStagingStoreContract } from '../../../contract/staging-store.contract.ts'
import { startS3rver, type S3rverHandle } from '../../../support/aws/s3rver.ts'

let s3: S3rverHandle
beforeAll(async () => {
  s3 = await startS3rver()
})
afterAll(async () => {
  await s3?.stop()
})

describeStagingStoreContract('s3 (s3rver)', async () => {
  const bucket = await s3.createBucket()
  const prefix = 'staging/v1'
  const store = new S3StagingStore({ client: s3.client, bucket, prefix })
  return {
    store,
    damagePart: async (table, batchId, partName, how) => {
      const Key = `${prefix}/${table}/${batchId}/${partName}`
      if (how === 'delete') {
        await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key }))
        return
      }
      const response = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key }))
      const bytes = Buffer.from(await response.Body!.transformToByteArray())
      // Same length, different bytes: only the checksum can tell.
      bytes[0] = bytes[0]! ^ 0xff
      await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key, Body: bytes }))
    },
    batchFiles: async (table, batchId) => {
      const folder = `${prefix}/${table}/${batchId}/`
      const page = await s3.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: folder }))
      return (page.Contents ?? []).map((o) => o.Key!.slice(folder.length)).sort()
    },
    cleanup: async () => {},
  }
})

describe('S3StagingStore (s3 specifics, s3rver)', () => {
  const manifest = (batchId: string, rowCount: number) => ({
    table: 'customers',
    batchId,
    extractedAt: '2024-01-01T00:00:00.000Z',
    mode: 'full' as const,
    rowCount,
    columns: [],
    sourceDescription: 'test',
  })

  async function keys(bucket: string): Promise<string[]> {
    const page = await s3.client.send(new ListObjectsV2Command({ Bucket: bucket }))
    return (page.Contents ?? []).map((o) => o.Key!).sort()
  }

  it('lays out <prefix>/<table>/<batchId>/part-NNNNN.parquet and _manifest.json, nothing else left', async () => {
    const bucket = await s3.createBucket()
    const store = new S3StagingStore({ client: s3.client, bucket, prefix: '/lake/staging/' })
    expect(store.location).toBe(`s3://${bucket}/lake/staging`)
    const writer = await store.beginBatch('customers', 'b1')
    expect(await keys(bucket)).toEqual(['lake/staging/customers/b1/_started.json'])
    await writeFile(join(writer.scratchDir, 'a'), 'abc')
    await writer.addPart(join(writer.scratchDir, 'a'), 3)
    await writer.commit(manifest('b1', 3))
    expect(await keys(bucket)).toEqual([
      'lake/staging/customers/b1/_manifest.json',
      'lake/staging/customers/b1/part-00000.parquet',
    ])
    const stored = await s3.client.send(
      new GetObjectCommand({ Bucket: bucket, Key: 'lake/staging/customers/b1/_manifest.json' }),
    )
    expect(JSON.parse(await stored.Body!.transformToString())).toMatchObject({
      formatVersion: 1,
      rowCount: 3,
      parts: [{ name: 'part-00000.parquet', rows: 3, bytes: 3 }],
    })
    // The scratch folder is gone after commit; opened copies are gone after release.
    await expect(readdir(writer.scratchDir)).rejects.toThrow(/ENOENT/)
    const opened = await store.openBatch('customers', 'b1')
    expect(opened.partPaths[0]!.startsWith(tmpdir())).toBe(true)
    await opened.release()
    await expect(readdir(join(opened.partPaths[0]!, '..'))).rejects.toThrow(/ENOENT/)
  })

  it('streams a part larger than the multipart part size and verifies it on read', async () => {
    const bucket = await s3.createBucket()
    const store = new S3StagingStore({ client: s3.client, bucket, partSize: 5 * 1024 * 1024, queueSize: 2 })
    const writer = await store.beginBatch('customers', 'big')
    const bytes = Buffer.alloc(12 * 1024 * 1024 + 17)
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i % 251
    await writeFile(join(writer.scratchDir, 'big'), bytes)
    const part = await writer.addPart(join(writer.scratchDir, 'big'), 1)
    expect(part.bytes).toBe(bytes.length)
    await writer.commit(manifest('big', 1))
    const opened = await store.openBatch('customers', 'big')
    try {
      const { readFile } = await import('node:fs/promises')
      expect((await readFile(opened.partPaths[0]!)).equals(bytes)).toBe(true)
    } finally {
      await opened.release()
    }
  })

  it('refuses to begin a committed batch id and restarts an uncommitted one from empty', async () => {
    const bucket = await s3.createBucket()
    const store = new S3StagingStore({ client: s3.client, bucket })
    const first = await store.beginBatch('customers', 'b1')
    await writeFile(join(first.scratchDir, 'a'), 'abc')
    await first.addPart(join(first.scratchDir, 'a'), 1)
    const retry = await store.beginBatch('customers', 'b1')
    expect(await keys(bucket)).toEqual(['customers/b1/_started.json'])
    await retry.commit(manifest('b1', 0))
    await expect(store.beginBatch('customers', 'b1')).rejects.toThrow(/already committed in s3:\/\//)
  })

  it('a damaged manifest is a StagingError naming the batch and the object', async () => {
    const bucket = await s3.createBucket()
    const store = new S3StagingStore({ client: s3.client, bucket })
    const writer = await store.beginBatch('customers', 'b1')
    await writer.commit(manifest('b1', 0))
    await s3.client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: 'customers/b1/_manifest.json',
        Body: '{"formatVersion": 1, "ta',
      }),
    )
    const error = await store.listBatches('customers').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StagingError)
    expect((error as Error).message).toMatch(
      /batch b1: unreadable manifest s3:\/\/.*customers\/b1\/_manifest\.json/,
    )
  })

  it('suspend writes _progress.json beside the parts; the commit of a later pass removes it and the start marker', async () => {
    const bucket = await s3.createBucket()
    const store = new S3StagingStore({ client: s3.client, bucket, prefix: 'lake' })
    const writer = await store.beginBatch('customers', 'b1')
    await writeFile(join(writer.scratchDir, 'a'), 'abc')
    const part = await writer.addPart(join(writer.scratchDir, 'a'), 3)
    const checkpoint = await writer.suspend({ next: 'k42' })
    await expect(readdir(writer.scratchDir)).rejects.toThrow(/ENOENT/)
    expect(await keys(bucket)).toEqual([
      'lake/customers/b1/_progress.json',
      'lake/customers/b1/_started.json',
      'lake/customers/b1/part-00000.parquet',
    ])
    const stored = await s3.client.send(
      new GetObjectCommand({ Bucket: bucket, Key: 'lake/customers/b1/_progress.json' }),
    )
    expect(JSON.parse(await stored.Body!.transformToString())).toEqual({
      formatVersion: 1,
      table: 'customers',
      batchId: 'b1',
      pass: 1,
      savedAt: checkpoint.savedAt,
      parts: [part],
      state: { next: 'k42' },
    })

    const resumed = await store.resumeBatch('customers', 'b1')
    expect(resumed.writer.scratchDir.startsWith(tmpdir())).toBe(true)
    await writeFile(join(resumed.writer.scratchDir, 'b'), 'defg')
    await resumed.writer.addPart(join(resumed.writer.scratchDir, 'b'), 4)
    await resumed.writer.commit(manifest('b1', 7))
    expect(await keys(bucket)).toEqual([
      'lake/customers/b1/_manifest.json',
      'lake/customers/b1/part-00000.parquet',
      'lake/customers/b1/part-00001.parquet',
    ])
    await expect(readdir(resumed.writer.scratchDir)).rejects.toThrow(/ENOENT/)
  })

  it('abort with keepCheckpoint cancels a running upload and removes only the parts of the failed pass', async () => {
    const bucket = await s3.createBucket()
    const store = new S3StagingStore({ client: s3.client, bucket, partSize: 5 * 1024 * 1024, queueSize: 1 })
    const writer = await store.beginBatch('customers', 'b1')
    await writeFile(join(writer.scratchDir, 'a'), 'abc')
    await writer.addPart(join(writer.scratchDir, 'a'), 1)
    const checkpoint = await writer.suspend({})

    const { writer: pass2 } = await store.resumeBatch('customers', 'b1')
    await writeFile(join(pass2.scratchDir, 'b'), 'small')
    await pass2.addPart(join(pass2.scratchDir, 'b'), 1)
    await writeFile(join(pass2.scratchDir, 'big'), Buffer.alloc(11 * 1024 * 1024, 7))
    // Handled at once: the upload fails while the test goes on, which must not count as an unhandled rejection.
    const uploading = pass2.addPart(join(pass2.scratchDir, 'big'), 1).catch((error: unknown) => error)
    await expect(pass2.suspend({})).rejects.toThrow(
      /suspend called while part part-00002\.parquet is still being added/,
    )
    await pass2.abort({ keepCheckpoint: true })
    expect(String(await uploading)).toMatch(/upload aborted/)
    expect(await keys(bucket)).toEqual([
      'customers/b1/_progress.json',
      'customers/b1/_started.json',
      'customers/b1/part-00000.parquet',
    ])
    await expect(readdir(pass2.scratchDir)).rejects.toThrow(/ENOENT/)
    const again = await store.resumeBatch('customers', 'b1')
    expect(again.checkpoint).toEqual(checkpoint)
    await again.writer.abort()
    expect(await keys(bucket)).toEqual([])
  })

  it('resumeBatch refuses a damaged checkpoint and a saved part of another size, naming the object', async () => {
    const bucket = await s3.createBucket()
    const store = new S3StagingStore({ client: s3.client, bucket })
    const writer = await store.beginBatch('customers', 'b1')
    await writeFile(join(writer.scratchDir, 'a'), 'abc')
    await writer.addPart(join(writer.scratchDir, 'a'), 1)
    await writer.suspend({})
    const progress = await s3.client.send(
      new GetObjectCommand({ Bucket: bucket, Key: 'customers/b1/_progress.json' }),
    )
    const text = await progress.Body!.transformToString()

    await s3.client.send(
      new PutObjectCommand({ Bucket: bucket, Key: 'customers/b1/part-00000.parquet', Body: 'abcd' }),
    )
    await expect(store.resumeBatch('customers', 'b1')).rejects.toThrow(
      /^table customers: batch b1: part part-00000\.parquet has 4 bytes, the checkpoint says 3 \(s3:\/\/.*\/customers\/b1\/part-00000\.parquet\)$/,
    )
    await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'customers/b1/part-00000.parquet' }))
    await expect(store.resumeBatch('customers', 'b1')).rejects.toThrow(
      /^table customers: batch b1: part part-00000\.parquet of the checkpoint is missing \(s3:\/\//,
    )

    await s3.client.send(
      new PutObjectCommand({ Bucket: bucket, Key: 'customers/b1/_progress.json', Body: text.slice(0, 20) }),
    )
    const error = await store.resumeBatch('customers', 'b1').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StagingError)
    expect((error as Error).message).toMatch(
      /^table customers: batch b1: unreadable checkpoint s3:\/\/.*\/customers\/b1\/_progress\.json$/,
    )
    await s3.client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: 'customers/b1/_progress.json',
        Body: text.replace('"batchId": "b1"', '"batchId": "b9"'),
      }),
    )
    await expect(store.resumeBatch('customers', 'b1')).rejects.toThrow(
      /invalid checkpoint s3:\/\/.*_progress\.json: it names table customers, batch b9/,
    )
  })

  it('a missing bucket is a clear error naming it', async () => {
    const store = new S3StagingStore({ client: s3.client, bucket: 'no-such-bucket-dimsync' })
    await expect(store.listBatches('customers')).rejects.toThrow(
      /table customers: listing s3:\/\/no-such-bucket-dimsync\/customers\/: NoSuchBucket/,
    )
  })
})
