import { DimsyncError } from '../core/errors.ts'
import type { StagingStore } from '../ports/staging-store.ts'

/**
 * Deletes staged batches of a table that were never merged (all, or one), so the next run does not retry them.
 * For an operator who decided a refused batch (a truncated extract, say) must not be applied. Returns their ids.
 */
export async function discardBatches(
  staging: StagingStore,
  table: string,
  batchId?: string,
): Promise<string[]> {
  const pending = (await staging.listBatches(table)).map((m) => m.batchId)
  const chosen = batchId === undefined ? pending : pending.filter((id) => id === batchId)
  if (batchId !== undefined && chosen.length === 0)
    throw new DimsyncError(
      `table ${table}: no staged batch ${batchId} (staged: ${pending.join(', ') || 'none'})`,
    )
  for (const id of chosen) await staging.deleteBatch(table, id)
  return chosen
}
