import { randomBytes } from 'node:crypto'

import type { Logger } from '@aws-lambda-powertools/logger'
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics'

import { makeBatchId } from '../../lib/core/batch-id.ts'
import { ConfigError, StagingError } from '../../lib/core/errors.ts'
import type { RunRecord } from '../../lib/core/run-record.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { Source } from '../../lib/ports/source.ts'
import type { StagingStore } from '../../lib/ports/staging-store.ts'
import type { StateStore } from '../../lib/ports/state-store.ts'
import type { Warehouse } from '../../lib/ports/warehouse.ts'
import {
  extractPass,
  HeldLease,
  mergeLeftStaged,
  mergeStep,
  type WatermarkOutcome,
} from '../../lib/use-cases/pipeline-steps.ts'
import type { MergeBatchResult } from '../../lib/use-cases/merge-batch.ts'
import type { ExtractEvent, ExtractOutput, MergeEvent } from './events.ts'

/** What the two functions need from their container (`AwsDeps` fits; tests may wrap a store). */
export interface FunctionDeps {
  readonly project: { readonly warehouse: { readonly schema: string } }
  readonly settings: { readonly leaseTtlMs: number; readonly abandonedBatchMs: number }
  readonly staging: StagingStore
  readonly state: StateStore
  readonly clock: () => Date
  table(name: string): TableSpec
  prepareSources(): Promise<void>
  openSource(table: TableSpec): Source
  checkSourceColumns(table: TableSpec, columns: readonly string[]): void
  warehouse(): Promise<Warehouse>
}

export interface Telemetry {
  readonly logger: Logger
  readonly metrics: Metrics
  /** Distinguishes concurrent invocations in lease owners (the Lambda request id). */
  readonly invocationId: string
}

/** The run id of a batch: extract and merge of one batch update the same run record. */
export function runIdOf(batchId: string): string {
  return `run-${batchId}`
}

/**
 * The extract function's work: take the table's lease, remove abandoned uncommitted batches, extract into a
 * new staged batch, write its manifest only if the lease is still ours, record the run as running (awaiting
 * its merge), release the lease. Returns `{ table, batchId, rows, bytes, complete: true }` for the merge.
 *
 * An extract that would outlast the invocation (`timeLeftMs`) stops between two key ranges, saves its parts and
 * where to continue in staging, keeps the lease for its next pass and returns `complete: false` with `resume`;
 * the state machine calls it again with `{ table, batchId, resume }` until it is complete. A pass whose batch
 * was already committed (the answer to the last pass was lost and the call retried) returns that batch.
 */
