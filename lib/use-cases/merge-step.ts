import { canonicalJson, committedWatermark, compareWatermarks, watermarkPosition } from '../core/watermark.ts'
import type { BatchManifest, Watermark } from '../core/batch.ts'
import { compareManifests } from '../core/batch-manifest.ts'
import { BatchRejectedError, MassDeleteRefusedError, OutOfOrderBatchError } from '../core/errors.ts'
import { sameSourceTypes, type SourceTypes } from '../core/source-types.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { StateStore } from '../ports/state-store.ts'
import type { MemoryRaised, Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { mergeBatch, type MergeBatchResult } from './merge-batch.ts'
import type { FenceHolder } from '../sql/render-fence.ts'

export interface MergeStepDeps {
  readonly staging: StagingStore
  readonly state: StateStore
  readonly warehouse: Warehouse<SqlDialect>
  readonly schema: string
  readonly clock: () => Date
}

/**
 * What happened to the watermark after a merge: `advanced` to the batch's candidate, `unchanged` (already
 * there: a retried merge), `behind` (a newer batch already moved it further; never moved backwards), or
 * `none` (a full extract carries no candidate).
 */
export type WatermarkOutcome = 'advanced' | 'unchanged' | 'behind' | 'none'

export interface MergeStepRequest {
  readonly batchId: string
  readonly allowMassDelete?: boolean
  /** Called inside the merge transaction just before COMMIT (the fencing check); throwing rolls back. */
  readonly beforeCommit?: () => Promise<void>
  /** The lease holder, checked at the warehouse's COMMIT where the warehouse needs it (see MergeBatchRequest). */
  readonly fence?: FenceHolder
  /** Called once the batch's manifest is read, as its merge starts. */
  readonly onStart?: (manifest: BatchManifest) => void
  /** Told when the merge ran out of memory and runs again with a higher limit. */
  readonly onMemoryRaised?: (raised: MemoryRaised) => void
}

export interface MergeStepResult {
  readonly merge: MergeBatchResult
  readonly manifest: BatchManifest
  readonly watermark: WatermarkOutcome
}

/**
 * Merges one committed staged batch (skipped when the warehouse ledger already has it), then advances the
 * watermark to the batch's candidate. Because the ledger row commits with the merge, a crash between the
 * merge and the watermark is repaired by running this again: the merge is skipped, the watermark advances.
 * The staged batch is kept; the caller deletes it once everything is recorded.
 */
export async function mergeStep(
  deps: MergeStepDeps,
  table: TableSpec,
  request: MergeStepRequest,
): Promise<MergeStepResult> {
  const manifest = await readManifest(deps.staging, table.name, request.batchId)
  request.onStart?.(manifest)
  let merge: MergeBatchResult
  try {
    merge = await mergeBatch(deps, {
      table,
      schema: deps.schema,
      batchId: request.batchId,
      now: deps.clock(),
      allowMassDelete: request.allowMassDelete,
      beforeCommit: request.beforeCommit,
      fence: request.fence,
      onMemoryRaised: request.onMemoryRaised,
    })
  } catch (error) {
    // Retrying it could never succeed: kept staged, it would be merged first by every later run and refused.
    if (error instanceof OutOfOrderBatchError) await deps.staging.deleteBatch(table.name, request.batchId)
    throw error
  }
  const candidate = manifest.watermarkCandidate
  const watermark = await advanceWatermark(
    deps.state,
    table.name,
    candidate === undefined ? undefined : committedWatermark(table, candidate, request.batchId),
  )
  await recordSourceTypes(deps.state, table.name, manifest.sourceTypes)
  return { merge, manifest, watermark }
}

/**
 * Records how the merged batch read its CSV columns, so every later extract reads them the same way (a date
 * format chosen once is never guessed again). Only after the merge: a refused batch records nothing, and the
 * next load chooses again. A crash before this is repaired like the watermark: the batch merged again is skipped.
 */
async function recordSourceTypes(
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

async function readManifest(staging: StagingStore, table: string, batchId: string): Promise<BatchManifest> {
  // openBatch verifies every part; mergeBatch opens the batch again for the load, so only the manifest is
  // taken here (listBatches reads manifests only).
  const manifest = (await staging.listBatches(table)).find((m) => m.batchId === batchId)
  if (manifest !== undefined) return manifest
  const opened = await staging.openBatch(table, batchId) // throws the store's "not committed" StagingError
  await opened.release()
  return opened.manifest
}

export interface LeftStagedRequest {
  /** Only batches that sort before this one (merge order); every staged batch when undefined. */
  readonly before?: string
  readonly allowMassDelete?: boolean
  readonly beforeCommit?: () => Promise<void>
  readonly fence?: FenceHolder
  /** Called as the merge of each batch starts. */
  readonly onStart?: (manifest: BatchManifest) => void
  readonly onMemoryRaised?: (raised: MemoryRaised) => void
  /** Called after each batch is merged, its watermark advanced and its staging removed. */
  readonly onMerged?: (result: MergeStepResult) => void
}

/**
 * Merges, oldest first, the batches an earlier run staged but never merged (its merge failed or it died), so
 * that history is applied in order and nothing staged is lost; each is removed from staging once merged. A batch
 * the warehouse refuses would be refused on every run: the error says how to get past it.
 */
export async function mergeLeftStaged(
  deps: MergeStepDeps,
  table: TableSpec,
  request: LeftStagedRequest,
): Promise<MergeStepResult[]> {
  const staged = await deps.staging.listBatches(table.name)
  const limit = request.before === undefined ? undefined : staged.find((m) => m.batchId === request.before)
  // The batch to merge next is gone (merged by an earlier attempt): nothing is older than it any more.
  if (request.before !== undefined && limit === undefined) return []
  const older = limit === undefined ? staged : staged.filter((m) => compareManifests(m, limit) < 0)
  const results: MergeStepResult[] = []
  for (const manifest of older) {
    let result: MergeStepResult
    try {
      result = await mergeStep(deps, table, {
        batchId: manifest.batchId,
        allowMassDelete: request.allowMassDelete,
        beforeCommit: request.beforeCommit,
        fence: request.fence,
        onStart: request.onStart,
        onMemoryRaised: request.onMemoryRaised,
      })
    } catch (error) {
      throw leftStagedRefusal(error, table.name, manifest.batchId)
    }
    await deps.staging.deleteBatch(table.name, manifest.batchId)
    request.onMerged?.(result)
    results.push(result)
  }
  return results
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
