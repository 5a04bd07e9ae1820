import type { Watermark } from './batch.ts'
import { canonicalJson, compareWatermarks, watermarkPosition } from './watermark.ts'

/**
 * The state store's watermark against the warehouse's batch ledger. Each merge of an incremental batch records
 * in its ledger row the watermark it moves to, and the watermark it commits names that batch; so the two agree
 * exactly when the watermark's batch is in the ledger and the ledger holds no watermark beyond it. A warehouse lost
 * or restored from an older copy lacks the watermark's batch (a delta after that watermark would leave out every
 * row before it); a state store restored from an older copy is behind the ledger (rows already merged are read
 * again, and a lost watermark reads every row again as if none had been merged).
 */
export interface LedgerView {
  /** The ledger holds the stored watermark's batch. */
  readonly holdsWatermarkBatch: boolean
  /** The ledger holds some batch of the table's target. */
  readonly anyBatch: boolean
  /** The last batch (by applied time) that recorded a watermark, and that watermark. */
  readonly last?: { readonly batchId: string; readonly watermark: Watermark }
  /** Committed batches still in staging: merged but their watermark not committed yet, or not merged yet. */
  readonly staged: ReadonlySet<string>
}

export type LedgerDisagreement =
  | { readonly kind: 'warehouse-behind'; readonly stored: Watermark }
  | { readonly kind: 'state-behind'; readonly stored?: Watermark }

/** How the watermark and the ledger disagree, or undefined when they agree (or cannot be compared). */
export function ledgerDisagreement(
  stored: Watermark | undefined,
  ledger: LedgerView,
): LedgerDisagreement | undefined {
  if (stored !== undefined) {
    // A watermark committed before batches were named: only a ledger holding nothing at all shows a lost warehouse.
    const lost = stored.batchId !== undefined ? !ledger.holdsWatermarkBatch : !ledger.anyBatch
    if (lost) return { kind: 'warehouse-behind', stored }
  }
  const last = ledger.last
  // A batch still staged was merged and is about to commit its watermark (or is merged first by this run).
  if (last === undefined || ledger.staged.has(last.batchId) || last.batchId === stored?.batchId)
    return undefined
  if (stored === undefined) return { kind: 'state-behind' }
  const sameColumn =
    stored.column === undefined ||
    last.watermark.column === undefined ||
    stored.column === last.watermark.column
  if (sameColumn && compareWatermarks(last.watermark, stored) > 0) return { kind: 'state-behind', stored }
  return undefined
}

/** `{"cursor":"2024-05-01T00:00:00Z","key":[101]}`: a watermark's position, for messages. */
export function describePosition(watermark: Watermark): string {
  return canonicalJson(watermarkPosition(watermark))
}
