import type { Watermark } from '../core/batch.ts'
import type { CheckpointRecovery } from '../core/checkpoint-recovery.ts'
import type { RunStatus } from '../core/run-record.ts'
import type { MemoryRaised } from '../ports/warehouse.ts'
import type { MergeBatchResult } from './merge-batch.ts'
import type { WatermarkOutcome } from './merge-step.ts'

/**
 * What a run is doing, step by step: the CLI turns these into a progress line and log lines, the Lambdas into
 * Powertools log lines and metrics. Every step of extract-table.ts, merge-table.ts and run-table.ts reports
 * through this one type, so both runtimes see the same steps.
 */
export type RunEvent =
  | {
      readonly step: 'lock'
      readonly table: string
      readonly runId: string
      /** The lease owner (the run, or the run's step and invocation on Lambda). */
      readonly owner: string
      /** Fencing token of the lease. */
      readonly token: number
      readonly expiresAt: string
    }
  /**
   * The lease was taken over from run `runId`, which never released it (its process died, or its lease
   * expired). `record`: `interrupted` when its record said `running` and now says `failed` as interrupted; the
   * status it recorded itself when it had finished (it died before releasing the lease); `none` without a record.
   */
  | {
      readonly step: 'interrupted'
      readonly table: string
      readonly runId: string
      readonly by: string
      readonly record: 'interrupted' | Exclude<RunStatus, 'running'> | 'none'
    }
  /** Before the warehouse file was opened, a copy left by a process that died while it checkpointed was found. */
  | {
      readonly step: 'checkpoint-recovered'
      readonly path: string
      readonly recovery: CheckpointRecovery
    }
  /** Uncommitted batches older than the abandon limit were removed (extracts that died). */
  | { readonly step: 'cleanup'; readonly table: string; readonly removed: readonly string[] }
  /** A batch an earlier run staged but never merged was merged first (history is applied in order). */
  | {
      readonly step: 'resume'
      readonly table: string
      readonly batchId: string
      readonly result: MergeBatchResult
      readonly watermark: WatermarkOutcome
    }
  | { readonly step: 'progress'; readonly table: string; readonly rows: number; readonly seconds: number }
  /** The batch is staged and committed. */
  | {
      readonly step: 'extract'
      readonly table: string
      readonly batchId: string
      readonly rows: number
      readonly bytes: number
      readonly parts: number
      readonly seconds: number
      /** What was read, as the source describes it (a new-files source: which files, or that none was new). */
      readonly source?: string
    }
  /** The pass stopped before its time limit; the batch is suspended with a checkpoint for the next pass. */
  | {
      readonly step: 'extract-paused'
      readonly table: string
      readonly batchId: string
      /** Passes done so far. */
      readonly pass: number
      readonly rows: number
      readonly bytes: number
      readonly parts: number
      readonly seconds: number
    }
  /** A pass was called again after its batch was committed (its answer was lost): nothing to extract. */
  | {
      readonly step: 'already-staged'
      readonly table: string
      readonly batchId: string
      readonly rows: number
    }
  /** The merge of a staged batch starts (a long one shows as such on a terminal). */
  | { readonly step: 'merging'; readonly table: string; readonly batchId: string; readonly rows: number }
  /**
   * The merge ran out of the warehouse's default memory limit in `statement`: rolled back, it runs again at `to`
   * (DuckDB when DIMSYNC_DUCKDB_MEMORY_LIMIT is not set).
   */
  | ({ readonly step: 'memory-raised'; readonly table: string } & MemoryRaised)
  | {
      readonly step: 'merge'
      readonly table: string
      readonly batchId: string
      readonly result: MergeBatchResult
      readonly seconds: number
    }
  /** The batch was merged, recorded and removed by an earlier call whose answer was lost: nothing to merge. */
  | { readonly step: 'already-merged'; readonly table: string; readonly batchId: string }
  | {
      readonly step: 'watermark'
      readonly table: string
      readonly batchId: string
      readonly outcome: WatermarkOutcome
      readonly candidate?: Watermark
    }
  /** The run record was written with this status. */
  | { readonly step: 'record'; readonly table: string; readonly runId: string; readonly status: RunStatus }
  /** The run failed after it took the lease (recorded as failed); the error is rethrown to the caller. */
  | { readonly step: 'failed'; readonly table: string; readonly runId: string; readonly error: unknown }

/** Where a use case reports its events (nothing listens when undefined). */
export type RunEventListener = (event: RunEvent) => void

/** A transaction's `onMemoryRaised` for `table`: the `memory-raised` event on the run's listener. */
export function reportMemoryRaised(
  deps: { readonly onEvent?: RunEventListener },
  table: string,
): (raised: MemoryRaised) => void {
  return (raised) => deps.onEvent?.({ step: 'memory-raised', table, ...raised })
}
