import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { DynamoDbStateStore } from '../../../lib/adapters/state/dynamodb-state-store.ts'
import { parseStagingLocation, parseStateLocation } from '../../../lib/runtime/aws-deps.ts'
import { startDynalite, type DynaliteHandle } from '../../support/aws/dynalite.ts'
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'

const run = promisify(execFile)
const projectDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

let s3: S3rverHandle
let dynamo: DynaliteHandle
beforeAll(async () => {
  ;[s3, dynamo] = await Promise.all([startS3rver(), startDynalite()])
})
afterAll(async () => {
  await Promise.all([s3?.stop(), dynamo?.stop()])
})

describe('dimsync run --staging s3://... --state dynamodb://... (s3rver + dynalite)', () => {
  it('runs the pipeline through S3 and DynamoDB at the given endpoints', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dimsync-cli-aws-'))
    await mkdir(join(dir, 'data'))
    await writeFile(join(dir, 'data', 'customers.csv'), 'customer_id,name\n1,Ada\n2,Bob\n')
    await writeFile(
      join(dir, 'dimsync.yaml'),
      [
        'version: 1',
        'warehouse: { type: duckdb, path: warehouse.duckdb }',
        'tables:',
        '  - name: customers',
        '    source: { type: file, path: data/customers.csv }',
        '    target: dim_customer',
        '    key: customer_id',
        '    tracked: [name]',
        '',
      ].join('\n'),
    )
    const bucket = await s3.createBucket('cli')
    const table = await dynamo.createTable('cli-state')
    const args = [
      '--import',
      'tsx',
      join(projectDir, 'functions', 'local', 'cli.ts'),
      'run',
      '--config',
      join(dir, 'dimsync.yaml'),
      '--staging',
      `s3://${bucket}/dimsync/staging`,
      '--state',
      `dynamodb://${table}`,
      '--s3-endpoint-url',
      s3.endpoint,
      '--dynamodb-endpoint-url',
      dynamo.endpoint,
    ]
    const env = {
      ...process.env,
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
    }
    const first = await run(process.execPath, args, { cwd: projectDir, env })
    expect(first.stdout).toMatch(/customers → dim_customer: batch \S+, 2 rows; 2 versions inserted/)
    await writeFile(join(dir, 'data', 'customers.csv'), 'customer_id,name\n1,Ada\n2,Bobby\n')
    const second = await run(process.execPath, args, { cwd: projectDir, env })
    expect(second.stdout).toMatch(/1 versions inserted, 1 closed/)

    const state = new DynamoDbStateStore({ client: dynamo.client, tableName: table })
    const runs = await state.listRuns('customers', 10)
    expect(runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded'])
    // Merged batches are deleted from staging; the lease was released (anyone may take it now).
    expect((await s3.client.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).toEqual([])
    await expect(state.acquireLease('customers', 'someone', 1000, new Date())).resolves.toMatchObject({
      token: 3,
    })
  })

  it('refuses a malformed location naming the option', async () => {
    expect(() => parseStagingLocation('s3://')).toThrow(
      '--staging: expected s3://<bucket>/<prefix> or a local folder, got "s3://"',
    )
    expect(() => parseStagingLocation('gs://bucket/x')).toThrow(/--staging: expected s3:/)
    expect(() => parseStateLocation('dynamodb://a/b')).toThrow(
      '--state: expected dynamodb://<table> or a local folder, got "dynamodb://a/b"',
    )
    expect(parseStagingLocation('s3://my-bucket/a/b/')).toEqual({
      type: 's3',
      bucket: 'my-bucket',
      prefix: 'a/b',
    })
    expect(parseStagingLocation('./staging')).toEqual({ type: 'local', path: './staging' })
    expect(parseStateLocation('dynamodb://dimsync-state')).toEqual({
      type: 'dynamodb',
      table: 'dimsync-state',
    })
  })
})
