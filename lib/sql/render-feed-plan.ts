import { CAPTURE_SEQUENCE_COLUMN } from './render-ddl.ts'
import { MergeSql, type MergePlan } from './merge-sql.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * What `dimsync plan` says of a change feed's batch beyond the merge's counts, read from the staged rows before
 * the merge: one row of `events` (rows read), `keys_touched` (distinct keys), `delete_events`,
 * `truncate_events`, and `corrections`: events at the change time of an earlier event of their key with a lower
 * sequence (in the batch, or captured by an earlier batch when `captureLogExists`), which restate that moment
 * instead of opening a version at a new time (0 without a sequence: such events are refused, not corrected).
 */
export function renderFeedPlanQuery(d: SqlDialect, plan: MergePlan, captureLogExists: boolean): string {
  const m = new MergeSql(d, plan)
  const feed = plan.table.changes
  const validFrom = plan.layout.validFromColumn
  if (feed === undefined || validFrom === undefined)
    throw new Error(`table ${plan.table.name} is not a change feed`)
  const stage = m.rawStage
  const operation = plan.layout.operation
  const opIn = (alias: string, values: readonly string[]) =>
    operation === undefined || values.length === 0
      ? 'FALSE'
      : `COALESCE(${d.castToString(m.col(alias, operation.name))} IN (${values.map((v) => m.str(v)).join(', ')}), FALSE)`
  const keyed = (alias: string) => m.keys.map((k) => `${m.col(alias, k)} IS NOT NULL`).join(' AND ')
  const time = (alias: string) => d.castToTimestamp(m.col(alias, validFrom.name))
  const sequence = plan.layout.sequence
  let corrections = '0'
  if (sequence !== undefined) {
    const earlier = [
      `EXISTS (SELECT 1 FROM ${stage} p WHERE ${m.keyEq('p', 's')} AND ${time('p')} = ${time('s')} AND ${m.col('p', sequence.name)} < ${m.col('s', sequence.name)})`,
    ]
    if (captureLogExists && plan.objects.captures !== undefined)
      earlier.push(
        `EXISTS (SELECT 1 FROM ${d.table(plan.objects.captures)} c WHERE ${m.keyEq('c', 's')} AND c.captured_at = ${time('s')} ` +
          `AND c.${d.quoteIdentifier(CAPTURE_SEQUENCE_COLUMN)} < ${m.col('s', sequence.name)})`,
      )
    corrections = `(SELECT COUNT(*) FROM ${stage} s WHERE ${keyed('s')} AND (${earlier.join(' OR ')}))`
  }
  // Emitted to have the short names a column of the table would shadow renamed, as in the merge.
  m.emit(
    'what the feed batch holds',
    `SELECT (SELECT COUNT(*) FROM ${stage} s) AS events,\n` +
      `  (SELECT COUNT(*) FROM (SELECT DISTINCT ${m.keyList('s')} FROM ${stage} s WHERE ${keyed('s')}) k) AS keys_touched,\n` +
      `  (SELECT COUNT(*) FROM ${stage} s WHERE ${m.deleteEvent('s') ?? 'FALSE'}) AS delete_events,\n` +
      `  (SELECT COUNT(*) FROM ${stage} s WHERE ${opIn('s', feed.operation.truncate ?? [])}) AS truncate_events,\n` +
      `  ${corrections} AS corrections`,
  )
  return m.out[0]!.sql
}
