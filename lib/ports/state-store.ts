import type { Watermark } from '../core/batch.ts'
import type { Lease } from '../core/lease.ts'
import type { RunRecord } from '../core/run-record.ts'
import type { SourceTypes } from '../core/source-types.ts'

/**
 * Per-table watermarks, locks and run records. Implementations: a local folder (embedded mode) and DynamoDB.
 */
export interface StateStore {
  getWatermark(table: string): Promise<Watermark | undefined>
  /** Stores `next` only if the stored watermark still equals `expected`; throws `DimsyncError` otherwise. */
  commitWatermark(table: string, next: Watermark, expected: Watermark | undefined): Promise<void>
  /**
   * Sets the watermark to `next` (undefined: removes it), backwards too, only if the stored watermark still equals
   * `expected`; throws `WatermarkConflictError` otherwise. For `dimsync reset-watermark` and a cursor column change.
   */
  resetWatermark(table: string, next: Watermark | undefined, expected: Watermark | undefined): Promise<void>
  /**
   * Takes the table's lock for `ttlMs`. Throws `LockHeldError` (holder, since) when another owner holds an
   * unexpired lease; an expired lease is taken over with a higher token.
   */
  acquireLease(table: string, owner: string, ttlMs: number, now: Date): Promise<Lease>
  /** Extends a held lease; throws `LeaseLostError` when it expired and was taken over. */
  renewLease(lease: Lease, ttlMs: number, now: Date): Promise<Lease>
  /**
   * Hands `lease` over to its run for `ttlMs` (the wait before the run's next step): the run then holds it, and
   * only a step of that run may take it before it expires (see `handedOverLease`). Throws `LeaseLostError`
   * unless `lease` is still the held one.
   */
  handOverLease(lease: Lease, ttlMs: number, now: Date): Promise<Lease>
  /** Throws `LeaseLostError` unless `lease` is still the held one (checked before a merge commits). */
  assertLeaseHeld(lease: Lease, now: Date): Promise<void>
  /** Releases the lease if still held by it; keeps the token counter. Safe to call twice. */
  releaseLease(lease: Lease): Promise<void>
  /** Inserts or replaces the record with the same runId. */
  recordRun(run: RunRecord): Promise<void>
  /** Most recent first. */
  listRuns(table: string, limit: number): Promise<readonly RunRecord[]>
  /** How the table's CSV columns were read by the last merged batch; undefined before the first. */
  getSourceTypes(table: string): Promise<SourceTypes | undefined>
  /** Replaces the table's recorded source types (once a batch read with them is merged). */
  recordSourceTypes(table: string, types: SourceTypes): Promise<void>
}
