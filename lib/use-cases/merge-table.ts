import type { BatchManifest } from '../core/batch.ts'
import { instantOfBatchId } from '../core/batch-id.ts'
import { StagingError } from '../core/errors.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import type { MergeBatchResult } from './merge-batch.ts'
import { reportMemoryRaised } from './run-event.ts'
import {
  mergeLeftStaged,
  mergeStep,
  type MergeStepDeps,
  type MergeStepResult,
  type WatermarkOutcome,
} from './merge-step.ts'
import { assertStateAgreesWithWarehouse } from './warehouse-agreement.ts'
import { inTableRun, RECENT_RUNS, type RunOfStep, type TableRun, type TableRunDeps } from './table-run.ts'

export interface MergeTableDeps extends TableRunDeps {
  readonly staging: StagingStore
  readonly schema: string
  /** The warehouse, opened on the first call (only once the table's lease is held); the same one afterwards. */
  openWarehouse(): Promise<Warehouse<SqlDialect>>
  /**
   * Called when a run of a table ends, before its lease is released: closes a warehouse that one process at a
   * time may have open (a DuckDB file), so that the run of another table can open it. The next
   * `openWarehouse` opens it again.
   */
  releaseWarehouse?(): Promise<void>
}

export interface MergeRequest {
  readonly batchId: string
  readonly allowMassDelete?: boolean
  /**
   * The run's record already says succeeded: a batch missing from staging was merged, recorded and removed by
   * an earlier call whose answer was lost, so there is nothing left to do.
   */
  readonly recordedAsMerged?: boolean
}

export interface MergeResult {
  readonly batchId: string
  readonly merge: MergeBatchResult
  readonly watermark: WatermarkOutcome
  /** The merged batch's manifest (undefined when an earlier call had merged and removed it). */
  readonly manifest?: BatchManifest
}

export interface MergeTableRequest extends Omit<MergeRequest, 'recordedAsMerged'> {
  readonly run: RunOfStep & {
    /**
     * With a value, a merge that fails with a retryable error hands the lease over to its run for this long (at
     * least the wait before its retry) instead of releasing it, so no other run takes the table before the
     * retry. Without, the lease is released.
     */
    readonly handOverTtlMs?: number
  }
  /**
   * What a failure of the merge becomes, decided while the run still holds the lease (so a failure made
   * retryable is handed over too): the merge function reads a refused login's secret again. Default: itself.
   */
  readonly explainFailure?: (error: unknown) => Promise<unknown>
}

/**
 * The merge step as a run of its own (the merge function): take the table's lease (also when the extract, or
 * an earlier attempt of this merge, handed it over to the run), continue the run record the extract wrote,
 * merge the staged batch (and first any batch an earlier run left staged), advance the watermark, record the
 * run as succeeded, remove the staged batch, release the lease.
 */
export async function mergeTable(
  deps: MergeTableDeps,
  table: TableSpec,
  request: MergeTableRequest,
): Promise<MergeResult> {
  return await inTableRun(
    deps,
    {
      ...request.run,
      table: table.name,
      batchId: request.batchId,
      startedAt: instantOfBatchId(request.batchId),
    },
    async (run) => {
      try {
        return await mergeTableInRun(deps, run, table, request)
      } catch (error) {
        const failure = request.explainFailure ? await request.explainFailure(error) : error
        const { handOverTtlMs } = request.run
        if (handOverTtlMs !== undefined && (failure as { retryable?: unknown }).retryable === true)
          await run.handOverToRun(Math.max(handOverTtlMs, request.run.leaseTtlMs)).catch(() => undefined)
        throw failure
      }
    },
  )
}

async function mergeTableInRun(
  deps: MergeTableDeps,
  run: TableRun,
  table: TableSpec,
  request: MergeTableRequest,
): Promise<MergeResult> {
  const earlier = (await deps.state.listRuns(table.name, RECENT_RUNS)).find((r) => r.runId === run.runId)
  if (earlier !== undefined) run.adopt(earlier)
  const { warehouse } = await mergeStepDeps(deps)
  await assertStateAgreesWithWarehouse({ ...deps, warehouse }, table)
  const { batchId, allowMassDelete } = request
  return await mergeInRun(deps, run, table, {
    batchId,
    allowMassDelete,
    recordedAsMerged: earlier?.status === 'succeeded',
  })
}

