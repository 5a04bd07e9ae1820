import { describe, expect, it } from 'vitest'

import { MemoryStateStore } from '../../../../lib/adapters/state/memory-state-store.ts'
import { describeStateStoreContract } from '../../../contract/state-store.contract.ts'

describeStateStoreContract('in memory', async () => ({
  store: new MemoryStateStore(),
  cleanup: async () => {},
}))

describe('MemoryStateStore keeps copies', () => {
  it('changing what was committed, recorded or read back changes nothing stored', async () => {
    const store = new MemoryStateStore()
    const watermark = { cursor: 'a', key: [1] }
    await store.commitWatermark('customers', watermark, undefined)
    watermark.key.push(2)
    const read = await store.getWatermark('customers')
    ;(read!.key as unknown[]).push(3)
    expect(await store.getWatermark('customers')).toEqual({ cursor: 'a', key: [1] })

    const run = {
      runId: 'r1',
      table: 'customers',
      status: 'running' as const,
      startedAt: '2024-03-01T10:00:00Z',
    }
    await store.recordRun(run)
    const [listed] = await store.listRuns('customers', 1)
    ;(listed as { status: string }).status = 'failed'
    expect((await store.listRuns('customers', 1))[0]).toEqual(run)
  })

  it('refuses a run record whose startedAt is not an instant, naming the table and run', async () => {
    const store = new MemoryStateStore()
    await expect(
      store.recordRun({ runId: 'r1', table: 'customers', status: 'running', startedAt: 'yesterday' }),
    ).rejects.toThrow(/table customers: run r1: startedAt "yesterday" is not an ISO instant/)
  })
})