export async function runExtract(
  deps: FunctionDeps,
  event: ExtractEvent,
  t: Telemetry,
  timeLeftMs?: () => number,
): Promise<ExtractOutput> {
  const configured = deps.table(event.table)
  const table = withMode(configured, event.mode)
  const resuming = event.resume !== undefined && event.batchId !== undefined
  const now = deps.clock()
  const batchId = resuming ? event.batchId! : makeBatchId(now)
  const startedAt = resuming ? new Date(startedAtOf(batchId) ?? now.toISOString()) : now
  const runId = runIdOf(batchId)
  t.logger.appendKeys({
    table: table.name,
    batchId,
    runId,
    mode: table.extract.mode,
    reason: event.reason,
    ...(resuming ? { resumeAfterPass: event.resume!.pass } : {}),
  })
  t.metrics.addDimension('table', table.name)

  // The run id is new for every first pass, so one owner per extract; its later passes take the lease over.
  const lease = await HeldLease.acquire(
    deps.state,
    table.name,
    `${runId}/extract`,
    deps.settings.leaseTtlMs,
    deps.clock,
  )
  const record = (patch: Partial<RunRecord> & Pick<RunRecord, 'status'>) =>
    deps.state.recordRun({ runId, table: table.name, startedAt: startedAt.toISOString(), batchId, ...patch })
  let handedOver = false
  try {
    t.logger.info('lease acquired', {
      step: 'lock',
      token: lease.current.token,
      expiresAt: lease.current.expiresAt,
    })
    if (resuming) {
      const committed = (await deps.staging.listBatches(table.name)).find((m) => m.batchId === batchId)
      if (committed !== undefined) {
        t.logger.info('batch already committed by an earlier call of this pass', { step: 'extract' })
        const bytes = committed.parts.reduce((sum, part) => sum + part.bytes, 0)
        return { table: table.name, batchId, rows: committed.rowCount, bytes, complete: true }
      }
    }
    const removed = await deps.staging.removeAbandoned(
      table.name,
      new Date(now.getTime() - deps.settings.abandonedBatchMs),
    )
    if (removed.length > 0) t.logger.warn('removed abandoned staged batches', { step: 'cleanup', removed })
    await record({ status: 'running' })
    await deps.prepareSources()
    const started = Date.now()
    const pass = await extractPass(deps, table, {
      batchId,
      extractedAt: startedAt,
      resume: resuming,
      ...(timeLeftMs ? { timeLeftMs } : {}),
      beforeCommit: () => lease.assertHeld(),
      beforeSuspend: () => lease.assertHeld(),
    })
    const ms = Date.now() - started
    t.metrics.addMetric('ExtractDuration', MetricUnit.Milliseconds, ms)
    if (!pass.complete) {
      await lease.handOver()
      handedOver = true
      await record({ status: 'running', rowsExtracted: pass.rows })
      t.logger.info('extract paused before the time limit; the next pass continues it', {
        step: 'extract',
        pass: pass.checkpoint.pass,
        rows: pass.rows,
        bytes: pass.bytes,
        parts: pass.checkpoint.parts.length,
        durationMs: ms,
      })
      return {
        table: table.name,
        batchId,
        rows: pass.rows,
        bytes: pass.bytes,
        complete: false,
        resume: { pass: pass.checkpoint.pass },
      }
    }
    const { manifest, bytes } = pass
    await record({ status: 'running', rowsExtracted: manifest.rowCount })
    t.metrics.addMetric('RowsExtracted', MetricUnit.Count, manifest.rowCount)
    t.metrics.addMetric('BytesStaged', MetricUnit.Bytes, bytes)
    t.logger.info('batch staged', {
      step: 'extract',
      rows: manifest.rowCount,
      bytes,
      parts: manifest.parts.length,
      durationMs: ms,
    })
    return { table: table.name, batchId, rows: manifest.rowCount, bytes, complete: true }
  } catch (error) {
    await record({ status: 'failed', finishedAt: deps.clock().toISOString(), error: messageOf(error) }).catch(
      () => undefined,
    )
    t.metrics.addMetric('ExtractFailed', MetricUnit.Count, 1)
    t.logger.error('extract failed', { step: 'extract', error: error as Error })
    throw error
  } finally {
    if (!handedOver) await lease.release()
  }
}

export interface MergeOutput {
  readonly table: string
  readonly batchId: string
  readonly status: MergeBatchResult['status']
  readonly watermark: WatermarkOutcome
  readonly counts?: MergeBatchResult['counts']
}

/**
 * The merge function's work: take the table's lease, merge the staged batch (the lease's fencing token is
 * checked inside the transaction just before COMMIT; a batch already in the warehouse ledger is skipped),
 * advance the watermark, record the run, delete the staged batch, release the lease. A retried invocation
 * whose batch was already merged and deleted finds the succeeded run record and returns `already-applied`.
 */
