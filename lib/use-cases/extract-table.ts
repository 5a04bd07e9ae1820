import type { BatchManifest } from '../core/batch.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { extractPass, type ExtractPassDeps } from './extract-pass.ts'
import { inTableRun, type RunOfStep, type TableRun, type TableRunDeps } from './table-run.ts'

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

export interface ExtractTableRequest extends ExtractRequest {
  readonly run: RunOfStep
}

/**
 * The extract step as a run of its own (the extract function): take the table's lease, extract into a staged
 * batch, write its manifest only if the lease is still ours, record the run as running (awaiting its merge),
 * release the lease. A pass that stops before its time limit keeps the lease for the next pass instead.
 */
export async function extractTable(
  deps: ExtractTableDeps,
  table: TableSpec,
  request: ExtractTableRequest,
): Promise<ExtractResult> {
  return await inTableRun(
    deps,
    {
      ...request.run,
      table: table.name,
      batchId: request.batchId,
      startedAt: request.extractedAt.toISOString(),
    },
    (run) => extractInRun(deps, run, table, request),
  )
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
): Promise<ExtractResult> {
  const { batchId } = request
  const report = deps.onEvent ?? (() => undefined)
  if (request.resume) {
    const committed = (await deps.staging.listBatches(table.name)).find((m) => m.batchId === batchId)
    if (committed !== undefined) {
      report({ step: 'already-staged', table: table.name, batchId, rows: committed.rowCount })
      return {
        complete: true,
        batchId,
        manifest: committed,
        rows: committed.rowCount,
        bytes: bytesOf(committed),
      }
    }
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
    await run.handOver()
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
  })
  return { complete: true, batchId, manifest, rows: manifest.rowCount, bytes }
}

function bytesOf(manifest: BatchManifest): number {
  return manifest.parts.reduce((sum, part) => sum + part.bytes, 0)
}
