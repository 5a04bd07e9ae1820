import { makeRunId } from '../core/batch-id.ts'
import { DimsyncError } from '../core/errors.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import { listStaged } from './run-staging.ts'
import { inTableRun, type TableRunDeps } from './table-run.ts'

export interface DiscardDeps extends TableRunDeps {
  readonly staging: StagingStore
}

/** Long enough for a discard to list and delete a table's staged batches. */
const DISCARD_LEASE_TTL_MS = 10 * 60_000

/**
 * Deletes staged batches of a table that were never merged (all, or one), so the next run does not retry them:
 * committed ones (a refused batch an operator decided must not be applied) and uncommitted ones (an extract that
 * died). Under the table's lease, so an extract at work is never pulled from under it (`LockHeldError`). Returns
 * the deleted ids: committed ones in merge order, then uncommitted ones.
 */
export async function discardBatches(deps: DiscardDeps, table: string, batchId?: string): Promise<string[]> {
  const startedAt = deps.clock()
  const request = {
    table,
    runId: makeRunId(startedAt),
    leaseTtlMs: DISCARD_LEASE_TTL_MS,
    recorded: false,
  }
  return await inTableRun(deps, request, async () => {
    const staged = await listStaged(deps.staging, table)
    const pending = [...staged.committed.map((m) => m.batchId), ...staged.uncommitted.map((b) => b.batchId)]
    const chosen = batchId === undefined ? pending : pending.filter((id) => id === batchId)
    if (batchId !== undefined && chosen.length === 0)
      throw new DimsyncError(
        `table ${table}: no staged batch ${batchId} (staged: ${pending.join(', ') || 'none'})`,
      )
    for (const id of chosen) await deps.staging.deleteBatch(table, id)
    return chosen
  })
}

/** A batch of a table in staging, as `discard --list` shows it. */
export type StagedBatchEntry =
  | {
      readonly batchId: string
      readonly state: 'committed'
      readonly extractedAt: string
      readonly rows: number
    }
  | {
      readonly batchId: string
      /** `suspended`: between passes of a multi-pass extract; `uncommitted`: an extract at work or one that died. */
      readonly state: 'uncommitted' | 'suspended'
      readonly lastWrittenAt: string
    }

/**
 * The batches of a table in staging, committed ones in merge order, then uncommitted ones: what `discard` would
 * delete, by id. Reads only (no lease): a batch may be committed or removed right after.
 */
export async function listStagedBatches(
  deps: { readonly staging: StagingStore },
  table: string,
): Promise<StagedBatchEntry[]> {
  const staged = await listStaged(deps.staging, table)
  const committed = staged.committed.map((m): StagedBatchEntry => ({
    batchId: m.batchId,
    state: 'committed',
    extractedAt: m.extractedAt,
    rows: m.rowCount,
  }))
  const uncommitted = staged.uncommitted.map((b): StagedBatchEntry => ({
    batchId: b.batchId,
    state: b.suspended ? 'suspended' : 'uncommitted',
    lastWrittenAt: b.lastWrittenAt,
  }))
  return [...committed, ...uncommitted]
}
