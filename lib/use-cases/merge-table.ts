import type { BatchManifest } from '../core/batch.ts'
import { instantOfBatchId } from '../core/batch-id.ts'
import { compareManifests } from '../core/batch-manifest.ts'
import { OutOfOrderBatchError, StagingError } from '../core/errors.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { committedWatermark } from '../core/watermark.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { StateStore } from '../ports/state-store.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { mergeBatch, type MergeBatchRequest, type MergeBatchResult } from './merge-batch.ts'
import {
  advanceWatermark,
  leftStagedRefusal,
  recordSourceTypes,
  type MergeStepResult,
  type WatermarkOutcome,
} from './merge-step.ts'
import { reportMemoryRaised } from './run-event.ts'
import { withRunStaging, type WithRunStaging } from './run-staging.ts'
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

/** The merge's adapters within a run: the staging is the run's own listing of the table (RunStaging). */
export type RunMergeDeps<D extends MergeTableDeps = MergeTableDeps> = WithRunStaging<D>

export interface MergeRequest {
  readonly batchId: string
  readonly allowMassDelete?: boolean
  /**
   * The run's record already says succeeded: a batch missing from staging was merged, recorded and removed by
   * an earlier call whose answer was lost, so there is nothing left to do.
   */
  readonly recordedAsMerged?: boolean
  /**
   * `dimsync plan`: run the merge and report it, roll it back and discard the staged batch; batches an earlier
   * run left staged are not merged, the watermark and the run record are left alone.
   */
  readonly dryRun?: boolean
  /** Dry run: the keys whose versions before and after the merge the result shows (see MergeBatchRequest). */
  readonly inspectKeys?: MergeBatchRequest['inspectKeys']
}

export interface MergeResult {
  readonly batchId: string
  readonly merge: MergeBatchResult
  readonly watermark: WatermarkOutcome
  /** The merged batch's manifest (undefined when an earlier call had merged and removed it). */
  readonly manifest?: BatchManifest
}

export interface MergeTableRequest extends Omit<MergeRequest, 'recordedAsMerged' | 'dryRun' | 'inspectKeys'> {
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
  const runDeps = withRunStaging(deps, table)
  const warehouse = await runDeps.openWarehouse()
  await assertStateAgreesWithWarehouse({ ...runDeps, warehouse }, table)
  const { batchId, allowMassDelete } = request
  return await mergeInRun(runDeps, run, table, {
    batchId,
    allowMassDelete,
    recordedAsMerged: earlier?.status === 'succeeded',
  })
}

/**
 * Merges staged batch `request.batchId` within a run that holds the table's lease, from the run's listing of the
 * table's staging: batches an earlier run left staged before it go first (history is applied in order), the
 * lease's fencing token is checked inside the transaction just before COMMIT, a batch already in the warehouse
 * ledger is skipped; then the watermark advances, the run is recorded as succeeded and the staged batch removed.
 * A dry run merges only the batch, rolls it back and discards it.
 */
