import { assertFactMatchesSource } from '../config/fact-source-check.ts'
import { makeBatchId, makeRunId } from '../core/batch-id.ts'
import { factStagingTable, type FactSpec } from '../core/fact-spec.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { extractInRun } from './extract-table.ts'
import { loadFactBatch, type LoadFactBatchResult, type UnknownMemberCount } from './load-fact-batch.ts'
import { repointFacts } from './repoint-facts.ts'
import { reportMemoryRaised } from './run-event.ts'
import { advanceWatermark, leftStagedRefusal } from './merge-step.ts'
import type { RunMergeDeps } from './merge-table.ts'
import { withRunStaging } from './run-staging.ts'
import type { PipelineDeps } from './run-table.ts'
import { inTableRun, type TableRun } from './table-run.ts'

export interface RunFactOptions {
  /** Extraction time of the batch; default: now. */
  readonly extractedAt?: Date
  readonly leaseTtlMs?: number
  /**
   * `dimsync plan`: extract, run the load and its checks and report the counts, roll it back and discard the
   * staged batch (no watermark, no run record, no unknown member added; batches left staged stay).
   */
  readonly dryRun?: boolean
}

export interface RunFactResult {
  readonly runId: string
  readonly fact: string
  /** Batches an interrupted run left staged, loaded first. */
  readonly resumed: readonly LoadFactBatchResult[]
  readonly batchId: string
  readonly rows: number
  readonly load: LoadFactBatchResult
  /** Per reference, stored facts re-pointed after the load (late dimension changes). */
  readonly repointed: readonly UnknownMemberCount[]
}

const DEFAULT_LEASE_TTL_MS = 10 * 60_000

/**
 * One run of one fact table (`dimsync run`, after the dimensions): under the fact's lease, load the batches an
 * interrupted run left staged, extract a new batch of the fact's source (whole, or after the cursor's watermark),
 * load it (loadFactBatch), advance the watermark, re-point the stored facts whose version changed since they were
 * loaded (repointFacts), record the run and remove the staged batch. As for tables, a
 * crash anywhere leaves a state the next run completes, and a batch is never loaded twice.
 */
export async function runFact(
  deps: PipelineDeps,
  fact: FactSpec,
  dimensions: readonly TableSpec[],
  options: RunFactOptions = {},
): Promise<RunFactResult> {
  const startedAt = deps.clock()
  const runId = makeRunId(startedAt)
  const table = factStagingTable(fact)
  const dryRun = options.dryRun ?? false
  const request = {
    table: fact.name,
    runId,
    leaseTtlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    startedAt: startedAt.toISOString(),
    recorded: !dryRun,
  }
  return await inTableRun(deps, request, async (run) => {
    // Under the lease the fact's staging is listed once; every step of the run reads that listing.
    const runDeps = withRunStaging(deps, table)
    try {
      await run.record({ status: 'running' })
      const resumed: LoadFactBatchResult[] = []
      const left = dryRun ? [] : await runDeps.staging.committed()
      for (const manifest of left) {
        try {
          resumed.push(await loadStaged(runDeps, run, fact, dimensions, manifest.batchId))
        } catch (error) {
          throw leftStagedRefusal(error, fact.name, manifest.batchId)
        }
      }
      const extractedAt = options.extractedAt ?? deps.clock()
      const batchId = makeBatchId(extractedAt)
      // The fact's own columns are checked against its source, not a dimension's.
      const extractDeps = Object.assign(Object.create(runDeps) as PipelineDeps, {
        checkSourceColumns: (_table: TableSpec, columns: readonly string[]) =>
          assertFactMatchesSource(fact, columns),
      })
      const { rows } = await extractInRun(extractDeps, run, table, {
        batchId,
        extractedAt,
        abandonedAfterMs: 0,
      })
      if (dryRun) {
        const load = await dryRunLoad(runDeps, fact, dimensions, batchId)
        return { runId, fact: fact.name, resumed, batchId, rows, load, repointed: [] }
      }
      const load = await loadStaged(runDeps, run, fact, dimensions, batchId)
      // Late dimension events may have moved windows facts already point through: re-point those facts.
      const warehouse = await deps.openWarehouse()
      const repointed = await repointFacts({ warehouse }, { fact, dimensions, schema: deps.schema })
      await run.record({
        status: 'succeeded',
        finishedAt: deps.clock().toISOString(),
        batchId,
        rowsExtracted: rows,
        error: undefined,
      })
      return { runId, fact: fact.name, resumed, batchId, rows, load, repointed }
    } finally {
      await deps.releaseWarehouse?.()
    }
  })
}

/** Loads one staged batch of the fact, advances the watermark, removes the batch from staging. */
async function loadStaged(
  deps: RunMergeDeps<PipelineDeps>,
  run: TableRun,
  fact: FactSpec,
  dimensions: readonly TableSpec[],
  batchId: string,
): Promise<LoadFactBatchResult> {
  const manifest = await deps.staging.manifestOf(batchId)
  await run.lease.assertHeld()
  const warehouse = await deps.openWarehouse()
  const load = await loadFactBatch(
    { warehouse, staging: deps.staging },
    {
      fact,
      dimensions,
      schema: deps.schema,
      batchId,
      now: deps.clock(),
      onMemoryRaised: reportMemoryRaised(deps, fact.name),
    },
  )
  await advanceWatermark(deps.state, fact.name, manifest?.watermarkCandidate)
  await deps.staging.deleteBatch(fact.name, batchId)
  return load
}

/** Runs the load of the staged batch and its checks, rolls it back, then discards the batch. */
async function dryRunLoad(
  deps: PipelineDeps,
  fact: FactSpec,
  dimensions: readonly TableSpec[],
  batchId: string,
): Promise<LoadFactBatchResult> {
  try {
    const warehouse = await deps.openWarehouse()
    return await loadFactBatch(
      { warehouse, staging: deps.staging },
      { fact, dimensions, schema: deps.schema, batchId, now: deps.clock(), dryRun: true },
    )
  } finally {
    await deps.staging.deleteBatch(fact.name, batchId)
  }
}
