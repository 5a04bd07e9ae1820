import { OutOfOrderBatchError } from '../core/errors.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import type { MergePlan } from '../sql/merge-sql.ts'
import { renderLastMergedBatchQuery, renderMergedSinceQuery } from '../sql/render-batch-queries.ts'
import { renderSnapshotDifferences } from '../sql/render-snapshot-comparison.ts'

/**
 * A snapshot table's history only grows at its end: each snapshot's versions start at its extraction time. So a
 * staged snapshot (loaded into the plan's stage) extracted at an instant the dimension has already reached is
 * either a re-delivery of a snapshot already merged (the same run again, a retry after a crash, a backfill run
 * again), which changes nothing, or one that can never be merged.
 *
 * Returns the id of the merged batch this snapshot repeats (same extraction time, same content: the merge is
 * skipped), or undefined when it is new (extracted after every merged batch). Throws `OutOfOrderBatchError` when
 * it differs from the snapshot merged at the same instant, or is older than the last one merged and repeats
 * none: nothing was written, and the message names the way out.
 */
export async function findRepeatedSnapshot(
  warehouse: Warehouse<SqlDialect>,
  plan: MergePlan,
): Promise<string | undefined> {
  if (plan.table.validFrom.kind !== 'extracted_at' || plan.layout.createDimension) return undefined
  const d = warehouse.dialect
  const [merged] = await warehouse.query(
    renderMergedSinceQuery(d, plan.objects.batches, plan.table.target, plan.extractedAt),
  )
  const sameTime = merged?.same_time_batch ?? null
  const later = Number(merged?.later ?? 0) > 0
  if (sameTime === null && !later) return undefined
  // Columns still to rename (renamed:) are read by their new names only after the merge's DDL.
  if (sameTime !== null && plan.layout.addColumns.length === 0 && plan.layout.renamed === undefined) {
    const [compared] = await warehouse.query(renderSnapshotDifferences(d, plan, { withType1: !later }))
    if (Number(compared?.differences) === 0) return String(sameTime)
  }
  const { table, batchId, extractedAt } = plan
  const [last] = await warehouse.query(renderLastMergedBatchQuery(d, plan.objects.batches, table.target))
  const lastAt = String(last?.extracted_at)
  const why =
    sameTime !== null
      ? `but a different snapshot at that extraction time is already merged (batch ${String(sameTime)})`
      : `not after batch ${String(last?.batch_id)} (extracted at ${lastAt}) which is already merged`
  throw new OutOfOrderBatchError(
    table.name,
    batchId,
    `table ${table.name}: batch ${batchId} was extracted at ${extractedAt}, ${why}; a snapshot's versions ` +
      'start at its extraction time, so snapshots of this table are merged in extraction order and this one ' +
      'cannot be: nothing was written and the batch was removed from staging. To load this snapshot, run it ' +
      `again with a later --extracted-at (after ${lastAt})`,
  )
}
