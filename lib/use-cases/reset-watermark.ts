import { makeRunId } from '../core/batch-id.ts'
import type { Watermark } from '../core/batch.ts'
import { DimsyncError } from '../core/errors.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { dimensionObjects } from '../sql/render-ddl.ts'
import { stagedMode } from './extract-pass.ts'
import { readLedgerFacts } from './ledger-facts.ts'
import type { MergeTableDeps } from './merge-table.ts'
import { mergeStepDeps } from './merge-table.ts'
import { inTableRun } from './table-run.ts'
import { lastWatermark } from './warehouse-agreement.ts'

/** Long enough to read the ledger and write the watermark. */
const RESET_LEASE_TTL_MS = 10 * 60_000

export interface ResetWatermarkResult {
  /** The watermark before, and after (undefined: none, the next run reads every row). */
  readonly before?: Watermark
  readonly after?: Watermark
  /** The ledger's batch the watermark was set to (undefined: the ledger holds none with a watermark). */
  readonly batchId?: string
}

/**
 * `dimsync reset-watermark`: sets the table's watermark to what the warehouse holds, the watermark recorded by the
 * last batch of its ledger (none when the ledger holds no such batch: the next run then reads every row), under
 * the table's lease. The way out when the state store and the warehouse disagree (a warehouse lost or restored
 * from an older copy, a state restored): the next delta reads from where the dimension really is.
 */
export async function resetWatermark(deps: MergeTableDeps, table: TableSpec): Promise<ResetWatermarkResult> {
  if (stagedMode(table) !== 'incremental')
    throw new DimsyncError(
      `table ${table.name} is read whole on every run (extract: full): it has no watermark to reset`,
    )
  const startedAt = deps.clock()
  const request = {
    table: table.name,
    runId: makeRunId(startedAt),
    leaseTtlMs: RESET_LEASE_TTL_MS,
    recorded: false,
  }
  return await inTableRun(deps, request, async () => {
    try {
      const { warehouse } = await mergeStepDeps(deps)
      const objects = dimensionObjects(table, deps.schema)
      const ledger = await readLedgerFacts(warehouse, {
        batches: objects.batches,
        target: table.target,
        batchIds: [],
        create: false,
      })
      const last = lastWatermark(ledger)
      const before = await deps.state.getWatermark(table.name)
      const after = last === undefined ? undefined : { ...last.watermark, batchId: last.batchId }
      await deps.state.resetWatermark(table.name, after, before)
      return {
        ...(before !== undefined ? { before } : {}),
        ...(after !== undefined ? { after } : {}),
        ...(last !== undefined ? { batchId: last.batchId } : {}),
      }
    } finally {
      await deps.releaseWarehouse?.()
    }
  })
}