export async function mergeInRun(
  deps: RunMergeDeps,
  run: TableRun,
  table: TableSpec,
  request: MergeRequest,
): Promise<MergeResult> {
  const { batchId } = request
  const report = deps.onEvent ?? (() => undefined)
  if (request.dryRun) return await dryRunMerge(deps, table, request)
  await mergeLeftStaged(deps, run, table, { before: batchId, allowMassDelete: request.allowMassDelete })
  const started = Date.now()
  let step: MergeStepResult
  try {
    const manifest =
      (await deps.staging.manifestOf(batchId)) ?? (await readCommitted(deps.staging, table, batchId))
    step = await mergeListed(deps, run, table, manifest, request)
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

/** A batch the run did not list: the store's "not committed" StagingError, or its manifest if it is committed. */
async function readCommitted(
  staging: StagingStore,
  table: TableSpec,
  batchId: string,
): Promise<BatchManifest> {
  const opened = await staging.openBatch(table.name, batchId)
  await opened.release()
  return opened.manifest
}

/**
 * Merges, oldest first, the batches an earlier run staged but never merged (all, or those before
 * `request.before`), as the run listed them; each is checked against the lease before COMMIT, removed from
 * staging once merged and reported as a `resume` event. A batch the warehouse refuses would be refused on every
 * run: the error says how to get past it.
 */
export async function mergeLeftStaged(
  deps: RunMergeDeps,
  run: TableRun,
  table: TableSpec,
  request: { readonly before?: string; readonly allowMassDelete?: boolean },
): Promise<readonly MergeStepResult[]> {
  const staged = await deps.staging.committed()
  const limit = request.before === undefined ? undefined : staged.find((m) => m.batchId === request.before)
  // The batch to merge next is gone (merged by an earlier attempt): nothing is older than it any more.
  if (request.before !== undefined && limit === undefined) return []
  const older = limit === undefined ? staged : staged.filter((m) => compareManifests(m, limit) < 0)
  const results: MergeStepResult[] = []
  for (const manifest of older) {
    let result: MergeStepResult
    try {
      result = await mergeListed(deps, run, table, manifest, request)
    } catch (error) {
      throw leftStagedRefusal(error, table.name, manifest.batchId)
    }
    await deps.staging.deleteBatch(table.name, manifest.batchId)
    const { merge, watermark } = result
    deps.onEvent?.({ step: 'resume', table: table.name, batchId: merge.batchId, result: merge, watermark })
    results.push(result)
  }
  return results
}

/**
 * Merges one committed staged batch, from its listed manifest (skipped when the warehouse ledger already has
 * it), then advances the watermark to the batch's candidate and records how its CSV columns were read. Because
 * the ledger row commits with the merge, a crash between the merge and the watermark is repaired by running this
 * again: the merge is skipped, the watermark advances. The staged batch is kept; the caller deletes it once
 * everything is recorded.
 */
async function mergeListed(
  deps: RunMergeDeps,
  run: TableRun,
  table: TableSpec,
  manifest: BatchManifest,
  request: { readonly allowMassDelete?: boolean },
): Promise<MergeStepResult> {
  const { batchId } = manifest
  const mergeDeps = await mergeStepDeps(deps)
  deps.onEvent?.({ step: 'merging', table: table.name, batchId, rows: manifest.rowCount })
  let merge: MergeBatchResult
  try {
    merge = await mergeBatch(mergeDeps, {
      table,
      schema: deps.schema,
      batchId,
      now: deps.clock(),
      allowMassDelete: request.allowMassDelete,
      beforeCommit: () => run.lease.assertHeld(),
      fence: run.lease.current,
      onMemoryRaised: reportMemoryRaised(deps, table.name),
    })
  } catch (error) {
    // Retrying it could never succeed: kept staged, it would be merged first by every later run and refused.
    if (error instanceof OutOfOrderBatchError) await deps.staging.deleteBatch(table.name, batchId)
    throw error
  }
  const candidate = manifest.watermarkCandidate
  const watermark = await advanceWatermark(
    deps.state,
    table.name,
    candidate === undefined ? undefined : committedWatermark(table, candidate, batchId),
  )
  await recordSourceTypes(deps.state, table.name, manifest.sourceTypes)
  return { merge, manifest, watermark }
}

/** Runs the merge of the staged batch and rolls it back, then discards the batch. */
async function dryRunMerge(
  deps: RunMergeDeps,
  table: TableSpec,
  request: MergeRequest,
): Promise<MergeResult> {
  const { batchId } = request
  try {
    const merge = await mergeBatch(await mergeStepDeps(deps), {
      table,
      schema: deps.schema,
      batchId,
      now: deps.clock(),
      allowMassDelete: request.allowMassDelete,
      dryRun: true,
      ...(request.inspectKeys !== undefined ? { inspectKeys: request.inspectKeys } : {}),
    })
    return { batchId, merge, watermark: 'unchanged' }
  } finally {
    await deps.staging.deleteBatch(table.name, batchId)
  }
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

/** The adapters a merge of one batch uses, the warehouse opened. */
export interface MergeStepDeps {
  readonly staging: StagingStore
  readonly state: StateStore
  readonly warehouse: Warehouse<SqlDialect>
  readonly schema: string
  readonly clock: () => Date
}
