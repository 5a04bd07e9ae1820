import { beforeEach, describe, expect, it } from 'vitest'
import { MemoryStateStore } from '../../../lib/adapters/state/memory-state-store.ts'
import { LockHeldError } from '../../../lib/core/errors.ts'
import type { RunEvent } from '../../../lib/use-cases/run-event.ts'
import { inTableRun, type TableRunDeps } from '../../../lib/use-cases/table-run.ts'

let state: MemoryStateStore
let events: RunEvent[]
let deps: TableRunDeps
const T0 = new Date('2024-03-01T10:00:00.000Z')

// The state store in memory: every store keeps the same contract (test/contract/state-store.contract.ts).
beforeEach(() => {
  state = new MemoryStateStore()
  events = []
  deps = { state, clock: () => T0, onEvent: (event) => events.push(event) }
})

const request = { table: 'customers', runId: 'run-a', leaseTtlMs: 60_000 }

describe('inTableRun (lock, record, work, record the failure, release) on a state store', () => {
  it('a failing step is recorded as failed with everything the run had recorded, and the lease is released', async () => {
    const failure = new Error('source went away')
    const outcome = await inTableRun(
      deps,
      { ...request, startedAt: '2024-03-01T09:00:00.000Z' },
      async (run) => {
        await run.record({ status: 'running', batchId: 'b1', rowsExtracted: 7 })
        throw failure
      },
    ).catch((e: unknown) => e)
    expect(outcome).toBe(failure)
    expect(await state.listRuns('customers', 5)).toEqual([
      {
        runId: 'run-a',
        table: 'customers',
        startedAt: '2024-03-01T09:00:00.000Z',
        status: 'failed',
        finishedAt: T0.toISOString(),
        batchId: 'b1',
        rowsExtracted: 7,
        error: 'source went away',
      },
    ])
    expect(events.map((e) => e.step)).toEqual(['lock', 'record', 'record', 'failed'])
    expect(events.at(-1)).toMatchObject({ step: 'failed', runId: 'run-a', error: failure })
    const next = await state.acquireLease('customers', 'run-b', 60_000, T0)
    expect(next.owner).toBe('run-b')
  })

  it('a run that is not recorded (a dry run) writes no record, not even its failure', async () => {
    await inTableRun(deps, { ...request, recorded: false }, async (run) => {
      await run.record({ status: 'running' })
      throw new Error('refused')
    }).catch(() => undefined)
    expect(await state.listRuns('customers', 5)).toEqual([])
    expect(events.map((e) => e.step)).toEqual(['lock', 'failed'])
  })

  it('a run on a locked table fails before its work runs and records nothing', async () => {
    await state.acquireLease('customers', 'run-other', 60_000, T0)
    let worked = false
    const error = await inTableRun(deps, request, async () => {
      worked = true
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockHeldError)
    expect(worked).toBe(false)
    expect(events).toEqual([])
    expect(await state.listRuns('customers', 5)).toEqual([])
  })

  it('a handed-over lease stays held after the step: another run is refused, the same owner continues', async () => {
    await inTableRun(deps, { ...request, owner: 'run-a/extract' }, (run) => run.handOver())
    await expect(state.acquireLease('customers', 'run-b', 60_000, T0)).rejects.toBeInstanceOf(LockHeldError)
    const again = await inTableRun(
      deps,
      { ...request, owner: 'run-a/extract' },
      async (run) => run.lease.current,
    )
    expect(again.owner).toBe('run-a/extract')
    expect(await state.acquireLease('customers', 'run-b', 60_000, T0)).toMatchObject({ owner: 'run-b' })
  })

  it('a later step continues the record of an earlier one: its start and counts are kept, its error cleared', async () => {
    await inTableRun(deps, { ...request, startedAt: '2024-03-01T09:00:00.000Z', batchId: 'b1' }, (run) =>
      run.record({ status: 'running', rowsExtracted: 3 }),
    )
    const [earlier] = await state.listRuns('customers', 1)
    await inTableRun(
      deps,
      { ...request, startedAt: '2024-03-01T09:59:00.000Z', batchId: 'b1' },
      async (run) => {
        run.adopt({ ...earlier!, error: 'an earlier attempt failed' })
        run.assumeStartedAt('2000-01-01T00:00:00.000Z')
        await run.record({ status: 'succeeded', finishedAt: T0.toISOString(), error: undefined })
      },
    )
    expect(await state.listRuns('customers', 1)).toEqual([
      {
        runId: 'run-a',
        table: 'customers',
        startedAt: '2024-03-01T09:00:00.000Z',
        batchId: 'b1',
        rowsExtracted: 3,
        status: 'succeeded',
        finishedAt: T0.toISOString(),
      },
    ])
  })

  it('a run whose start nobody knew is dated by the first record that needs it', async () => {
    await inTableRun(deps, request, async (run) => {
      run.assumeStartedAt('2024-02-29T23:00:00.000Z')
      await run.record({ status: 'running' })
    })
    expect((await state.listRuns('customers', 1))[0]).toMatchObject({ startedAt: '2024-02-29T23:00:00.000Z' })
  })
})
