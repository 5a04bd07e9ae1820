import { isDeepStrictEqual } from 'node:util'

import type { Watermark } from '../../core/batch.ts'
import { DimsyncError, WatermarkConflictError } from '../../core/errors.ts'
import { instantSortKey } from '../../core/instant.ts'
import {
  assertLeaseHeld,
  handedOverLease,
  isSameLease,
  leaseLostError,
  leaseRefusal,
  renewedLease,
  takenLease,
  type Lease,
  type StoredLease,
} from '../../core/lease.ts'
import type { RunRecord } from '../../core/run-record.ts'
import type { SourceTypes } from '../../core/source-types.ts'
import type { StateStore } from '../../ports/state-store.ts'

/** What the store keeps of one table. */
interface TableState {
  watermark?: Watermark
  lease?: StoredLease
  sourceTypes?: SourceTypes
  readonly runs: Map<string, RunRecord>
}

/**
 * State held in this process only, for tests of the use-cases that need no files: the lease rules are those of
 * lib/core/lease.ts, as in the folder and DynamoDB stores. Every read and write is a copy (as a store that
 * serializes would give), so a caller that changes what it passed in or got back changes nothing stored. Each
 * method does its whole read-modify-write without awaiting in between, which makes it atomic in one process.
 */
export class MemoryStateStore implements StateStore {
  readonly #tables = new Map<string, TableState>()

  async getWatermark(table: string): Promise<Watermark | undefined> {
    return copy(this.#tables.get(table)?.watermark)
  }

  async commitWatermark(table: string, next: Watermark, expected: Watermark | undefined): Promise<void> {
    const state = this.#table(table)
    assertExpectedWatermark(table, state.watermark, expected)
    state.watermark = copy(next)
  }

  async resetWatermark(
    table: string,
    next: Watermark | undefined,
    expected: Watermark | undefined,
  ): Promise<void> {
    const state = this.#table(table)
    assertExpectedWatermark(table, state.watermark, expected)
    state.watermark = copy(next)
  }

  async acquireLease(table: string, owner: string, ttlMs: number, now: Date): Promise<Lease> {
    const state = this.#table(table)
    const refusal = leaseRefusal(table, state.lease, owner, now)
    if (refusal !== undefined) throw refusal
    const lease = takenLease(table, state.lease, owner, ttlMs, now)
    state.lease = storedOf(lease)
    return lease
  }

  async renewLease(lease: Lease, ttlMs: number, now: Date): Promise<Lease> {
    return this.#replaceHeld(lease, renewedLease(lease, ttlMs, now))
  }

  async handOverLease(lease: Lease, ttlMs: number, now: Date): Promise<Lease> {
    return this.#replaceHeld(lease, handedOverLease(lease, ttlMs, now))
  }

  /** Stores `next` in place of `lease` if that is still the held one; else `LeaseLostError`. */
  #replaceHeld(lease: Lease, next: Lease): Lease {
    const state = this.#table(lease.table)
    if (!isSameLease(lease, state.lease)) throw leaseLostError(lease, state.lease)
    state.lease = storedOf(next)
    return next
  }

  async assertLeaseHeld(lease: Lease, now: Date): Promise<void> {
    assertLeaseHeld(lease, this.#tables.get(lease.table)?.lease, now)
  }

  async releaseLease(lease: Lease): Promise<void> {
    const state = this.#table(lease.table)
    if (isSameLease(lease, state.lease)) state.lease = { token: state.lease!.token }
  }

  async recordRun(run: RunRecord): Promise<void> {
    if (instantSortKey(run.startedAt) === undefined) {
      throw new DimsyncError(
        `table ${run.table}: run ${run.runId}: startedAt ${JSON.stringify(run.startedAt)} is not an ISO instant`,
      )
    }
    this.#table(run.table).runs.set(run.runId, copy(run))
  }

  /** Most recent `startedAt` first (to the microsecond), then by runId, as the folder store orders them. */
  async listRuns(table: string, limit: number): Promise<readonly RunRecord[]> {
    const runs = [...(this.#tables.get(table)?.runs.values() ?? [])]
    const order = (run: RunRecord) => `${instantSortKey(run.startedAt)}_${run.runId}`
    return runs
      .sort((a, b) => (order(a) < order(b) ? 1 : order(a) > order(b) ? -1 : 0))
      .slice(0, Math.max(0, limit))
      .map(copy)
  }

  async getSourceTypes(table: string): Promise<SourceTypes | undefined> {
    return copy(this.#tables.get(table)?.sourceTypes)
  }

  async recordSourceTypes(table: string, types: SourceTypes): Promise<void> {
    this.#table(table).sourceTypes = copy(types)
  }

  #table(table: string): TableState {
    let state = this.#tables.get(table)
    if (state === undefined) {
      state = { runs: new Map() }
      this.#tables.set(table, state)
    }
    return state
  }
}

/** Throws `WatermarkConflictError` unless the stored watermark equals `expected` (as JSON: undefined fields aside). */
function assertExpectedWatermark(
  table: string,
  found: Watermark | undefined,
  expected: Watermark | undefined,
): void {
  if (isDeepStrictEqual(copy(found), copy(expected))) return
  throw new WatermarkConflictError(
    table,
    `table ${table}: watermark changed since it was read ` +
      `(expected ${describeJson(expected)}, found ${describeJson(found)})`,
  )
}

function storedOf(lease: Lease): StoredLease {
  const { token, owner, acquiredAt, expiresAt } = lease
  return { token, owner, acquiredAt, expiresAt }
}

/** A copy through JSON, as the other stores keep their values: fields set to undefined are dropped. */
function copy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T)
}

function describeJson(value: unknown): string {
  return value === undefined ? 'none' : JSON.stringify(value)
}
