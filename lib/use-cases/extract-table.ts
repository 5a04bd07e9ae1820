import type { BatchManifest } from '../core/batch.ts'
import { LeaseLostError, LockHeldError } from '../core/errors.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { extractPass, type ExtractPassDeps } from './extract-pass.ts'
import { withRunStaging } from './run-staging.ts'
import { inTableRun, RECENT_RUNS, type RunOfStep, type TableRun, type TableRunDeps } from './table-run.ts'

export interface ExtractTableDeps extends ExtractPassDeps, TableRunDeps {
  /** Prepares what sources need (resolves their secrets); called once the lease is held, before the extract. */
  readonly prepareSources?: () => Promise<void>
}

export interface ExtractRequest {
  readonly batchId: string
  /** The batch's extraction time (a resumed batch keeps the one its first pass saved). */
  readonly extractedAt: Date
  /** Continue batch `batchId`, suspended by an earlier pass of this run. */
  readonly resume?: boolean
  /** Milliseconds the pass may still run; when given, the extract may stop early and suspend the batch. */
  readonly timeLeftMs?: () => number
  /** Remove uncommitted batches older than this (extracts that died) before extracting; default: keep them. */
  readonly abandonedAfterMs?: number
}

export type ExtractResult =
  | {
      readonly complete: true
      readonly batchId: string
      readonly manifest: BatchManifest
      /** Rows and bytes staged (every pass of the batch). */
      readonly rows: number
      readonly bytes: number
    }
  | {
      readonly complete: false
      readonly batchId: string
      /** Passes done so far: the next call resumes after this one. */
      readonly pass: number
      readonly rows: number
      readonly bytes: number
    }

/** A first pass that found another run on the table and was asked to skip rather than fail. */
export interface SkippedExtract {
  readonly skipped: true
  /** The owner of the lease that made this run skip, and since when it holds it. */
  readonly heldBy: string
  readonly since: string
}

export interface ExtractTableRequest extends ExtractRequest {
  readonly run: RunOfStep & {
    /**
     * How long a lease handed over to the next pass lasts: at least the longest wait before that pass runs
     * (the orchestration's retries), so no other run takes the table in between. Default: `leaseTtlMs`.
     */
    readonly handOverTtlMs?: number
  }
  /**
   * What a first pass does when another run holds the table: `fail` (default) with `LockHeldError` at once,
   * `skip`: record the run as skipped and return `SkippedExtract` (a scheduled start: the next one comes soon).
   */
  readonly whenBusy?: 'fail' | 'skip'
  /**
   * The batch's merge is a later step of this run (the merge function): a complete extract hands the lease over
   * to the run for `run.handOverTtlMs` instead of releasing it, so no other run takes the table before the merge.
   */
  readonly holdForMerge?: boolean
}

/**
 * The extract step as a run of its own (the extract function): take the table's lease, extract into a staged
 * batch, write its manifest only if the lease is still ours, record the run as running (awaiting its merge),
 * release the lease, or with `holdForMerge` hand it over to the run for its merge. A pass that stops before its
 * time limit keeps the lease for the next pass instead, and so does a resumed pass that fails with a retryable
 * error (its retry continues the batch).
 *
 * A resumed pass must find the lease its earlier pass handed over. When it does not (it expired and another
 * run took the table, perhaps loading a newer batch), the batch is abandoned: it is removed, the run is
 * recorded as failed and `LeaseLostError` says so. Merging it would put older data after newer.
 */
export async function extractTable(
  deps: ExtractTableDeps,
  table: TableSpec,
  request: ExtractTableRequest,
): Promise<ExtractResult | SkippedExtract> {
  const owner = request.run.owner ?? request.run.runId
  const handOverTtlMs = Math.max(request.run.handOverTtlMs ?? 0, request.run.leaseTtlMs)
  let working = false
  try {
    return await inTableRun(
      deps,
      {
        ...request.run,
        table: table.name,
        batchId: request.batchId,
        startedAt: request.extractedAt.toISOString(),
      },
      async (run) => {
        working = true
        // Under the lease the table's staging is listed once; every step of the pass reads that listing.
        const runDeps = withRunStaging(deps, table)
        const holder = run.lease.current.previousHolder
        if (request.resume && holder !== owner) {
          const committed = await committedResult(runDeps, table, request.batchId)
          if (committed !== undefined) return committed
          if (await wasStarted(runDeps, table, request))
            throw await abandonBatch(runDeps, table, request.batchId, owner, holder)
        }
        try {
          const result = await extractInRun(runDeps, run, table, request, handOverTtlMs)
          // The batch is committed whatever happens here: a lease that cannot be handed over is released.
          if (result.complete && request.holdForMerge)
            await run.handOverToRun(handOverTtlMs).catch(() => undefined)
          return result
        } catch (error) {
          if (request.resume && (error as { retryable?: unknown }).retryable === true)
            await run.handOver(handOverTtlMs).catch(() => undefined)
          throw error
        }
      },
    )
  } catch (error) {
    if (working || !(error instanceof LockHeldError)) throw error
    if (request.resume) {
      const committed = await committedResult(deps, table, request.batchId)
      if (committed !== undefined) return committed
      if (!(await wasStarted(deps, table, request))) throw error
      const lost = await abandonBatch(deps, table, request.batchId, owner, error.holder)
      await recordEnded(deps, table, request, 'failed', lost.message)
      throw lost
    }
    if (request.whenBusy !== 'skip') throw error
    await recordEnded(
      deps,
      table,
      request,
      'skipped',
      `skipped: the table was busy (run ${error.holder} holds it since ${error.since})`,
    )
    return { skipped: true, heldBy: error.holder, since: error.since }
  }
}

