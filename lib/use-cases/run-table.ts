import { makeBatchId, makeRunId } from '../core/batch-id.ts'
import type { MergeCounts, RunRecord } from '../core/run-record.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { Source } from '../ports/source.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { StateStore } from '../ports/state-store.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import { mergeBatch, type MergeBatchResult } from './merge-batch.ts'
import { extractStep, HeldLease, mergeLeftStaged, mergeStep } from './pipeline-steps.ts'

/** A step of a run, for logs and progress displays. */
export type RunEvent =
  | { readonly step: 'lock'; readonly table: string; readonly runId: string }
  | { readonly step: 'resume'; readonly table: string; readonly batchId: string }
  | {
      readonly step: 'extract'
      readonly table: string
      readonly batchId: string
      readonly rows: number
      readonly seconds: number
    }
  | {
      readonly step: 'merge'
      readonly table: string
      readonly batchId: string
      readonly result: MergeBatchResult
      readonly seconds: number
    }
  | { readonly step: 'progress'; readonly table: string; readonly rows: number; readonly seconds: number }

export interface PipelineDeps {
  readonly staging: StagingStore
  readonly state: StateStore
  readonly warehouse: Warehouse
  readonly schema: string
  readonly openSource: (table: TableSpec) => Source
  readonly clock: () => Date
  readonly onEvent?: (event: RunEvent) => void
  /** Checks the staged columns against the table's config (throws a ConfigError naming the config path). */
  readonly checkSourceColumns?: (table: TableSpec, columns: readonly string[]) => void
}

export interface RunTableOptions {
  /** Business time of the snapshot (backfills, reproducible runs); default: now. */
  readonly extractedAt?: Date
  readonly allowMassDelete?: boolean
  /** Extract and compute the merge, report it, roll back and discard the staged batch. */
  readonly dryRun?: boolean
  readonly leaseTtlMs?: number
}

export interface RunTableResult {
  readonly runId: string
  readonly table: string
  /** Batches staged by an earlier, interrupted run and merged first. */
  readonly resumed: readonly MergeBatchResult[]
  readonly batchId: string
  readonly rows: number
  readonly merge: MergeBatchResult
}

const DEFAULT_LEASE_TTL_MS = 10 * 60_000

/**
 * One run of one table: lock, merge batches an interrupted run left staged, extract a new batch, merge it in
 * one transaction (checking the lock is still ours just before COMMIT), then advance the watermark. The
 * watermark moves only after the merge committed; a crash anywhere leaves a state the next run completes.
 * The steps are those of pipeline-steps.ts, which the Lambdas run one per invocation.
 */
export async function runTable(
  deps: PipelineDeps,
  table: TableSpec,
  options: RunTableOptions = {},
): Promise<RunTableResult> {
  const startedAt = deps.clock()
  const runId = makeRunId(startedAt)
  const lease = await HeldLease.acquire(
    deps.state,
    table.name,
    runId,
    options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    deps.clock,
  )
  deps.onEvent?.({ step: 'lock', table: table.name, runId })
  // A dry run changes nothing, so it leaves no run record for operators to mistake for a load.
  const record = async (patch: Partial<RunRecord> & Pick<RunRecord, 'status'>) => {
    if (!options.dryRun)
      await deps.state.recordRun({ runId, table: table.name, startedAt: startedAt.toISOString(), ...patch })
  }
  let batchId: string | undefined
  try {
    await record({ status: 'running' })
    const resumed: MergeBatchResult[] = []
    if (!options.dryRun) {
      await mergeLeftStaged(deps, table, {
        allowMassDelete: options.allowMassDelete,
        beforeCommit: () => lease.assertHeld(),
        onMerged: ({ merge }) => {
          deps.onEvent?.({ step: 'resume', table: table.name, batchId: merge.batchId })
          resumed.push(merge)
        },
      })
    }

    const extractedAt = options.extractedAt ?? deps.clock()
    batchId = makeBatchId(extractedAt)
    const started = Date.now()
    const elapsed = () => (Date.now() - started) / 1000
    const { manifest } = await extractStep(deps, table, {
      batchId,
      extractedAt,
      beforeCommit: () => lease.assertHeld(),
      onProgress: (rows) => deps.onEvent?.({ step: 'progress', table: table.name, rows, seconds: elapsed() }),
    })
    deps.onEvent?.({
      step: 'extract',
      table: table.name,
      batchId,
      rows: manifest.rowCount,
      seconds: elapsed(),
    })
    const merge = options.dryRun
      ? await dryRun(deps, table, batchId, options)
      : await mergeAndForget(deps, table, batchId, lease, options)
    await record({
      status: 'succeeded',
      finishedAt: deps.clock().toISOString(),
      batchId,
      rowsExtracted: manifest.rowCount,
      counts: merge.counts as MergeCounts,
    })
    return { runId, table: table.name, resumed, batchId, rows: manifest.rowCount, merge }
  } catch (error) {
    await record({
      status: 'failed',
      finishedAt: deps.clock().toISOString(),
      batchId,
      error: error instanceof Error ? error.message : String(error),
    }).catch(() => undefined)
    throw error
  } finally {
    await lease.release()
  }
}

/** Merge, advance the watermark, then drop the staged batch: it is in the warehouse now. */
async function mergeAndForget(
  deps: PipelineDeps,
  table: TableSpec,
  batchId: string,
  lease: HeldLease,
  options: RunTableOptions,
): Promise<MergeBatchResult> {
  const started = Date.now()
  const { merge } = await mergeStep(deps, table, {
    batchId,
    allowMassDelete: options.allowMassDelete,
    beforeCommit: () => lease.assertHeld(),
  })
  await deps.staging.deleteBatch(table.name, batchId)
  deps.onEvent?.({
    step: 'merge',
    table: table.name,
    batchId,
    result: merge,
    seconds: (Date.now() - started) / 1000,
  })
  return merge
}

async function dryRun(
  deps: PipelineDeps,
  table: TableSpec,
  batchId: string,
  options: RunTableOptions,
): Promise<MergeBatchResult> {
  try {
    return await mergeBatch(deps, {
      table,
      schema: deps.schema,
      batchId,
      now: deps.clock(),
      allowMassDelete: options.allowMassDelete,
      dryRun: true,
    })
  } finally {
    await deps.staging.deleteBatch(table.name, batchId)
  }
}
