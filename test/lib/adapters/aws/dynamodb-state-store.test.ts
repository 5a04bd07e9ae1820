import { GetItemCommand } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { WatermarkConflictError } from '../../../../lib/core/errors.ts'
import { DynamoDbStateStore } from '../../../../lib/adapters/state/dynamodb-state-store.ts'
import { LockHeldError } from '../../../../lib/core/errors.ts'
import { describeStateStoreContract } from '../../../contract/state-store.contract.ts'
import { startDynalite, type DynaliteHandle } from '../../../support/aws/dynalite.ts'

let dynamo: DynaliteHandle
beforeAll(async () => {
  dynamo = await startDynalite()
})
afterAll(async () => {
  await dynamo?.stop()
})

describeStateStoreContract('dynamodb (dynalite)', async () => {
  const tableName = await dynamo.createTable()
  return { store: new DynamoDbStateStore({ client: dynamo.client, tableName }), cleanup: async () => {} }
})

describe('DynamoDbStateStore (dynamodb specifics, dynalite)', () => {
  it('refuses to move a watermark backwards, with a WatermarkConflictError naming both', async () => {
    const store = new DynamoDbStateStore({ client: dynamo.client, tableName: await dynamo.createTable() })
    const w2 = { cursor: '2024-03-01T10:00:00.000002Z', key: [5] }
    await store.commitWatermark('customers', w2, undefined)
    const back = { cursor: '2024-03-01T10:00:00.000001Z', key: [9] }
    const error = await store.commitWatermark('customers', back, w2).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WatermarkConflictError)
    expect((error as Error).message).toBe(
      'table customers: refusing to move the watermark backwards from ' +
        '{"cursor":"2024-03-01T10:00:00.000002Z","key":[5]} to {"cursor":"2024-03-01T10:00:00.000001Z","key":[9]}',
    )
    // Same cursor, higher key: forward. Big integers as strings compare as numbers, not text.
    await store.commitWatermark('customers', { cursor: w2.cursor, key: [6] }, w2)
    await store.commitWatermark('n', { cursor: '9', key: [] }, undefined)
    await store.commitWatermark('n', { cursor: '10', key: [] }, { cursor: '9', key: [] })
    expect(await store.getWatermark('n')).toEqual({ cursor: '10', key: [] })
  })

  it('release keeps the item and its token; run records carry a TTL attribute', async () => {
    const tableName = await dynamo.createTable()
    const store = new DynamoDbStateStore({
      client: dynamo.client,
      tableName,
      runTtlDays: 30,
      clock: () => new Date('2024-01-01T00:00:00Z'),
    })
    const lease = await store.acquireLease('customers', 'run-a', 60_000, new Date('2024-01-01T00:00:00Z'))
    await store.releaseLease(lease)
    const item = await dynamo.client.send(
      new GetItemCommand({ TableName: tableName, Key: { pk: { S: 'TABLE#customers' }, sk: { S: 'LEASE' } } }),
    )
    expect(item.Item).toEqual({ pk: { S: 'TABLE#customers' }, sk: { S: 'LEASE' }, token: { N: '1' } })

    await store.recordRun({
      runId: 'r1',
      table: 'customers',
      status: 'running',
      startedAt: '2024-01-01T00:00:00Z',
    })
    // A re-dated record of the same run replaces the old one.
    await store.recordRun({
      runId: 'r1',
      table: 'customers',
      status: 'failed',
      startedAt: '2024-01-02T00:00:00Z',
    })
    const runs = await store.listRuns('customers', 10)
    expect(runs).toEqual([
      { runId: 'r1', table: 'customers', status: 'failed', startedAt: '2024-01-02T00:00:00Z' },
    ])
    const pointer = await dynamo.client.send(
      new GetItemCommand({
        TableName: tableName,
        Key: { pk: { S: 'RUNS#customers' }, sk: { S: 'RUNID#r1' } },
      }),
    )
    expect(pointer.Item?.expiresAt?.N).toBe(String(Date.parse('2024-01-31T00:00:00Z') / 1000))
  })

  it('many stores racing for one lease: exactly one wins, tokens never repeat', async () => {
    const tableName = await dynamo.createTable()
    const stores = Array.from(
      { length: 8 },
      () => new DynamoDbStateStore({ client: dynamo.client, tableName }),
    )
    const now = new Date()
    const results = await Promise.allSettled(
      stores.map((s, i) => s.acquireLease('customers', `run-${i}`, 60_000, now)),
    )
    const won = results.filter((r) => r.status === 'fulfilled')
    expect(won).toHaveLength(1)
    for (const lost of results.filter((r) => r.status === 'rejected')) {
      expect((lost as PromiseRejectedResult).reason).toBeInstanceOf(LockHeldError)
    }
  })

  it('a missing state table is a clear error naming it', async () => {
    const store = new DynamoDbStateStore({ client: dynamo.client, tableName: 'no-such-table' })
    await expect(store.getWatermark('customers')).rejects.toThrow(
      /table customers: reading the watermark in dynamodb:\/\/no-such-table: ResourceNotFoundException/,
    )
  })
})
