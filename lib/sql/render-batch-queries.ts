import type { TableRef } from '../core/table-ref.ts'
import type { SqlDialect } from './dialect.ts'
import { TEMP, WORK, type MergePlan } from './render-merge.ts'
import { overwrittenVersionsQuery } from './render-version-column.ts'
import { currentVersion } from './version-predicates.ts'

/**
 * Reads of the batch ledger (`_dimsync_batches`, one row per merged batch; see renderBatchLedgerDdl): whether a
 * batch is applied, and what a merge did.
 */

/** One row (`applied = 1`) when the batch is recorded as applied to `target`, none otherwise. */
export function renderAppliedBatchQuery(
  d: SqlDialect,
  batches: TableRef,
  target: string,
  batchId: string,
): string {
  return `SELECT 1 AS applied FROM ${d.table(batches)} WHERE ${isBatch(d, target, batchId)}`
}

/**
 * What the ledger says of `target`, one row per fact (`fact`, `batch_id`, `payload`): `applied` for each of
 * `batchIds` the ledger holds; `contract`, the contract recorded last (by applied time) and the batch that
 * recorded it; `watermark`, the last batch that recorded a watermark, with it; `any`, one row whose batch_id is
 * NULL when the ledger holds no batch of `target` at all.
 */
export function renderLedgerFactsQuery(
  d: SqlDialect,
  batches: TableRef,
  target: string,
  batchIds: readonly string[],
): string {
  const ledger = d.table(batches)
  const ofTarget = `target = ${d.stringLiteral(target)}`
  const noText = `CAST(NULL AS ${d.type('string')})`
  const last = (column: string) =>
    `SELECT ${d.stringLiteral(column)} AS fact, batch_id, payload FROM (\n` +
    `  SELECT batch_id, ${d.quoteIdentifier(column)} AS payload FROM ${ledger}\n` +
    `  WHERE ${ofTarget} AND ${d.quoteIdentifier(column)} IS NOT NULL ORDER BY applied_at DESC, batch_id DESC LIMIT 1\n) l_${column}`
  const parts = [
    ...(batchIds.length === 0
      ? []
      : [
          `SELECT 'applied' AS fact, batch_id, ${noText} AS payload FROM ${ledger}\n` +
            `WHERE ${ofTarget} AND batch_id IN (${batchIds.map((id) => d.stringLiteral(id)).join(', ')})`,
        ]),
    last('contract'),
    last('watermark'),
    `SELECT 'any' AS fact, MIN(batch_id) AS batch_id, ${noText} AS payload FROM ${ledger} WHERE ${ofTarget}`,
  ]
  return parts.join('\nUNION ALL\n')
}

/**
 * One row about the batches of `target` extracted at or after `extractedAt` (an ISO instant): `same_time_batch`, one
 * extracted at that very instant (NULL when none), and `later` (1 when one was extracted after it, else 0 or NULL).
 */
export function renderMergedSinceQuery(
  d: SqlDialect,
  batches: TableRef,
  target: string,
  extractedAt: string,
): string {
  const at = d.timestampLiteral(extractedAt)
  return (
    `SELECT MIN(CASE WHEN extracted_at = ${at} THEN batch_id END) AS same_time_batch,\n` +
    `  MAX(CASE WHEN extracted_at > ${at} THEN 1 ELSE 0 END) AS later\n` +
    `FROM ${d.table(batches)} WHERE target = ${d.stringLiteral(target)} AND extracted_at >= ${at}`
  )
}

/** The last batch merged into `target` (`batch_id`, and `extracted_at` as a string); no row when none. */
export function renderLastMergedBatchQuery(d: SqlDialect, batches: TableRef, target: string): string {
  return (
    `SELECT batch_id, ${d.castToString('extracted_at')} AS extracted_at FROM ${d.table(batches)}\n` +
    `WHERE target = ${d.stringLiteral(target)} ORDER BY extracted_at DESC, batch_id DESC LIMIT 1`
  )
}

/**
 * One row, read in the merge's session right after its last statement: the batch's ledger row (events,
 * inserted_versions, closed_versions, deleted_keys, unchanged_events, late_keys) plus what the fast path did to
 * keys (new_keys, changed_keys, deleted_key_changes), from the merge's temporary change table. With the plan of a
 * mirror, or of a table whose change_detection overwrites a version at the same version, also `overwritten_keys`:
 * keys whose row or version the batch overwrote in place (counted among unchanged events in the ledger, as type 1
 * changes are).
 */
export function renderBatchReport(
  d: SqlDialect,
  batches: TableRef,
  target: string,
  batchId: string,
  plan?: MergePlan,
): string {
  const w = (column: string) => d.quoteIdentifier(column)
  const first = `${w(WORK.changeNo)} = 1`
  const overwritten = plan === undefined ? undefined : overwrittenKeysQuery(d, plan)
  return (
    `SELECT b.events, b.inserted_versions, b.closed_versions, b.deleted_keys, b.unchanged_events, b.late_keys,\n` +
    `  k.new_keys, k.changed_keys, k.deleted_keys AS deleted_key_changes${overwritten ? ', o.overwritten_keys' : ''}\n` +
    `FROM ${d.table(batches)} b CROSS JOIN (\n` +
    `  SELECT SUM(CASE WHEN ${first} AND NOT ${w(WORK.hadCurrent)} AND NOT ${w(WORK.del)} THEN 1 ELSE 0 END) AS new_keys,\n` +
    `    SUM(CASE WHEN ${first} AND ${w(WORK.hadCurrent)} AND NOT ${w(WORK.del)} THEN 1 ELSE 0 END) AS changed_keys,\n` +
    `    SUM(CASE WHEN ${w(WORK.del)} THEN 1 ELSE 0 END) AS deleted_keys\n` +
    `  FROM ${d.table({ name: TEMP.changes })}\n) k\n` +
    (overwritten ? `CROSS JOIN (\n  ${overwritten}\n) o\n` : '') +
    `WHERE ${isBatch(d, target, batchId, 'b.')}`
  )
}

/**
 * A mirror's keys whose current row now holds other values than before the batch (the merge's copy of the type 1
 * values before it, which a mirror's every column is). Undefined for other tables.
 */
function overwrittenKeysQuery(d: SqlDialect, plan: MergePlan): string | undefined {
  const columns = plan.layout.type1.map((c) => d.quoteIdentifier(c.name))
  if (plan.table.mode !== 'mirror') return overwrittenVersionsQuery(d, plan)
  if (columns.length === 0) return undefined
  const keys = plan.table.key.map((k) => d.quoteIdentifier(k))
  return (
    `SELECT COUNT(*) AS overwritten_keys FROM ${d.table({ name: TEMP.type1Before })} p\n` +
    `  JOIN ${d.table(plan.objects.dimension)} r ON ${keys.map((k) => `r.${k} = p.${k}`).join(' AND ')} AND ${currentVersion(d, plan.table, 'r')}\n` +
    `  WHERE ${columns.map((c) => `r.${c} IS DISTINCT FROM p.${c}`).join(' OR ')}`
  )
}

function isBatch(d: SqlDialect, target: string, batchId: string, qualifier = ''): string {
  return `${qualifier}target = ${d.stringLiteral(target)} AND ${qualifier}batch_id = ${d.stringLiteral(batchId)}`
}
