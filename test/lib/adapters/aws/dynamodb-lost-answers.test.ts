import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { makeDynamoDbClient } from '../../../../lib/adapters/aws/aws-clients.ts'
import { DynamoDbStateStore } from '../../../../lib/adapters/state/dynamodb-state-store.ts'
import { WatermarkConflictError } from '../../../../lib/core/errors.ts'
import { DYNALITE_CREDENTIALS, startDynalite, type DynaliteHandle } from '../../../support/aws/dynalite.ts'
import { FaultProxy } from '../../../support/faults/fault-proxy.ts'
import { FaultSchedule, type FaultKind } from '../../../support/faults/fault-schedule.ts'

/**
 * DynamoDB calls whose write was applied but whose answer was lost (the connection dropped after the request
 * arrived): the SDK sends the request again, and a conditional write then meets its own first attempt. Found by
 * the chaos test (test/infra/chaos.test.ts, seed 1): a merge whose watermark commit was answered this way failed
 * as WatermarkConflictError although its batch was merged and the watermark it wrote was stored.
 */
let dynamo: DynaliteHandle
beforeAll(async () => {
  dynamo = await startDynalite()
})
afterAll(async () => {
  await dynamo?.stop()
})

/** A state store whose `call` number `n` (`dynamodb UpdateItem`, 1 = the first) is applied and its answer lost. */
async function storeLosingAnswer(call: string, n: number) {
  const scripted = (c: string, i: number): readonly FaultKind[] => (c === call && i === n ? ['drop'] : [])
  const schedule = new FaultSchedule({ seed: 1, rate: 1, policy: scripted })
  const proxy = await FaultProxy.start('dynamodb', dynamo.endpoint, schedule)
  const client = makeDynamoDbClient({
    endpoint: proxy.url,
    region: 'us-east-1',
    credentials: DYNALITE_CREDENTIALS,
  })
  const tableName = await dynamo.createTable()
  const store = new DynamoDbStateStore({ client, tableName })
  const direct = new DynamoDbStateStore({ client: dynamo.client, tableName })
  return {
    store,
    direct,
    schedule,
    async close() {
      client.destroy()
      await proxy.stop()
    },
  }
}

describe('DynamoDbStateStore when an applied write loses its answer', () => {
  it('a watermark commit whose first attempt was applied succeeds (its retry meets its own write)', async () => {
    const { store, direct, schedule, close } = await storeLosingAnswer('dynamodb UpdateItem', 2)
    try {
      const first = { batchId: 'b1', cursor: '10', key: [1] }
      const second = { batchId: 'b2', cursor: '20', key: [2] }
      await store.commitWatermark('customers', first, undefined)
      await store.commitWatermark('customers', second, first)
      expect(schedule.tally().byKind.drop).toBe(1)
      expect(await direct.getWatermark('customers')).toEqual(second)
    } finally {
      await close()
    }
  })

  it('the first watermark of a table, too', async () => {
    const { store, direct, schedule, close } = await storeLosingAnswer('dynamodb UpdateItem', 1)
    try {
      const first = { batchId: 'b1', cursor: '10', key: [1] }
      await store.commitWatermark('customers', first, undefined)
      expect(schedule.tally().byKind.drop).toBe(1)
      expect(await direct.getWatermark('customers')).toEqual(first)
    } finally {
      await close()
    }
  })

  it('a watermark another run moved is still a conflict', async () => {
    const { store, direct, close } = await storeLosingAnswer('none', 0)
    try {
      await direct.commitWatermark('customers', { batchId: 'b1', cursor: '10', key: [1] }, undefined)
      await direct.commitWatermark(
        'customers',
        { batchId: 'b2', cursor: '20', key: [2] },
        { batchId: 'b1', cursor: '10', key: [1] },
      )
      const error = await store
        .commitWatermark(
          'customers',
          { batchId: 'b3', cursor: '30', key: [3] },
          { batchId: 'b1', cursor: '10', key: [1] },
        )
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(WatermarkConflictError)
    } finally {
      await close()
    }
  })
})
