import { LeaseLostError } from '../core/errors.ts'
import type { Lease } from '../core/lease.ts'
import type { StateStore } from '../ports/state-store.ts'

/**
 * A lease held while a long step runs: renewed every third of its TTL in the background. A failed renewal
 * (taken over after a pause) is remembered, and `assertHeld` then fails at once; otherwise `assertHeld` asks
 * the store (fencing token and expiry), which is what a step calls just before it commits anything.
 */
export class HeldLease {
  readonly #state: StateStore
  readonly #clock: () => Date
  readonly #ttlMs: number
  readonly #timer: NodeJS.Timeout
  #lease: Lease
  #lost: Error | undefined
  #released = false

  private constructor(state: StateStore, lease: Lease, ttlMs: number, clock: () => Date) {
    this.#state = state
    this.#lease = lease
    this.#ttlMs = ttlMs
    this.#clock = clock
    this.#timer = setInterval(() => void this.renew().catch(() => undefined), Math.max(50, ttlMs / 3))
    // A pending renewal must not keep a CLI process (or a Lambda invocation) alive.
    this.#timer.unref()
  }

  /** Takes the table's lease (`LockHeldError` when another run holds it) and starts renewing it. */
  static async acquire(
    state: StateStore,
    table: string,
    owner: string,
    ttlMs: number,
    clock: () => Date,
  ): Promise<HeldLease> {
    const lease = await state.acquireLease(table, owner, ttlMs, clock())
    return new HeldLease(state, lease, ttlMs, clock)
  }

  /** The lease as last acquired or renewed (its token is the fencing token of this run). */
  get current(): Lease {
    return this.#lease
  }

  /**
   * Renews now, for `ttlMs` (default: the TTL it was taken with). A `LeaseLostError` is remembered (and
   * rethrown): the run must not commit anything after it.
   */
  async renew(ttlMs = this.#ttlMs): Promise<Lease> {
    if (this.#released) return this.#lease
    if (this.#lost) throw this.#lost
    try {
      this.#lease = await this.#state.renewLease(this.#lease, ttlMs, this.#clock())
      return this.#lease
    } catch (error) {
      if (error instanceof LeaseLostError) this.#lost = error
      throw error
    }
  }

  /** Throws `LeaseLostError` unless the lease is still ours and unexpired (fencing check before a commit). */
  async assertHeld(): Promise<void> {
    if (this.#lost) throw this.#lost
    await this.#state.assertLeaseHeld(this.#lease, this.#clock())
  }

  /**
   * Renews the lease a last time and stops renewing it without releasing it: the next pass of a multi-pass
   * extract takes it over (same owner), and no other run of the table starts in between. Should that pass never
   * come, the lease simply expires, after `ttlMs` (default: the TTL it was taken with): long enough to cover
   * the wait before the next pass.
   */
  async handOver(ttlMs?: number): Promise<void> {
    await this.renew(ttlMs)
    clearInterval(this.#timer)
    this.#released = true
  }

  /**
   * Hands the lease over to this run (`StateStore.handOverLease`) until `ttlMs` from now and stops renewing it:
   * a later step of the run (the merge after the extract, the retry of a failed merge) takes it, and no other
   * run in between. Should no step come, the lease expires. When handing over fails, `release` still releases.
   */
  async handOverToRun(ttlMs: number): Promise<void> {
    if (this.#lost) throw this.#lost
    if (this.#released) return
    clearInterval(this.#timer)
    this.#lease = await this.#state.handOverLease(this.#lease, ttlMs, this.#clock())
    this.#released = true
  }

  /** Stops renewing and releases the lease (keeps the token counter). Safe twice; never throws. */
  async release(): Promise<void> {
    clearInterval(this.#timer)
    if (this.#released) return
    this.#released = true
    await this.#state.releaseLease(this.#lease).catch(() => undefined)
  }
}
