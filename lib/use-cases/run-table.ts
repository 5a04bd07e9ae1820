import { makeBatchId, makeRunId } from '../core/batch-id.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { extractInRun, type ExtractTableDeps } from './extract-table.ts'
import type { MergeBatchRequest, MergeBatchResult } from './merge-batch.ts'
import { mergeInRun, mergeLeftStaged, type MergeTableDeps, type RunMergeDeps } from './merge-table.ts'
import { withRunStaging } from './run-staging.ts'
import { inTableRun } from './table-run.ts'
import { assertStateAgreesWithWarehouse } from './warehouse-agreement.ts'

export type { RunEvent } from './run-event.ts'

/** What a whole run needs: the extract's adapters and the merge's. */
export interface PipelineDeps extends ExtractTableDeps, MergeTableDeps {}

export interface RunTableOptions {
  /** Business time of the snapshot (backfills, reproducible runs); default: now. */
  readonly extractedAt?: Date
  readonly allowMassDelete?: boolean
  /** Extract and compute the merge, report it, roll back and discard the staged batch. */
  readonly dryRun?: boolean
  readonly leaseTtlMs?: number
  /** Dry run: the keys whose versions before and after the merge the result shows (see MergeBatchRequest). */
  readonly inspectKeys?: MergeBatchRequest['inspectKeys']
}

export interface RunTableResult {
  readonly runId: string
  readonly table: string
  /** Batches staged by an earlier, interrupted run and merged first. */
  readonly resumed: readonly MergeBatchResult[]
  /** Dry run: batches an earlier run left staged, which a run merges before its own extract (the plan leaves them out). */
  readonly leftStaged?: readonly string[]
  readonly batchId: string
  readonly rows: number
  readonly merge: MergeBatchResult
}

const DEFAULT_LEASE_TTL_MS = 10 * 60_000

/**
 * One run of one table, extract and merge under one lease (`dimsync run`): merge batches an interrupted run
 * left staged, extract a new batch, merge it in one transaction (checking the lock is still ours just before
 * COMMIT), then advance the watermark. The watermark moves only after the merge committed; a crash anywhere
 * leaves a state the next run completes. The steps are those the Lambdas run one per invocation
 * (extract-table.ts, merge-table.ts).
 */
export async function runTable(
  deps: PipelineDeps,
  table: TableSpec,
  options: RunTableOptions = {},
): Promise<RunTableResult> {
  const startedAt = deps.clock()
  const runId = makeRunId(startedAt)
  const dryRun = options.dryRun ?? false
  const request = {
    table: table.name,
    runId,
    leaseTtlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    startedAt: startedAt.toISOString(),
    recorded: !dryRun,
  }
  return await inTableRun(deps, request, async (run) => {
    // Under the lease the table's staging is listed once; every step of the run reads that listing.
    const runDeps = withRunStaging(deps, table)
    try {
      await run.record({ status: 'running' })
      await checkAgainstWarehouse(runDeps, table)
      const resumed = dryRun
        ? []
        : await mergeLeftStaged(runDeps, run, table, { allowMassDelete: options.allowMassDelete })
      const leftStaged = dryRun ? (await runDeps.staging.committed()).map((m) => m.batchId) : []
      const extractedAt = options.extractedAt ?? deps.clock()
      const batchId = makeBatchId(extractedAt)
      // Under the table's lease, a batch nobody committed was left by a run that no longer holds it.
      const { rows } = await extractInRun(runDeps, run, table, { batchId, extractedAt, abandonedAfterMs: 0 })
      const { merge } = await mergeInRun(runDeps, run, table, {
        batchId,
        allowMassDelete: options.allowMassDelete,
        dryRun,
        ...(options.inspectKeys !== undefined ? { inspectKeys: options.inspectKeys } : {}),
      })
      return {
        runId,
        table: table.name,
        resumed: resumed.map((r) => r.merge),
        ...(leftStaged.length > 0 ? { leftStaged } : {}),
        batchId,
        rows,
        merge,
      }
    } finally {
      await deps.releaseWarehouse?.()
    }
  })
}

/**
 * The config against the dimension's recorded contract and the watermark against the warehouse's ledger, before
 * anything is extracted or merged; a DuckDB file is closed again for the extract (another table's run may merge).
 */
export async function checkAgainstWarehouse(deps: RunMergeDeps, table: TableSpec): Promise<void> {
  try {
    await assertStateAgreesWithWarehouse({ ...deps, warehouse: await deps.openWarehouse() }, table)
  } finally {
    await deps.releaseWarehouse?.()
  }
}
