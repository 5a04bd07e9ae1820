import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { SqlDialect } from './dialect.ts'
import { MergeSql, type MergePlan } from './merge-sql.ts'
import { CAPTURE_SEQUENCE_COLUMN } from './render-ddl.ts'

/** The staged rows with each truncate replaced by its delete events, which the rest of the merge reads. */
export const TRUNCATED_STAGE = '__dimsync_truncated'

/**
 * A change feed's truncate events (`ops.truncate`: a TRUNCATE TABLE a CDC tool wrote, Databricks'
 * `apply_as_truncates`): each closes every key that has a state at its change time, as a delete event of that key
 * at that time (and sequence) would. Before any check, the staged rows are copied without the truncate rows (which
 * name no key), and one delete event is added per truncate and key known at it: a key of the dimension or of the
 * batch with a version or an event at or before the truncate. The rest of the merge (`render`) reads that copy and
 * treats them as any delete: `deletes: invalidate` closes the version at the truncate's time, `new_record` opens a
 * version flagged deleted, `ignore` drops them; a key already deleted then is left as it is. The delete events are
 * logged like any other, so a late event of a known key is slotted in before the truncate that ended it.
 *
 * Each truncate is also recorded in the truncate log (DimensionObjects.truncates): a key first seen in a later batch,
 * with an event before a truncate merged earlier, gets that truncate's delete event too, so it is ended as if it had
 * arrived in time. A key the dimension already held at the truncate has that delete event logged already: the one
 * added again is the same event, re-delivered, and changes nothing.
 */
export function withTruncates(
  d: SqlDialect,
  plan: MergePlan,
  render: (plan: MergePlan) => CompiledStatement[],
): CompiledStatement[] {
  const m = new MergeSql(d, plan)
  const feed = plan.table.changes
  const truncate = feed?.operation.truncate ?? []
  const operation = plan.layout.operation
  const validFrom = plan.layout.validFromColumn
  if (feed === undefined || truncate.length === 0 || operation === undefined || validFrom === undefined)
    return render(plan)
  const stage = m.rawStage
  const isTruncate = (alias: string) =>
    `COALESCE(${d.castToString(m.col(alias, operation.name))} IN (${truncate.map((v) => m.str(v)).join(', ')}), FALSE)`
  const time = (alias: string) => d.castToTimestamp(m.col(alias, validFrom.name))
  const notNullKey = (alias: string) => m.keys.map((k) => `${m.col(alias, k)} IS NOT NULL`).join(' AND ')
  const sequence = plan.layout.sequence
  const order = [validFrom.name, ...(sequence === undefined ? [] : [sequence.name])]
  const deleteValue = `CAST(${m.str(feed.operation.delete[0]!)} AS ${d.columnType(operation.type, {
    table: plan.table.name,
    column: operation.name,
  })})`
  const firstAt = m.q('__dimsync_first_at')
  m.emit(
    'truncates: the staged rows without the truncate rows',
    d.createTempTableAs(TRUNCATED_STAGE, `SELECT * FROM ${stage} s WHERE NOT ${isTruncate('s')}`),
  )
  m.emit(
    'truncates: a delete event of every key known at each truncate',
    `INSERT INTO ${m.tmp(TRUNCATED_STAGE)} (${[...m.keys, ...order, operation.name].map((c) => m.q(c)).join(', ')})\n` +
      `SELECT ${[...m.keys.map((k) => m.col('k', k)), ...order.map((c) => m.col('t', c))].join(', ')}, ${deleteValue}\n` +
      `FROM (SELECT DISTINCT ${order.map((c) => m.col('s', c)).join(', ')} FROM ${stage} s WHERE ${isTruncate('s')}) t\n` +
      `JOIN (\n` +
      `  SELECT ${m.keyList('d')}, MIN(${m.col('d', m.names.validFrom)}) AS ${firstAt} FROM ${m.dim} d ` +
      `WHERE ${notNullKey('d')} GROUP BY ${m.keyList('d')}\n` +
      `  UNION ALL\n` +
      `  SELECT ${m.keyList('s')}, MIN(${time('s')}) AS ${firstAt} FROM ${stage} s ` +
      `WHERE ${notNullKey('s')} AND NOT ${isTruncate('s')} GROUP BY ${m.keyList('s')}\n` +
      `) k ON k.${firstAt} <= ${time('t')}\n` +
      `GROUP BY ${[...m.keys.map((k) => m.col('k', k)), ...order.map((c) => m.col('t', c))].join(', ')}`,
  )
  const log = plan.objects.truncates
  if (log !== undefined) {
    const logged = d.table(log)
    const seq = sequence === undefined ? undefined : m.q(CAPTURE_SEQUENCE_COLUMN)
    const sameTruncate = `${time('s')} = r.captured_at${seq === undefined ? '' : ` AND ${m.col('s', sequence!.name)} = r.${seq}`}`
    const validFromType = d.columnType(validFrom.type, { table: plan.table.name, column: validFrom.name })
    m.emit(
      'truncates: a delete event of every batch key with a state before a truncate merged earlier',
      `INSERT INTO ${m.tmp(TRUNCATED_STAGE)} (${[...m.keys, ...order, operation.name].map((c) => m.q(c)).join(', ')})\n` +
        `SELECT ${m.keys.map((k) => m.col('k', k)).join(', ')}, CAST(r.captured_at AS ${validFromType})` +
        `${seq === undefined ? '' : `, r.${seq}`}, ${deleteValue}\n` +
        `FROM ${logged} r\n` +
        `JOIN (SELECT ${m.keyList('s')}, MIN(${time('s')}) AS ${firstAt} FROM ${stage} s ` +
        `WHERE ${notNullKey('s')} AND NOT ${isTruncate('s')} GROUP BY ${m.keyList('s')}) k ON k.${firstAt} <= r.captured_at\n` +
        `WHERE NOT EXISTS (SELECT 1 FROM ${stage} s WHERE ${isTruncate('s')} AND ${sameTruncate})\n` +
        `GROUP BY ${[...m.keys.map((k) => m.col('k', k)), 'r.captured_at', ...(seq === undefined ? [] : [`r.${seq}`])].join(', ')}`,
    )
    m.emit(
      "truncates: record the batch's truncates in the truncate log",
      `INSERT INTO ${logged} (captured_at, ${seq === undefined ? '' : `${seq}, `}batch_id)\n` +
        `SELECT DISTINCT ${time('s')}, ${seq === undefined ? '' : `${m.col('s', sequence!.name)}, `}${m.str(plan.batchId)} ` +
        `FROM ${stage} s WHERE ${isTruncate('s')}`,
    )
  }
  return [...m.out, ...render({ ...plan, stage: { name: TRUNCATED_STAGE } })]
}
