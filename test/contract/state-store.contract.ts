import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { DimsyncError, LeaseLostError, LockHeldError } from '../../lib/core/errors.ts'
import type { RunRecord } from '../../lib/core/run-record.ts'
import type { StateStore } from '../../lib/ports/state-store.ts'

export interface StateStoreFixture {
  readonly store: StateStore
  readonly cleanup: () => Promise<void>
}

const TABLE = 'customers'
const T0 = new Date('2024-03-01T10:00:00.000Z')
const TTL = 60_000

function at(ms: number): Date {
  return new Date(T0.getTime() + ms)
}

/**
 * Registers the behaviour every `StateStore` must have. Call once per implementation with a factory that
 * returns a fresh, empty store. Times are passed explicitly (`now`), never read from the clock.
 */
export function describeStateStoreContract(name: string, makeStore: () => Promise<StateStoreFixture>): void {
  describe(`StateStore contract: ${name}`, () => {
    let fixture: StateStoreFixture
    let store: StateStore

    beforeEach(async () => {
      fixture = await makeStore()
      store = fixture.store
    })
    afterEach(async () => {
      await fixture.cleanup()
    })

    describe('source types', () => {
      const first = {
        version: 1 as const,
        columns: [
          { name: 'acct', type: 'DECIMAL(38,0)' },
          { name: 'd', type: 'DATE', format: '%d/%m/%Y' },
        ],
      }

      it('start undefined, read back what was recorded, and are replaced by the next record', async () => {
        expect(await store.getSourceTypes(TABLE)).toBeUndefined()
        await store.recordSourceTypes(TABLE, first)
        expect(await store.getSourceTypes(TABLE)).toEqual(first)
        expect(await store.getSourceTypes('suppliers')).toBeUndefined()
        const next = { version: 1 as const, columns: [...first.columns, { name: 'note', type: 'VARCHAR' }] }
        await store.recordSourceTypes(TABLE, next)
        expect(await store.getSourceTypes(TABLE)).toEqual(next)
      })

      it('leave the watermark and the lease alone', async () => {
        const lease = await store.acquireLease(TABLE, 'run-a', TTL, T0)
        await store.commitWatermark(TABLE, { cursor: 'x', key: [1] }, undefined)
        await store.recordSourceTypes(TABLE, first)
        expect(await store.getWatermark(TABLE)).toEqual({ cursor: 'x', key: [1] })
        await store.assertLeaseHeld(lease, at(1))
      })
    })

    describe('watermarks', () => {
      const w1 = { cursor: '2024-03-01T09:00:00.000001Z', key: [Number.MAX_SAFE_INTEGER, '9007199254740993'] }
      const w2 = { cursor: '2024-03-01T09:30:00.000000Z', key: [12, 'b'] }

      it('starts undefined and stores the first watermark when nothing was expected', async () => {
        expect(await store.getWatermark(TABLE)).toBeUndefined()
        await store.commitWatermark(TABLE, w1, undefined)
        expect(await store.getWatermark(TABLE)).toEqual(w1)
        expect(await store.getWatermark('suppliers')).toBeUndefined()
      })

      it('advances only from the expected watermark (deep equality)', async () => {
        await store.commitWatermark(TABLE, w1, undefined)
        await store.commitWatermark(TABLE, w2, { cursor: w1.cursor, key: [...w1.key] })
        expect(await store.getWatermark(TABLE)).toEqual(w2)
      })

      it('refuses a commit whose expected watermark is stale, naming the table', async () => {
        await store.commitWatermark(TABLE, w1, undefined)
        const stale = store.commitWatermark(TABLE, w2, undefined)
        await expect(stale).rejects.toBeInstanceOf(DimsyncError)
        await expect(store.commitWatermark(TABLE, w2, undefined)).rejects.toThrow(
          /table customers: watermark changed since it was read/,
        )
        await expect(store.commitWatermark(TABLE, w2, { cursor: w1.cursor, key: [1, 'a'] })).rejects.toThrow(
          /watermark changed/,
        )
        expect(await store.getWatermark(TABLE)).toEqual(w1)
      })

      it('numeric cursors round-trip', async () => {
        await store.commitWatermark(TABLE, { cursor: 42, key: [] }, undefined)
        expect(await store.getWatermark(TABLE)).toEqual({ cursor: 42, key: [] })
      })

      it('a watermark keeps the cursor column and the batch that committed it', async () => {
        const named = { ...w1, column: 'updated_at', batchId: '20240301T090000.000Z-aaaaaa' }
        await store.commitWatermark(TABLE, named, undefined)
        expect(await store.getWatermark(TABLE)).toEqual(named)
      })

      it('resetWatermark sets it backwards, or removes it, only from the expected watermark', async () => {
        await store.commitWatermark(TABLE, w2, undefined)
        await expect(store.resetWatermark(TABLE, w1, undefined)).rejects.toThrow(
          /table customers: watermark changed since it was read/,
        )
        expect(await store.getWatermark(TABLE)).toEqual(w2)
        await store.resetWatermark(TABLE, w1, w2)
        expect(await store.getWatermark(TABLE)).toEqual(w1)
        await store.resetWatermark(TABLE, undefined, w1)
        expect(await store.getWatermark(TABLE)).toBeUndefined()
        await store.resetWatermark(TABLE, undefined, undefined)
        await store.commitWatermark(TABLE, w2, undefined)
        expect(await store.getWatermark(TABLE)).toEqual(w2)
      })
    })

    describe('leases', () => {
      it('grants a free lease with a positive token and the requested window', async () => {
        const lease = await store.acquireLease(TABLE, 'run-a', TTL, T0)
        expect(lease).toMatchObject({
          table: TABLE,
          owner: 'run-a',
          acquiredAt: T0.toISOString(),
          expiresAt: at(TTL).toISOString(),
        })
        expect(lease.token).toBeGreaterThan(0)
        await store.assertLeaseHeld(lease, at(1000))
      })

      it('is exclusive: another owner gets LockHeldError naming holder and since', async () => {
        await store.acquireLease(TABLE, 'run-a', TTL, T0)
        const error = await store.acquireLease(TABLE, 'run-b', TTL, at(TTL - 1)).catch((e: unknown) => e)
        expect(error).toBeInstanceOf(LockHeldError)
        expect(error).toMatchObject({
          table: TABLE,
          holder: 'run-a',
          since: T0.toISOString(),
          retryable: true,
        })
        expect((error as Error).message).toBe(
          `table customers is locked by run run-a since ${T0.toISOString()}`,
        )
      })

      it('leases of different tables are independent', async () => {
        await store.acquireLease(TABLE, 'run-a', TTL, T0)
        await expect(store.acquireLease('suppliers', 'run-b', TTL, T0)).resolves.toMatchObject({
          owner: 'run-b',
        })
      })

      it('an expired lease is taken over with a higher token; the old holder can no longer renew or assert', async () => {
        const a = await store.acquireLease(TABLE, 'run-a', TTL, T0)
        const b = await store.acquireLease(TABLE, 'run-b', TTL, at(TTL + 1))
        expect(b.token).toBeGreaterThan(a.token)
        await expect(store.renewLease(a, TTL, at(TTL + 2))).rejects.toBeInstanceOf(LeaseLostError)
        await expect(store.assertLeaseHeld(a, at(TTL + 2))).rejects.toBeInstanceOf(LeaseLostError)
        await store.assertLeaseHeld(b, at(TTL + 2))
        // The loser's release must not free the winner's lease.
        await store.releaseLease(a)
        await expect(store.acquireLease(TABLE, 'run-c', TTL, at(TTL + 3))).rejects.toMatchObject({
          holder: 'run-b',
        })
      })

      it('a lease names the holder that never released the table before it: nobody, another run, or itself', async () => {
        const a = await store.acquireLease(TABLE, 'run-a', TTL, T0)
        expect(a.previousHolder).toBeUndefined()
        await store.releaseLease(a)
        const b = await store.acquireLease(TABLE, 'run-b', TTL, at(1))
        expect(b.previousHolder).toBeUndefined()
        // run-b dies holding the table: its lease expires and is taken over.
        const c = await store.acquireLease(TABLE, 'run-c', TTL, at(TTL + 2))
        expect(c.previousHolder).toBe('run-b')
        // run-c hands the lease over to its own next step, which takes it again (expired or not).
        const again = await store.acquireLease(TABLE, 'run-c', TTL, at(3 * TTL))
        expect(again.previousHolder).toBe('run-c')
        expect(again.token).toBeGreaterThan(c.token)
      })

      it('a lease handed over to its run is taken by a later step of that run, by no other run until it expires', async () => {
        const extract = await store.acquireLease(TABLE, 'run-a/extract', TTL, T0)
        const handedOver = await store.handOverLease(extract, 3 * TTL, at(1000))
        expect(handedOver).toMatchObject({ owner: 'run-a', token: extract.token })
        expect(handedOver.expiresAt).toBe(at(1000 + 3 * TTL).toISOString())
        // The step that handed it over no longer holds it (no commit, no renewal, no release by it).
        await expect(store.assertLeaseHeld(extract, at(2000))).rejects.toBeInstanceOf(LeaseLostError)
        await expect(store.renewLease(extract, TTL, at(2000))).rejects.toBeInstanceOf(LeaseLostError)
        await store.releaseLease(extract)
        // Past the step's own TTL, another run (or another run's step) is still refused, naming the run.
        for (const other of ['run-b', 'run-b/extract', 'run-ab/merge/1'])
          await expect(store.acquireLease(TABLE, other, TTL, at(2 * TTL))).rejects.toMatchObject({
            name: 'LockHeldError',
            holder: 'run-a',
          })
        const merge = await store.acquireLease(TABLE, 'run-a/merge/1', TTL, at(2 * TTL))
        expect(merge).toMatchObject({ owner: 'run-a/merge/1', previousHolder: 'run-a' })
        expect(merge.token).toBeGreaterThan(extract.token)
        // Held by a step again: another invocation of the same step is refused while it runs.
        await expect(store.acquireLease(TABLE, 'run-a/merge/2', TTL, at(2 * TTL + 1))).rejects.toMatchObject({
          holder: 'run-a/merge/1',
        })
        // Handed over again (a retry follows), and not taken by anyone: it expires, then any run may take it.
        const again = await store.handOverLease(merge, TTL, at(2 * TTL + 2))
        await expect(store.acquireLease(TABLE, 'run-b', TTL, at(3 * TTL + 1))).rejects.toBeInstanceOf(
          LockHeldError,
        )
        const b = await store.acquireLease(TABLE, 'run-b', TTL, at(3 * TTL + 3))
        expect(b).toMatchObject({ owner: 'run-b', previousHolder: 'run-a' })
        // A step whose lease was taken over cannot hand it over any more.
        await expect(store.handOverLease(again, TTL, at(3 * TTL + 4))).rejects.toBeInstanceOf(LeaseLostError)
        await expect(store.handOverLease(merge, TTL, at(3 * TTL + 4))).rejects.toThrow(
          /lease of run run-a\/merge\/1 \(token \d+\) was lost: it is now held by run run-b/,
        )
      })

      it('renewing extends the lease and keeps the token', async () => {
        const a = await store.acquireLease(TABLE, 'run-a', TTL, T0)
        const renewed = await store.renewLease(a, TTL, at(TTL - 1000))
        expect(renewed).toMatchObject({ owner: 'run-a', token: a.token, acquiredAt: a.acquiredAt })
        expect(renewed.expiresAt).toBe(at(2 * TTL - 1000).toISOString())
        await expect(store.acquireLease(TABLE, 'run-b', TTL, at(TTL + 1))).rejects.toBeInstanceOf(
          LockHeldError,
        )
        await store.assertLeaseHeld(renewed, at(TTL + 1))
      })

      it('assertLeaseHeld fails once the lease expired, even before anyone takes it over', async () => {
        const a = await store.acquireLease(TABLE, 'run-a', TTL, T0)
        await expect(store.assertLeaseHeld(a, at(TTL + 1))).rejects.toBeInstanceOf(LeaseLostError)
      })

      it('release frees the lease, is safe twice, and the token keeps rising', async () => {
        const a = await store.acquireLease(TABLE, 'run-a', TTL, T0)
        await store.releaseLease(a)
        await store.releaseLease(a)
        await expect(store.assertLeaseHeld(a, at(1))).rejects.toBeInstanceOf(LeaseLostError)
        await expect(store.renewLease(a, TTL, at(1))).rejects.toBeInstanceOf(LeaseLostError)
        const b = await store.acquireLease(TABLE, 'run-b', TTL, at(2))
        expect(b.token).toBeGreaterThan(a.token)
        await store.releaseLease(b)
        const c = await store.acquireLease(TABLE, 'run-c', TTL, at(3))
        expect(c.token).toBeGreaterThan(b.token)
      })

      it('renew after a takeover fails with LeaseLostError naming the table', async () => {
        const a = await store.acquireLease(TABLE, 'run-a', 1000, T0)
        await store.acquireLease(TABLE, 'run-b', TTL, at(5000))
        const error = await store.renewLease(a, TTL, at(5001)).catch((e: unknown) => e)
        expect(error).toBeInstanceOf(LeaseLostError)
        expect(error).toMatchObject({ table: TABLE })
        expect((error as Error).message).toMatch(/customers/)
      })
    })

    describe('runs', () => {
      const run = (runId: string, startedAt: string, extra: Partial<RunRecord> = {}): RunRecord => ({
        runId,
        table: TABLE,
        status: 'running',
        startedAt,
        ...extra,
      })

      it('lists runs most recent first, up to the limit, per table', async () => {
        await store.recordRun(run('r2', '2024-03-01T10:00:00.000200Z'))
        await store.recordRun(run('r1', '2024-03-01T10:00:00.000100Z'))
        await store.recordRun(run('r3', '2024-03-02T00:00:00.000Z'))
        await store.recordRun({ ...run('s1', '2030-01-01T00:00:00.000Z'), table: 'suppliers' })
        expect((await store.listRuns(TABLE, 10)).map((r) => r.runId)).toEqual(['r3', 'r2', 'r1'])
        expect((await store.listRuns(TABLE, 2)).map((r) => r.runId)).toEqual(['r3', 'r2'])
        expect(await store.listRuns('nobody', 5)).toEqual([])
      })

      it('replaces the record with the same runId', async () => {
        await store.recordRun(run('r1', '2024-03-01T10:00:00.000Z'))
        const finished = run('r1', '2024-03-01T10:00:00.000Z', {
          status: 'succeeded',
          finishedAt: '2024-03-01T10:01:00.000Z',
          batchId: 'b1',
          rowsExtracted: 3,
          counts: {
            events: 3,
            insertedVersions: 2,
            closedVersions: 1,
            deletedKeys: 0,
            unchangedEvents: 1,
            lateKeys: 0,
          },
        })
        await store.recordRun(finished)
        expect(await store.listRuns(TABLE, 10)).toEqual([finished])
      })
    })
  })
}