/**
 * Whether an earlier pass of this run staged the batch: it is still suspended, or the run has a record (the
 * run that took the table may have removed the batch meanwhile). A batch id nothing ever staged is left to
 * `resumeBatch`'s own refusal.
 */
async function wasStarted(
  deps: ExtractTableDeps,
  table: TableSpec,
  request: ExtractTableRequest,
): Promise<boolean> {
  const { batchId } = request
  if ((await deps.staging.listUncommitted(table.name)).some((b) => b.batchId === batchId && b.suspended))
    return true
  return (await deps.state.listRuns(table.name, RECENT_RUNS)).some((r) => r.runId === request.run.runId)
}

/**
 * Removes the suspended batch of a run that lost the table between two passes (unless the run that took the
 * table removed it already), and returns the error that says so. The batch is this run's own: removing it needs
 * no lease.
 */
async function abandonBatch(
  deps: ExtractTableDeps,
  table: TableSpec,
  batchId: string,
  owner: string,
  holder: string | undefined,
): Promise<LeaseLostError> {
  await deps.staging.deleteBatch(table.name, batchId)
  const meanwhile =
    holder === undefined ? 'it was released' : holder === owner ? 'it expired' : `run ${holder} took it`
  return new LeaseLostError(
    table.name,
    `table ${table.name}: batch ${batchId} was abandoned and removed: the lease its earlier pass handed over ` +
      `was lost before this pass (${meanwhile}); another run may have loaded newer data meanwhile, so the ` +
      'next run extracts again',
  )
}

/** The record of a run that ended without taking the table (skipped, or a resumed pass that lost it). */
async function recordEnded(
  deps: ExtractTableDeps,
  table: TableSpec,
  request: ExtractTableRequest,
  status: 'skipped' | 'failed',
  error: string,
): Promise<void> {
  await deps.state.recordRun({
    runId: request.run.runId,
    table: table.name,
    status,
    startedAt: request.extractedAt.toISOString(),
    finishedAt: deps.clock().toISOString(),
    ...(status === 'failed' ? { batchId: request.batchId } : {}),
    error,
  })
  deps.onEvent?.({ step: 'record', table: table.name, runId: request.run.runId, status })
}

/**
 * Extracts `table` into batch `request.batchId` within a run that holds the table's lease. A resumed pass whose
 * batch is already committed (the answer to its last call was lost) returns that batch. With `timeLeftMs`, an
 * extract that would outlast it is suspended with a checkpoint and the lease is handed over to the next pass.
 */
export async function extractInRun(
  deps: ExtractTableDeps,
  run: TableRun,
  table: TableSpec,
  request: ExtractRequest,
  handOverTtlMs?: number,
): Promise<ExtractResult> {
  const { batchId } = request
  const report = deps.onEvent ?? (() => undefined)
  if (request.resume) {
    const committed = await committedResult(deps, table, batchId)
    if (committed !== undefined) return committed
  }
  if (request.abandonedAfterMs !== undefined) {
    const olderThan = new Date(deps.clock().getTime() - request.abandonedAfterMs)
    const removed = await deps.staging.removeAbandoned(table.name, olderThan)
    if (removed.length > 0) report({ step: 'cleanup', table: table.name, removed })
  }
  await run.record({ status: 'running', batchId })
  await deps.prepareSources?.()
  const started = Date.now()
  const seconds = () => (Date.now() - started) / 1000
  const pass = await extractPass(deps, table, {
    batchId,
    extractedAt: request.extractedAt,
    resume: request.resume,
    ...(request.timeLeftMs ? { timeLeftMs: request.timeLeftMs } : {}),
    beforeCommit: () => run.lease.assertHeld(),
    beforeSuspend: () => run.lease.assertHeld(),
    onProgress: (rows) => report({ step: 'progress', table: table.name, rows, seconds: seconds() }),
  })
  if (!pass.complete) {
    await run.handOver(handOverTtlMs)
    await run.record({ status: 'running', rowsExtracted: pass.rows })
    const { checkpoint, rows, bytes } = pass
    report({
      step: 'extract-paused',
      table: table.name,
      batchId,
      pass: checkpoint.pass,
      rows,
      bytes,
      parts: checkpoint.parts.length,
      seconds: seconds(),
    })
    return { complete: false, batchId, pass: checkpoint.pass, rows, bytes }
  }
  const { manifest, bytes } = pass
  await run.record({ status: 'running', rowsExtracted: manifest.rowCount })
  report({
    step: 'extract',
    table: table.name,
    batchId,
    rows: manifest.rowCount,
    bytes,
    parts: manifest.parts.length,
    seconds: seconds(),
    source: manifest.sourceDescription,
  })
  return { complete: true, batchId, manifest, rows: manifest.rowCount, bytes }
}

/**
 * The batch as committed by an earlier call of this pass whose answer was lost (reported as `already-staged`),
 * or undefined when it is not committed.
 */
async function committedResult(
  deps: ExtractTableDeps,
  table: TableSpec,
  batchId: string,
): Promise<ExtractResult | undefined> {
  const committed = (await deps.staging.listBatches(table.name)).find((m) => m.batchId === batchId)
  if (committed === undefined) return undefined
  deps.onEvent?.({ step: 'already-staged', table: table.name, batchId, rows: committed.rowCount })
  return { complete: true, batchId, manifest: committed, rows: committed.rowCount, bytes: bytesOf(committed) }
}

function bytesOf(manifest: BatchManifest): number {
  return manifest.parts.reduce((sum, part) => sum + part.bytes, 0)
}
