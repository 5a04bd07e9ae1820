import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { LeaseLostError, LockHeldError } from '../../../lib/core/errors.ts'
import {
  assertLeaseHeld,
  isLeaseExpired,
  leaseRefusal,
  renewedLease,
  takenLease,
  type StoredLease,
} from '../../../lib/core/lease.ts'

const T0 = Date.parse('2024-03-01T10:00:00.000Z')
const instant = fc.integer({ min: -120_000, max: 120_000 }).map((offset) => new Date(T0 + offset))
const owner = fc.constantFrom('run-a', 'run-b', 'run-a/extract', 'run-a/merge/1', 'run-ab/extract')
const stored: fc.Arbitrary<StoredLease | undefined> = fc.option(
  fc.record(
    {
      token: fc.nat({ max: 1000 }),
      owner,
      acquiredAt: instant.map((d) => d.toISOString()),
      expiresAt: instant.map((d) => d.toISOString()),
    },
    { requiredKeys: ['token'] },
  ),
  { nil: undefined },
)

describe('lease rules (shared by the local and the DynamoDB state store)', () => {
  it('a lease may be taken exactly when nobody holds it, its holder expired, the taker holds it already, or it was handed over to the run the taker is a step of', () => {
    fc.assert(
      fc.property(stored, owner, instant, (lease, taker, now) => {
        const free =
          lease?.owner === undefined ||
          lease.owner === taker ||
          taker.startsWith(`${lease.owner}/`) ||
          lease.expiresAt === undefined ||
          Date.parse(lease.expiresAt) <= now.getTime()
        const refusal = leaseRefusal('customers', lease, taker, now)
        expect(refusal === undefined).toBe(free)
        if (refusal) {
          expect(refusal).toBeInstanceOf(LockHeldError)
          expect(refusal.message).toBe(
            `table customers is locked by run ${lease!.owner} since ${lease!.acquiredAt ?? 'an unknown time'}`,
          )
        }
      }),
    )
  })

  it('a taken lease has the next fencing token and expires ttl after now; renewing moves only the expiry', () => {
    fc.assert(
      fc.property(stored, owner, instant, fc.integer({ min: 1, max: 600_000 }), (lease, taker, now, ttl) => {
        const taken = takenLease('customers', lease, taker, ttl, now)
        expect(taken.token).toBe((lease?.token ?? 0) + 1)
        expect(Date.parse(taken.expiresAt) - now.getTime()).toBe(ttl)
        expect(isLeaseExpired(taken, now)).toBe(false)
        expect(isLeaseExpired(taken, new Date(now.getTime() + ttl))).toBe(true)
        const later = new Date(now.getTime() + ttl * 2)
        expect(renewedLease(taken, ttl, later)).toEqual({
          ...taken,
          expiresAt: new Date(later.getTime() + ttl).toISOString(),
        })
      }),
    )
  })

  it('a holder may commit only while the stored lease is its own (owner and token) and unexpired', () => {
    const mine = takenLease('customers', { token: 4 }, 'run-a', 60_000, new Date(T0))
    const at = (ms: number) => new Date(T0 + ms)
    expect(() => assertLeaseHeld(mine, mine, at(59_999))).not.toThrow()
    const failure = (storedLease: StoredLease | undefined, now: Date) => {
      try {
        assertLeaseHeld(mine, storedLease, now)
      } catch (error) {
        expect(error).toBeInstanceOf(LeaseLostError)
        return (error as Error).message
      }
      return undefined
    }
    expect(failure(mine, at(60_000))).toBe(
      'table customers: lease of run run-a (token 5) expired at 2024-03-01T10:01:00.000Z',
    )
    expect(failure({ token: 5 }, at(1))).toBe(
      'table customers: lease of run run-a (token 5) was lost: it was released',
    )
    const intruder = takenLease('customers', mine, 'run-b', 60_000, at(61_000))
    expect(failure(intruder, at(61_000))).toBe(
      'table customers: lease of run run-a (token 5) was lost: it is now held by run run-b (token 6) since 2024-03-01T10:01:01.000Z',
    )
  })
})
