import { inferredColumnName } from '../core/inferred-member.ts'
import { WORK, type MergeSql } from './merge-sql.ts'
import { renderRowHash } from './row-hash.ts'

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
  if (m.p.table.mode === 'append' || !m.p.layout.removed.some((c) => c.name === flag)) return
  const n = m.names
  const deleted = m.deleteEvent('s')
  const order = [m.eventTime, ...(m.sequenced ? [m.col('s', m.p.layout.sequence!.name)] : [])].join(', ')
  const first =
    `SELECT ${m.stored.map((c) => m.col('s', c)).join(', ')},\n` +
    `    ${renderRowHash(m.d, m.p.layout.tracked, 's')} AS ${m.q(WORK.rowHash)},\n` +
    `    ${m.eventTime} AS ${m.q(WORK.t)},\n` +
    `    ROW_NUMBER() OVER (PARTITION BY ${m.keyList('s')} ORDER BY ${order}) AS ${m.q(WORK.rank)}\n` +
    `  FROM ${m.stage} s${deleted === undefined ? '' : `\n  WHERE NOT (${deleted})`}`
  const validFrom = m.q(n.validFrom)
  const set = [
    ...m.attributes.map((c) => `${m.q(c)} = e.${m.q(c)}`),
    `${m.q(n.rowHash)} = e.${m.q(WORK.rowHash)}`,
    `${validFrom} = CASE WHEN e.${m.q(WORK.t)} < d.${validFrom} THEN e.${m.q(WORK.t)} ELSE d.${validFrom} END`,
    `${m.q(n.batchId)} = ${m.str(m.p.batchId)}`,
    `${m.q(flag)} = FALSE`,
  ]
  m.emit(
    'complete inferred members with their first real event',
    `UPDATE ${m.dim} AS d SET ${set.join(', ')}\nFROM (\n  ${first}\n) e\n` +
      `WHERE e.${m.q(WORK.rank)} = 1 AND ${m.keyEq('d', 'e')} AND d.${m.q(flag)} IS TRUE AND ${m.current('d')}`,
  )
}
