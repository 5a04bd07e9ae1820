import { canonicalJson, compareWatermarks, watermarkPosition } from '../core/watermark.ts'
import type { BatchManifest, Watermark } from '../core/batch.ts'
import { BatchRejectedError, MassDeleteRefusedError, OutOfOrderBatchError } from '../core/errors.ts'
import { sameSourceTypes, type SourceTypes } from '../core/source-types.ts'
import type { StateStore } from '../ports/state-store.ts'
import type { MergeBatchResult } from './merge-batch.ts'

/*
 * What follows the merge of a staged batch (merge-table.ts): the watermark, the CSV types it was read with, and
 * the refusal of a batch an earlier run left staged.
 */

/**
 * What happened to the watermark after a merge: `advanced` to the batch's candidate, `unchanged` (already
 * there: a retried merge), `behind` (a newer batch already moved it further; never moved backwards), or
 * `none` (a full extract carries no candidate).
 */
export type WatermarkOutcome = 'advanced' | 'unchanged' | 'behind' | 'none'

export interface MergeStepResult {
  readonly merge: MergeBatchResult
  readonly manifest: BatchManifest
  readonly watermark: WatermarkOutcome
}

/**
 * Records how the merged batch read its CSV columns, so every later extract reads them the same way (a date
 * format chosen once is never guessed again). Only after the merge: a refused batch records nothing, and the
 * next load chooses again. A crash before this is repaired like the watermark: the batch merged again is skipped.
 */
export async function recordSourceTypes(
  state: StateStore,
  table: string,
  types: SourceTypes | undefined,
): Promise<void> {
  if (types === undefined) return
  if (sameSourceTypes(await state.getSourceTypes(table), types)) return
  await state.recordSourceTypes(table, types)
}

/**
 * Moves the watermark forward to `candidate`; never backwards (a batch merged after a newer one). A dimension's
 * candidate names its cursor column and batch (committedWatermark): a position already there is kept (a retried
 * merge, an empty delta) unless the stored one names no batch yet, which then gets this one; a position in another
 * cursor column replaces the stored one (the config's cursor changed: that batch read every row).
 */
export async function advanceWatermark(
  state: StateStore,
  table: string,
  candidate: Watermark | undefined,
): Promise<WatermarkOutcome> {
  if (candidate === undefined) return 'none'
  const current = await state.getWatermark(table)
  if (current === undefined) {
    await state.commitWatermark(table, candidate, current)
    return 'advanced'
  }
  const position = (w: Watermark) => canonicalJson(watermarkPosition(w))
  const sameColumn =
    current.column === undefined || candidate.column === undefined || current.column === candidate.column
  if (!sameColumn) {
    await state.resetWatermark(table, candidate, current)
    return 'advanced'
  }
  if (position(current) === position(candidate)) {
    if (current.batchId === undefined && candidate.batchId !== undefined)
      await state.commitWatermark(table, candidate, current)
    return 'unchanged'
  }
  if (compareWatermarks(candidate, current) < 0) return 'behind'
  await state.commitWatermark(table, candidate, current)
  return 'advanced'
}

/**
 * A batch an earlier run staged, refused again: it would be refused on every run, so the error says how to get
 * past it. Other errors (and an out-of-order batch, which is removed from staging) are returned as they are.
 */
export function leftStagedRefusal(error: unknown, table: string, batchId: string): unknown {
  if (!(error instanceof BatchRejectedError) || error instanceof OutOfOrderBatchError) return error
  const discard = `dimsync discard --table ${table} --batch ${batchId}`
  const wayOut =
    error instanceof MassDeleteRefusedError
      ? `rerun with --allow-mass-delete to apply it, or drop it with: ${discard}`
      : `it is refused on every run until it is dropped with: ${discard}`
  const Refused = error instanceof MassDeleteRefusedError ? MassDeleteRefusedError : BatchRejectedError
  return new Refused(table, batchId, `${error.message}. This batch was staged by an earlier run; ${wayOut}`)
}
