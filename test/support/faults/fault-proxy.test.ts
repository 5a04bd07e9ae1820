import { GetItemCommand } from '@aws-sdk/client-dynamodb'
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { makeDynamoDbClient, makeS3Client } from '../../../lib/adapters/aws/aws-clients.ts'
import { DYNALITE_CREDENTIALS, startDynalite, type DynaliteHandle } from '../aws/dynalite.ts'
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../aws/s3rver.ts'
import { FaultProxy } from './fault-proxy.ts'
import { FaultSchedule, type FaultKind } from './fault-schedule.ts'

describe('FaultSchedule', () => {
  const calls = ['s3 PutObject', 'dynamodb GetItem', 's3 PutObject', 'bigquery jobs.get', 's3 PutObject']
  const decisions = (seed: number, order = calls) => {
    const schedule = new FaultSchedule({ seed, rate: 0.5, policy: () => ['error', 'drop', 'delay'] })
    return order.map((call) => [call, schedule.next(call)] as const)
  }

  it('the same seed replays the same faults, also when calls of other kinds interleave differently', () => {
    expect(decisions(7)).toEqual(decisions(7))
    const reordered = [
      'dynamodb GetItem',
      's3 PutObject',
      'bigquery jobs.get',
      's3 PutObject',
      's3 PutObject',
    ]
    const byCall = (list: readonly (readonly [string, unknown])[]) =>
      ['s3 PutObject', 'dynamodb GetItem', 'bigquery jobs.get'].map((c) =>
        list.filter(([call]) => call === c).map(([, d]) => d),
      )
    expect(byCall(decisions(7, reordered))).toEqual(byCall(decisions(7)))
    const many = (seed: number) => {
      const schedule = new FaultSchedule({ seed, rate: 0.5, policy: () => ['error', 'drop'] })
      return Array.from({ length: 50 }, () => schedule.next('s3 GetObject').kind)
    }
    expect(many(1)).not.toEqual(many(2))
  })

  it('meets faults at about its rate, only of the kinds its policy allows; disabled, it passes and counts nothing', () => {
    const schedule = new FaultSchedule({
      seed: 3,
      rate: 0.2,
      policy: (call) => (call === 'quiet' ? [] : ['throttle']),
    })
    for (let i = 0; i < 1000; i++) schedule.next('loud')
    for (let i = 0; i < 100; i++) schedule.next('quiet')
    const tally = schedule.tally()
    expect(tally.calls).toBe(1100)
    expect(tally.byKind.throttle).toBeGreaterThan(150)
    expect(tally.byKind.throttle).toBeLessThan(250)
    expect(tally.byKind.error + tally.byKind.drop + tally.byKind.timeout + tally.byKind.delay).toBe(0)
    expect(tally.byCall.quiet).toEqual({ pass: 100 })
    schedule.enabled = false
    expect(schedule.next('loud')).toEqual({ kind: 'pass' })
    expect(schedule.tally().calls).toBe(1100)
  })
})

describe('FaultProxy answers as the services do: the SDKs retry its faults', () => {
  let s3: S3rverHandle
  let dynamo: DynaliteHandle
  beforeAll(async () => {
    ;[s3, dynamo] = await Promise.all([startS3rver(), startDynalite()])
  })
  afterAll(async () => {
    await Promise.all([s3?.stop(), dynamo?.stop()])
  })

  /** A schedule that gives the first call of each kind `kind`, and passes the rest. */
  const firstCalls = (kind: FaultKind) =>
    new FaultSchedule({ seed: 1, rate: 1, policy: (_call, n) => (n === 1 ? [kind] : []) })

  for (const kind of ['error', 'throttle', 'timeout', 'drop', 'delay'] as const) {
    it(`${kind}: S3 and DynamoDB calls succeed after the SDK's retry`, async () => {
      const schedule = firstCalls(kind)
      const s3Proxy = await FaultProxy.start('s3', s3.endpoint, schedule)
      const dynamoProxy = await FaultProxy.start('dynamodb', dynamo.endpoint, schedule)
      const s3Client = makeS3Client({
        endpoint: s3Proxy.url,
        region: 'us-east-1',
        credentials: S3RVER_CREDENTIALS,
        forcePathStyle: true,
        checksums: 'when-required',
      })
      const dynamoClient = makeDynamoDbClient({
        endpoint: dynamoProxy.url,
        region: 'us-east-1',
        credentials: DYNALITE_CREDENTIALS,
      })
      try {
        const bucket = await s3.createBucket('proxy')
        const table = await dynamo.createTable('proxy')
        await s3Client.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: 'hello' }))
        const got = await s3Client.send(new GetObjectCommand({ Bucket: bucket, Key: 'a.txt' }))
        expect(await got.Body!.transformToString()).toBe('hello')
        const item = await dynamoClient.send(
          new GetItemCommand({ TableName: table, Key: { pk: { S: 'x' }, sk: { S: 'y' } } }),
        )
        expect(item.Item).toBeUndefined()
        expect(schedule.tally().byKind[kind]).toBe(3)
        expect(s3Proxy.calls.filter((c) => c.kind === kind).map((c) => c.call)).toEqual([
          's3 PutObject',
          's3 GetObject',
        ])
      } finally {
        s3Client.destroy()
        dynamoClient.destroy()
        await Promise.all([s3Proxy.stop(), dynamoProxy.stop()])
      }
    })
  }
})
