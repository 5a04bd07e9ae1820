import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { CommittedBatch, SqlDialect } from './dialect.ts'
import { renderBatchLedgerDdl } from './render-ddl.ts'

/**
 * What a batch script does when its batch is already in the ledger (an earlier attempt committed it, then failed
 * at a statement after COMMIT, or its answer was lost): it creates the ledger if missing, finds the batch's row,
 * drops the staging table and answers the counts the merge recorded inside its transaction, and stops. The batch
 * is neither merged again nor refused.
 */
export function renderCommittedBatch(
  d: SqlDialect,
  batches: TableRef,
  target: string,
  batchId: string,
  stage: TableRef,
): CommittedBatch {
  return {
    ledger: renderBatchLedgerDdl(d, batches),
    isCommitted: `EXISTS (SELECT 1 FROM ${d.table(batches)} WHERE ${isBatch(d, target, batchId)})`,
    after: [
      { label: 'drop staging table', sql: d.dropTableIfExists(stage) },
      { label: 'report recorded counts', sql: renderRecordedCountsQuery(d, batches, target, batchId) },
    ],
  }
}

/** The counts the ledger recorded for a batch (one row, none when the batch is not recorded). */
export function renderRecordedCountsQuery(
  d: SqlDialect,
  batches: TableRef,
  target: string,
  batchId: string,
): string {
  return (
    'SELECT events, inserted_versions, closed_versions, deleted_keys, unchanged_events, late_keys\n' +
    `FROM ${d.table(batches)} WHERE ${isBatch(d, target, batchId)}`
  )
}

/**
 * Inside the merge's transaction, after its ledger row is written: a second row of the batch aborts the merge
 * (rolled back). The ledger's primary key is not enforced on every warehouse (BigQuery), so the ledger refuses it
 * itself: a concurrent merge of the same batch that committed first leaves this one nothing to write.
 */
export function renderLedgerOnceCheck(
  d: SqlDialect,
  batches: TableRef,
  target: string,
  batchId: string,
): CompiledStatement {
  const message =
    `${d.stringLiteral(`batch ${batchId} of ${target} would be recorded `)} || ${d.castToString('COUNT(*)')} || ` +
    `${d.stringLiteral(' times in the batch ledger (another merge of it committed first); this merge was rolled back, so the batch is applied once')}`
  return {
    label: 'check the batch is recorded once',
    sql:
      `SELECT ${d.raiseError(message)} FROM ${d.table(batches)}\n` +
      `WHERE ${isBatch(d, target, batchId)} HAVING COUNT(*) > 1`,
  }
}

function isBatch(d: SqlDialect, target: string, batchId: string): string {
  return `target = ${d.stringLiteral(target)} AND batch_id = ${d.stringLiteral(batchId)}`
}
