import { makeBatchId, makeRunId } from '../core/batch-id.ts'
import type { BatchManifest } from '../core/batch.ts'
import { BatchRejectedError } from '../core/errors.ts'
import type { MergeCounts, RunRecord } from '../core/run-record.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { Source } from '../ports/source.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { Lease, StateStore } from '../ports/state-store.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import { mergeBatch, type MergeBatchResult } from './merge-batch.ts'

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
 */
export async function runTable(
  deps: PipelineDeps,
  table: TableSpec,
  options: RunTableOptions = {},
): Promise<RunTableResult> {
  const startedAt = deps.clock()
  const runId = makeRunId(startedAt)
  const ttl = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS
  let lease = await deps.state.acquireLease(table.name, runId, ttl, startedAt)
  deps.onEvent?.({ step: 'lock', table: table.name, runId })
  const renew = setInterval(() => {
    deps.state.renewLease(lease, ttl, deps.clock()).then(
      (renewed) => (lease = renewed),
      () => undefined, // a lost lease is detected by assertLeaseHeld before COMMIT
    )
  }, ttl / 3)
  renew.unref()
  const record = (patch: Partial<RunRecord> & Pick<RunRecord, 'status'>) =>
    deps.state.recordRun({ runId, table: table.name, startedAt: startedAt.toISOString(), ...patch })
  await record({ status: 'running' })
  let batchId: string | undefined
  try {
    const resumed: MergeBatchResult[] = []
    if (!options.dryRun) {
      for (const manifest of await deps.staging.listBatches(table.name)) {
        deps.onEvent?.({ step: 'resume', table: table.name, batchId: manifest.batchId })
        try {
          resumed.push(await mergeAndAdvance(deps, table, manifest, () => lease, options))
        } catch (error) {
          if (!(error instanceof BatchRejectedError)) throw error
          // The same batch would be refused again on every run: say how to get past it.
          throw new BatchRejectedError(
            table.name,
            manifest.batchId,
            `${error.message}. This batch was staged by an earlier run; rerun with the option named above, or ` +
              `drop it with: dimsync discard --table ${table.name} --batch ${manifest.batchId}`,
          )
        }
      }
    }

    const extractedAt = options.extractedAt ?? deps.clock()
    batchId = makeBatchId(extractedAt)
    const manifest = await extract(deps, table, batchId, extractedAt)
    const merge = options.dryRun
      ? await dryRun(deps, table, manifest, options)
      : await mergeAndAdvance(deps, table, manifest, () => lease, options)
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
    clearInterval(renew)
    await deps.state.releaseLease(lease).catch(() => undefined)
  }
}

async function extract(
  deps: PipelineDeps,
  table: TableSpec,
  batchId: string,
  extractedAt: Date,
): Promise<BatchManifest> {
  const started = Date.now()
  const watermark =
    table.extract.mode === 'incremental' ? await deps.state.getWatermark(table.name) : undefined
  const writer = await deps.staging.beginBatch(table.name, batchId)
  const source = deps.openSource(table)
  try {
    const result = await source.extract({
      table,
      batchId,
      extractedAt,
      watermark,
      writer,
      onProgress: (rows) =>
        deps.onEvent?.({ step: 'progress', table: table.name, rows, seconds: (Date.now() - started) / 1000 }),
    })
    deps.checkSourceColumns?.(
      table,
      result.columns.map((c) => c.name),
    )
    const manifest = await writer.commit({
      table: table.name,
      batchId,
      extractedAt: extractedAt.toISOString(),
      mode: table.extract.mode,
      rowCount: result.rows,
      columns: result.columns,
      watermarkCandidate: result.watermarkCandidate,
      sourceDescription: result.sourceDescription,
    })
    deps.onEvent?.({
      step: 'extract',
      table: table.name,
      batchId,
      rows: result.rows,
      seconds: (Date.now() - started) / 1000,
    })
    return manifest
  } catch (error) {
    await writer.abort().catch(() => undefined)
    throw error
  } finally {
    await source.close()
  }
}

async function mergeAndAdvance(
  deps: PipelineDeps,
  table: TableSpec,
  manifest: BatchManifest,
  currentLease: () => Lease,
  options: RunTableOptions,
): Promise<MergeBatchResult> {
  const started = Date.now()
  const watermark = manifest.watermarkCandidate ? await deps.state.getWatermark(table.name) : undefined
  const result = await mergeBatch(deps, {
    table,
    schema: deps.schema,
    batchId: manifest.batchId,
    now: deps.clock(),
    allowMassDelete: options.allowMassDelete,
    beforeCommit: () => deps.state.assertLeaseHeld(currentLease(), deps.clock()),
  })
  // Applied (now or by a run that crashed before this point): only then may the watermark move.
  if (manifest.watermarkCandidate)
    await deps.state.commitWatermark(table.name, manifest.watermarkCandidate, watermark)
  await deps.staging.deleteBatch(table.name, manifest.batchId)
  deps.onEvent?.({
    step: 'merge',
    table: table.name,
    batchId: manifest.batchId,
    result,
    seconds: (Date.now() - started) / 1000,
  })
  return result
}

async function dryRun(
  deps: PipelineDeps,
  table: TableSpec,
  manifest: BatchManifest,
  options: RunTableOptions,
): Promise<MergeBatchResult> {
  try {
    return await mergeBatch(deps, {
      table,
      schema: deps.schema,
      batchId: manifest.batchId,
      now: deps.clock(),
      allowMassDelete: options.allowMassDelete,
      dryRun: true,
    })
  } finally {
    await deps.staging.deleteBatch(table.name, manifest.batchId)
  }
}