/**
 * Merges staged batch `request.batchId` within a run that holds the table's lease: batches an earlier run left
 * staged go first (history is applied in order), the lease's fencing token is checked inside the transaction
 * just before COMMIT, a batch already in the warehouse ledger is skipped; then the watermark advances, the run
 * is recorded as succeeded and the staged batch removed.
 */
export async function mergeInRun(
  deps: MergeTableDeps,
  run: TableRun,
  table: TableSpec,
  request: MergeRequest,
): Promise<MergeResult> {
  const { batchId } = request
  const report = deps.onEvent ?? (() => undefined)
  await mergeLeftStagedInRun(deps, run, table, { ...request, before: batchId })
  const stepDeps = await mergeStepDeps(deps)
  const started = Date.now()
  let step: MergeStepResult
  try {
    step = await mergeStep(stepDeps, table, {
      batchId,
      allowMassDelete: request.allowMassDelete,
      beforeCommit: () => run.lease.assertHeld(),
      fence: run.lease.current,
      onStart: reportMerging(deps, table),
      onMemoryRaised: reportMemoryRaised(deps, table.name),
    })
  } catch (error) {
    if (error instanceof StagingError && request.recordedAsMerged) {
      report({ step: 'already-merged', table: table.name, batchId })
      return {
        batchId,
        merge: { status: 'already-applied', batchId, statements: [] },
        watermark: 'unchanged',
      }
    }
    throw error
  }
  const { merge, manifest, watermark } = step
  report({ step: 'merge', table: table.name, batchId, result: merge, seconds: (Date.now() - started) / 1000 })
  report({
    step: 'watermark',
    table: table.name,
    batchId,
    outcome: watermark,
    ...(manifest.watermarkCandidate !== undefined ? { candidate: manifest.watermarkCandidate } : {}),
  })
  run.assumeStartedAt(manifest.extractedAt)
  await run.record({
    status: 'succeeded',
    finishedAt: deps.clock().toISOString(),
    batchId,
    rowsExtracted: manifest.rowCount,
    ...(merge.counts ? { counts: merge.counts } : {}),
    error: undefined,
  })
  await deps.staging.deleteBatch(table.name, batchId)
  return { batchId, merge, watermark, manifest }
}

/**
 * Merges, oldest first, the batches an earlier run staged but never merged (all, or those before
 * `request.before`), each checked against the lease before COMMIT and reported as a `resume` event.
 */
export async function mergeLeftStagedInRun(
  deps: MergeTableDeps,
  run: TableRun,
  table: TableSpec,
  request: { readonly before?: string; readonly allowMassDelete?: boolean },
): Promise<readonly MergeStepResult[]> {
  // Most runs find nothing left staged: the warehouse is then not opened for it.
  if ((await deps.staging.listBatches(table.name)).length === 0) return []
  return await mergeLeftStaged(await mergeStepDeps(deps), table, {
    ...request,
    beforeCommit: () => run.lease.assertHeld(),
    fence: run.lease.current,
    onStart: reportMerging(deps, table),
    onMemoryRaised: reportMemoryRaised(deps, table.name),
    onMerged: ({ merge, watermark }) =>
      deps.onEvent?.({ step: 'resume', table: table.name, batchId: merge.batchId, result: merge, watermark }),
  })
}

function reportMerging(deps: MergeTableDeps, table: TableSpec): (manifest: BatchManifest) => void {
  return (manifest) =>
    deps.onEvent?.({ step: 'merging', table: table.name, batchId: manifest.batchId, rows: manifest.rowCount })
}

/** The merge's adapters, with the warehouse opened (the caller holds the table's lease). */
export async function mergeStepDeps(deps: MergeTableDeps): Promise<MergeStepDeps> {
  return {
    staging: deps.staging,
    state: deps.state,
    warehouse: await deps.openWarehouse(),
    schema: deps.schema,
    clock: deps.clock,
  }
}