export async function runMerge(deps: FunctionDeps, event: MergeEvent, t: Telemetry): Promise<MergeOutput> {
  const table = deps.table(event.table)
  const { batchId } = event
  const runId = runIdOf(batchId)
  t.logger.appendKeys({ table: table.name, batchId, runId })
  t.metrics.addDimension('table', table.name)

  const lease = await HeldLease.acquire(
    deps.state,
    table.name,
    ownerOf(runId, 'merge', t),
    deps.settings.leaseTtlMs,
    deps.clock,
  )
  let startedAt: string | undefined
  try {
    t.logger.info('lease acquired', {
      step: 'lock',
      token: lease.current.token,
      expiresAt: lease.current.expiresAt,
    })
    const previous = (await deps.state.listRuns(table.name, 50)).find((run) => run.runId === runId)
    startedAt = previous?.startedAt
    const started = Date.now()
    const stepDeps = {
      staging: deps.staging,
      state: deps.state,
      warehouse: await deps.warehouse(),
      schema: deps.project.warehouse.schema,
      clock: deps.clock,
    }
    // History is applied in order: a batch an earlier run staged and failed to merge goes first.
    await mergeLeftStaged(stepDeps, table, {
      before: batchId,
      beforeCommit: () => lease.assertHeld(),
      onMerged: ({ merge, watermark }) =>
        t.logger.info('merged a batch an earlier run left staged', {
          step: 'resume',
          resumedBatchId: merge.batchId,
          status: merge.status,
          counts: merge.counts,
          watermark,
        }),
    })
    let outcome
    try {
      outcome = await mergeStep(stepDeps, table, { batchId, beforeCommit: () => lease.assertHeld() })
    } catch (error) {
      // Merged, recorded and deleted by an earlier invocation whose answer was lost: nothing left to do.
      if (error instanceof StagingError && previous?.status === 'succeeded') {
        t.logger.info('batch already merged and removed from staging', {
          step: 'merge',
          status: 'already-applied',
        })
        t.metrics.addMetric('BatchesAlreadyApplied', MetricUnit.Count, 1)
        return { table: table.name, batchId, status: 'already-applied', watermark: 'unchanged' }
      }
      throw error
    }
    const ms = Date.now() - started
    const { merge, manifest, watermark } = outcome
    startedAt ??= startedAtOf(batchId) ?? manifest.extractedAt
    const counts = merge.counts
    t.logger.info(merge.status === 'merged' ? 'batch merged' : 'batch already applied', {
      step: 'merge',
      status: merge.status,
      counts,
      keys: merge.keys,
      durationMs: ms,
    })
    t.logger.info('watermark', {
      step: 'watermark',
      outcome: watermark,
      candidate: manifest.watermarkCandidate,
    })
    if (merge.status === 'merged' && counts) {
      t.metrics.addMetric('VersionsInserted', MetricUnit.Count, counts.insertedVersions)
      t.metrics.addMetric('VersionsClosed', MetricUnit.Count, counts.closedVersions)
      t.metrics.addMetric('KeysDeleted', MetricUnit.Count, counts.deletedKeys)
      t.metrics.addMetric('UnchangedEvents', MetricUnit.Count, counts.unchangedEvents)
      t.metrics.addMetric('LateKeys', MetricUnit.Count, counts.lateKeys)
    } else {
      t.metrics.addMetric('BatchesAlreadyApplied', MetricUnit.Count, 1)
    }
    t.metrics.addMetric('MergeDuration', MetricUnit.Milliseconds, ms)
    await deps.state.recordRun({
      ...(previous ?? {}),
      runId,
      table: table.name,
      startedAt,
      status: 'succeeded',
      finishedAt: deps.clock().toISOString(),
      batchId,
      rowsExtracted: manifest.rowCount,
      ...(counts ? { counts } : {}),
      error: undefined,
    })
    t.logger.info('run recorded', { step: 'record', status: 'succeeded' })
    await deps.staging.deleteBatch(table.name, batchId)
    return { table: table.name, batchId, status: merge.status, watermark, ...(counts ? { counts } : {}) }
  } catch (error) {
    await deps.state
      .recordRun({
        runId,
        table: table.name,
        startedAt: startedAt ?? startedAtOf(batchId) ?? deps.clock().toISOString(),
        batchId,
        status: 'failed',
        finishedAt: deps.clock().toISOString(),
        error: messageOf(error),
      })
      .catch(() => undefined)
    t.metrics.addMetric('MergeFailed', MetricUnit.Count, 1)
    t.logger.error('merge failed', { step: 'merge', error: error as Error })
    throw error
  } finally {
    await lease.release()
  }
}

/** The table with its extract mode overridden by the event (a full reload of an incremental table). */
function withMode(table: TableSpec, mode: ExtractEvent['mode']): TableSpec {
  if (mode === undefined || mode === table.extract.mode) return table
  if (mode === 'full') return { ...table, extract: { mode: 'full' } }
  throw new ConfigError('extract event', [
    `mode: table ${table.name} is configured for full extracts; "incremental" needs extract.cursor in dimsync.yaml`,
  ])
}

/** Lease owner: the run, the step and the invocation, so two invocations of one step never share a lease. */
function ownerOf(runId: string, step: string, t: Telemetry): string {
  const invocation = t.invocationId || randomBytes(4).toString('hex')
  return `${runId}/${step}/${invocation}`
}

/**
 * The extraction instant encoded in a batch id made by `makeBatchId` (`20240310T143000.000Z-3f9a1c`), which the
 * extract also uses as its run's `startedAt`: the merge updates the same run record even when it has to write
 * it first (the extract's record was lost, or the batch was staged by other means).
 */
export function startedAtOf(batchId: string): string | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})\.(\d{3})Z-/.exec(batchId)
  if (!m) return undefined
  const iso = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${m[7]}Z`
  return Number.isNaN(Date.parse(iso)) ? undefined : iso
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
