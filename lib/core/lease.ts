import { LeaseLostError, LockHeldError } from './errors.ts'

/**
 * The rules of a table's lease, the same for every state store (a local file, a DynamoDB item): when it is
 * expired, who may take it, when a holder has lost it and what each refusal says. A store only reads and writes
 * the lease atomically; DynamoDB also states the acquire rule as its write condition.
 */

/** A held table lock. `token` is a fencing token: it only grows, across owners and releases. */
export interface Lease {
  readonly table: string
  readonly owner: string
  readonly token: number
  readonly acquiredAt: string
  readonly expiresAt: string
  /**
   * Set by `acquireLease` when the table's lease had not been released: the owner that held it (its lease
   * expired, or its process died, so it was taken over), or this owner itself (a step taking the lease its
   * earlier step handed over). Undefined when the table was free.
   */
  readonly previousHolder?: string
}

/** The lease as a store keeps it; a released lease has no owner but keeps its token. */
export interface StoredLease {
  readonly token: number
  readonly owner?: string
  readonly acquiredAt?: string
  readonly expiresAt?: string
}

/** Expired at `now` (a lease without a valid expiry counts as expired). */
export function isLeaseExpired(stored: StoredLease, now: Date): boolean {
  const expiresAt = stored.expiresAt === undefined ? Number.NaN : Date.parse(stored.expiresAt)
  return !(expiresAt > now.getTime())
}

/**
 * The run an owner belongs to: the owner itself, or what comes before the step it names (`run-…/merge/…`).
 * A lease whose owner is a run (no step) was handed over to that run: it waits for the run's next step.
 */
export function runOfOwner(owner: string): string {
  const slash = owner.indexOf('/')
  return slash < 0 ? owner : owner.slice(0, slash)
}

/**
 * The refusal for `owner` taking the lease at `now`, or undefined when it may: nobody holds it, its holder's
 * lease expired, it is `owner`'s already (a later pass of the same run), or it was handed over to `owner`'s run
 * (`handedOverLease`: a later step of the run takes it).
 */
export function leaseRefusal(
  table: string,
  stored: StoredLease | undefined,
  owner: string,
  now: Date,
): LockHeldError | undefined {
  if (stored?.owner === undefined || stored.owner === owner || isLeaseExpired(stored, now)) return undefined
  if (stored.owner === runOfOwner(owner)) return undefined
  return new LockHeldError(table, stored.owner, stored.acquiredAt ?? 'an unknown time')
}

/**
 * The lease `owner` takes at `now` for `ttlMs`: the next fencing token after the stored one, and the stored
 * lease's owner as the previous holder when it was not released.
 */
export function takenLease(
  table: string,
  stored: StoredLease | undefined,
  owner: string,
  ttlMs: number,
  now: Date,
): Lease {
  return {
    table,
    owner,
    token: (stored?.token ?? 0) + 1,
    acquiredAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + ttlMs).toISOString(),
    ...(stored?.owner !== undefined ? { previousHolder: stored.owner } : {}),
  }
}

/** `lease` extended to `now + ttlMs`. */
export function renewedLease(lease: Lease, ttlMs: number, now: Date): Lease {
  return { ...lease, expiresAt: new Date(now.getTime() + ttlMs).toISOString() }
}

/**
 * `lease` handed over to its run until `now + ttlMs`: held by the run itself (no step runs), which only a step of
 * the same run may take (`leaseRefusal`); the fencing token stays, the next step's acquire raises it.
 */
export function handedOverLease(lease: Lease, ttlMs: number, now: Date): Lease {
  return {
    ...lease,
    owner: runOfOwner(lease.owner),
    expiresAt: new Date(now.getTime() + ttlMs).toISOString(),
  }
}

/** Whether `stored` is still `lease` (same owner and fencing token): not released, not taken over. */
export function isSameLease(lease: Lease, stored: StoredLease | undefined): boolean {
  return stored?.owner === lease.owner && stored.token === lease.token
}

/** The refusal of a holder whose lease was released or taken over, naming the new holder. */
export function leaseLostError(lease: Lease, stored: StoredLease | undefined): LeaseLostError {
  const now =
    stored?.owner === undefined
      ? 'it was released'
      : `it is now held by run ${stored.owner} (token ${stored.token}) since ${stored.acquiredAt}`
  return new LeaseLostError(
    lease.table,
    `table ${lease.table}: lease of run ${lease.owner} (token ${lease.token}) was lost: ${now}`,
  )
}

/**
 * Throws `LeaseLostError` unless `stored` is still `lease` and unexpired at `now`: a step must not commit on an
 * expired lease, which another run may take at any moment.
 */
export function assertLeaseHeld(lease: Lease, stored: StoredLease | undefined, now: Date): void {
  if (!isSameLease(lease, stored)) throw leaseLostError(lease, stored)
  if (isLeaseExpired(stored!, now)) {
    throw new LeaseLostError(
      lease.table,
      `table ${lease.table}: lease of run ${lease.owner} (token ${lease.token}) expired at ${stored!.expiresAt}`,
    )
  }
}
