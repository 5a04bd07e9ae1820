import { inferredColumnName } from '../core/inferred-member.ts'
import type { TableRef } from '../core/table-ref.ts'
import { WORK, type MergeSql } from './merge-sql.ts'
import { CAPTURE_SEQUENCE_COLUMN } from './render-ddl.ts'
import { DELETED_STATE, renderRowHash } from './row-hash.ts'

/**
 * Completes inferred members (placeholders facts created for keys the dimension did not hold yet; see
 * lib/core/inferred-member.ts) with their key's first real event of this batch, in place and before the merge
 * diffs the batch: the attributes and the row hash become the event's, the flag is cleared, the surrogate key is
 * kept, and the window keeps its start (or starts earlier, at the event, when the event is older), so the facts
 * loaded early still fall in it. The event then equals the version that covers it, and the merge adds no version
 * for it; the key's later events in the batch version as usual. Renders nothing for a dimension without the flag
 * column (no fact ever inferred a member of it) and for append-only tables.
 */
export function renderInferredCompletion(m: MergeSql): void {
  const flag = inferredColumnName(m.names)
  if (m.p.table.mode === 'append' || !m.p.layout.hasInferredFlag) return
  const n = m.names
  const validFrom = m.q(n.validFrom)
  const t = m.q(WORK.t)
  const placeholder = `d.${m.q(flag)} IS TRUE AND ${m.current('d')}`
  const completing = firstEvents(m, false)
  if (m.p.objects.captures !== undefined) logPlaceholderStates(m, m.p.objects.captures, placeholder)
  const start = `CASE WHEN e.${t} < d.${validFrom} THEN e.${t} ELSE d.${validFrom} END`
  const set = [
    ...m.attributes.map((c) => `${m.q(c)} = e.${m.q(c)}`),
    `${m.q(n.rowHash)} = e.${m.q(WORK.rowHash)}`,
    `${validFrom} = ${start}`,
    `${m.q(n.batchId)} = ${m.str(m.p.batchId)}`,
    `${m.q(flag)} = FALSE`,
  ]
  m.emit(
    'complete inferred members with their first real event',
    `UPDATE ${m.dim} AS d SET ${set.join(', ')}${m.dbtIdAssignments('d', start)}\nFROM (\n  ${completing}\n) e\n` +
      `WHERE e.${m.q(WORK.rank)} = 1 AND ${m.keyEq('d', 'e')} AND ${placeholder}`,
  )
}

/**
 * The staged events of each key ranked by time (and sequence): `rank` 1 is the key's first. Deletions are left
 * out unless `withDeletes`.
 */
function firstEvents(m: MergeSql, withDeletes: boolean): string {
  const deleted = m.deleteEvent('s')
  const order = [m.eventTime, ...(m.sequenced ? [m.col('s', m.p.layout.sequence!.name)] : [])].join(', ')
  const sequence = m.sequenced ? `,\n    ${m.col('s', m.p.layout.sequence!.name)} AS ${m.q(WORK.order)}` : ''
  return (
    `SELECT ${m.stored.map((c) => m.col('s', c)).join(', ')},\n` +
    `    ${renderRowHash(m.d, m.p.layout.tracked, 's')} AS ${m.q(WORK.rowHash)},\n` +
    `    ${m.eventTime} AS ${m.q(WORK.t)}${sequence},\n` +
    `    ROW_NUMBER() OVER (PARTITION BY ${m.keyList('s')} ORDER BY ${order}) AS ${m.q(WORK.rank)}\n` +
    `  FROM ${m.stage} s${deleted === undefined || withDeletes ? '' : `\n  WHERE NOT (${deleted})`}`
  )
}

/**
 * Tables with a capture log (valid_from from a column: late events) rebuild a late key's windows from its
 * captured states, and keep an existing version only where it starts at a capture. A placeholder is a state no
 * source captured, so before this batch's events are logged, its state from its start is logged for every
 * placeholder key the batch has events of: the state it is completed with (from the completed start), or its own
 * while it stays a placeholder (the batch only deletes the key). History rebuilt from the log then keeps the
 * placeholder's window and surrogate key, and an event older than the placeholder is late, not a close before its
 * start. The capture's sequence (sequenced feeds) is that of the key's first event.
 *
 * Not when the completing event itself starts the version and no deletion of the key comes before it: the event
 * is logged as usual then, and must stay in the batch (a capture at its time would drop it as re-delivered, and
 * with it the check that makes the key late when an older batch captured a later change of it).
 */
function logPlaceholderStates(m: MergeSql, captures: TableRef, placeholder: string): void {
  const n = m.names
  const t = m.q(WORK.t)
  const validFrom = `d.${m.q(n.validFrom)}`
  const start = `CASE WHEN f.${t} IS NOT NULL AND f.${t} < ${validFrom} THEN f.${t} ELSE ${validFrom} END`
  const seq = m.sequenced
  const columns = [
    ...m.keys.map((k) => m.q(k)),
    'captured_at',
    ...(seq ? [m.q(CAPTURE_SEQUENCE_COLUMN)] : []),
    'state_hash',
    'is_deleted',
    'batch_id',
  ]
  // Only deletions of the key, one of them at the placeholder's very start: that deletion is the state logged
  // there (the event is then the logged one, and a placeholder window is never closed where it starts).
  const deletedAtStart = `(f.${t} IS NULL AND EXISTS (SELECT 1 FROM ${m.stage} s WHERE ${m.keyEq('s', 'd')} AND ${m.eventTime} = ${start}))`
  const values = [
    ...m.keys.map((k) => m.col('d', k)),
    start,
    ...(seq ? [`COALESCE(f.${m.q(WORK.order)}, a.${m.q(WORK.order)})`] : []),
    `CASE WHEN ${deletedAtStart} THEN ${m.str(DELETED_STATE)} ELSE COALESCE(f.${m.q(WORK.rowHash)}, d.${m.q(n.rowHash)}) END`,
    deletedAtStart,
    m.str(m.p.batchId),
  ]
  const log = m.d.table(captures)
  // The state an earlier batch logged for the placeholder (only deletions of its key came then) is logged anew.
  m.emit(
    'forget the logged states of inferred members the batch has events of',
    `DELETE FROM ${log} c WHERE NOT c.is_deleted\n` +
      `  AND EXISTS (SELECT 1 FROM ${m.dim} d WHERE ${m.keyEq('d', 'c')} AND ${placeholder} AND ${validFrom} = c.captured_at)\n` +
      `  AND EXISTS (SELECT 1 FROM ${m.stage} s WHERE ${m.keyEq('s', 'c')})`,
  )
  m.emit(
    'log the states of inferred members the batch has events of',
    `INSERT INTO ${log} (${columns.join(', ')})\n` +
      `SELECT ${values.join(', ')}\nFROM ${m.dim} d\n` +
      `JOIN (\n  ${firstEvents(m, true)}\n) a ON ${m.keyEq('a', 'd')} AND a.${m.q(WORK.rank)} = 1\n` +
      `LEFT JOIN (\n  ${firstEvents(m, false)}\n) f ON ${m.keyEq('f', 'd')} AND f.${m.q(WORK.rank)} = 1\n` +
      `WHERE ${placeholder}\n` +
      `  AND (f.${t} IS NULL OR f.${t} > ${validFrom} OR a.${t} < f.${t})\n` +
      `  AND NOT EXISTS (SELECT 1 FROM ${log} c WHERE ${m.keyEq('c', 'd')} AND c.captured_at = ${start})`,
  )
}
