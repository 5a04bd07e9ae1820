import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

import { PutObjectCommand } from '@aws-sdk/client-s3'
import { glob } from 'tinyglobby'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { listS3Files, parseS3Path } from '../../../lib/adapters/source/s3-files.ts'
import { SourceError } from '../../../lib/core/errors.ts'
import { startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'

/** The same keys as S3 objects and as files of a local folder: a glob must pick the same ones in both. */
const KEYS = [
  'exports/customers/2024-01-01.parquet',
  'exports/customers/2024-01-02.parquet',
  'exports/customers/2024-01-02.csv',
  'exports/customers/archive/2023-12-31.parquet',
  'exports/customers/archive/deep/2023-01-01.parquet',
  'exports/orders/2024-01-01.parquet',
  'exports/customers.parquet',
  'other/x.parquet',
]

const PATTERNS = [
  'exports/customers/*.parquet',
  'exports/customers/**/*.parquet',
  'exports/*/2024-01-0[12].parquet',
  'exports/customers/2024-01-0?.{csv,parquet}',
  'exports/**/2024-*',
  'exports/customers.parquet',
  'exports/customers/none-*.parquet',
]

let s3: S3rverHandle
let bucket: string
let local: string
beforeAll(async () => {
  s3 = await startS3rver()
  bucket = await s3.createBucket('listing')
  local = mkdtempSync(join(tmpdir(), 'dimsync-listing-'))
  for (const key of KEYS) {
    await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'x' }))
    mkdirSync(dirname(join(local, key)), { recursive: true })
    writeFileSync(join(local, key), 'x')
  }
  // More than one page of listing (s3rver pages by 1000).
  for (let i = 0; i < 1005; i++) {
    await s3.client.send(
      new PutObjectCommand({ Bucket: bucket, Key: `paged/p${String(i).padStart(4, '0')}.csv`, Body: 'x' }),
    )
  }
})
afterAll(async () => {
  await s3.stop()
  rmSync(local, { recursive: true, force: true })
})

describe('S3 file listing', () => {
  it.each(PATTERNS)('%s matches the same keys on S3 as files in a local folder', async (pattern) => {
    const expected = (await glob(pattern, { cwd: local, onlyFiles: true, expandDirectories: false })).sort()
    const listed = await listS3Files(s3.client, 'customers', `s3://${bucket}/${pattern}`)
    expect(listed.map((file) => file.key)).toEqual(expected)
    for (const file of listed) {
      expect(file.name).toBe(`s3://${bucket}/${file.key}`)
      expect(Number.isNaN(Date.parse(file.modified))).toBe(false)
    }
  })

  it('follows the listing over several pages', async () => {
    const listed = await listS3Files(s3.client, 'customers', `s3://${bucket}/paged/*.csv`)
    expect(listed).toHaveLength(1005)
  })

  it('a path without a key, or a bucket that does not exist, is an error naming the table and the path', async () => {
    expect(() => parseS3Path('customers', 's3://only-bucket')).toThrow(
      /customers: s3:\/\/only-bucket names no objects; write s3:\/\/<bucket>\/<key or glob>/,
    )
    const error = await listS3Files(s3.client, 'customers', 's3://no-such-bucket-here/a/*.csv').catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(SourceError)
    expect((error as Error).message).toMatch(
      /^customers: cannot list s3:\/\/no-such-bucket-here\/a\/\*\.csv: the bucket does not exist/,
    )
  })
})
