import { TEMP, type MergeSql } from './merge-sql.ts'
import { refoldsPartialUpdates } from './render-ddl.ts'
import { rawWorkColumn } from './render-partial-refold.ts'

/**
 * Partial updates: the staged rows with each ignored NULL and each column not to update replaced by the value the
 * key had, folding the rows of a key in time (then sequence) order: an ignored NULL takes the newest non-NULL value
 * of the key's earlier rows in the batch, else its live current version's; a column not to update keeps the
 * current version's value (a new key: its first row's). A delete ends the key's state: a row after a delete of its
 * key in the batch folds only from the rows after that delete, like a new key (under `deletes: ignore` a delete
 * means nothing, and the rows fold past it). A row sent again, or late, lends its values to no other row. Every
 * later step reads these rows instead of the staged ones. A late row (older than a capture of its key) is folded
 * again, with the later captures of its key, from the raw values the capture log keeps (render-partial-refold.ts).
 */
export function renderPartialUpdates(m: MergeSql): void {
  const partial = m.p.layout.partial!
  const q = (name: string) => m.q(name)
  const attrs = [...new Set([...partial.ignoreNulls, ...partial.kept].map((c) => c.name))]
  const sequence = m.p.layout.sequence
  const order = `${m.eventTime}${sequence === undefined ? '' : `, ${m.col('s', sequence.name)}`}`
  // The key's era: how many deletes of the key precede the row in the batch. Rows fold within their era, and only
  // era 0 continues the version that was current before the batch.
  // Under `deletes: ignore` a delete means nothing (its events are dropped, and never captured, so a late refold
  // never sees them): the delete rows fold apart (era 1) and the other rows of the key fold on as if they were not
  // there, neither restarting nor taking the delete's values.
  const deleted = m.oneEventPerKey ? undefined : m.deleteEvent('s')
  const eraName = '__dimsync_fold_era'
  const era = q(eraName)
  const eraOf = (condition: string) =>
    m.p.table.deletes === 'ignore'
      ? `CASE WHEN ${condition} THEN 1 ELSE 0 END`
      : `COALESCE(SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END) OVER (PARTITION BY ${m.keyList('s')} ` +
        `ORDER BY ${order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)`
  // A row its key has a capture at or after is stale: sent again (dropped as such) or late (its key is folded
  // again from the capture log, render-partial-refold.ts). The state the key has now is its current version, so a
  // stale row neither ends it (a stale delete starts no era) nor lends a newer row its values: a CDC tool that
  // re-delivered an old update beside a new partial row once filled the new row's NULLs with the old values.
  const captures = m.p.objects.captures
  const staleName = '__dimsync_fold_stale'
  const stale = captures === undefined || m.oneEventPerKey ? undefined : `s.${q(staleName)}`
  const endsState = deleted === undefined || stale === undefined ? deleted : `(${deleted}) AND NOT ${stale}`
  const withStale =
    stale === undefined
      ? m.rawStage
      : `(\n  SELECT s.*, EXISTS (SELECT 1 FROM ${m.d.table(captures!)} c WHERE ${m.keyEq('c', 's')} AND c.captured_at >= ${m.eventTime} AND ${capturesFromEarliestEvent(m)}) AS ${q(staleName)}\n  FROM ${m.rawStage} s\n)`
  const staged =
    deleted === undefined
      ? withStale
      : `(\n  SELECT s.*, ${eraOf(m.p.table.deletes === 'ignore' ? deleted : endsState!)} AS ${era}\n  FROM ${withStale} s\n)`
  const continuesCurrent = deleted === undefined ? '' : ` AND s.${era} = 0`
  const hasCurrent = `cur.${q(m.keys[0]!)} IS NOT NULL${continuesCurrent}`
  // Only fresh rows lend values, within their era: a delete row (a delete that ends the state is the last row of
  // its era, and a stale one ends nothing) and a stale row fold apart.
  const group = [
    ...(stale === undefined ? [] : [`WHEN ${stale} THEN 2`]),
    ...(deleted === undefined ? [] : [`WHEN ${deleted} THEN 1`]),
  ]
  const apart = `${deleted === undefined ? '' : `, s.${era}`}${group.length === 0 ? '' : `, CASE ${group.join(' ')} ELSE 0 END`}`
  const w = `PARTITION BY ${m.keyList('s')}${apart} ORDER BY ${order}`
  const keptNames = new Set(partial.kept.map((c) => c.name))
  // BigQuery allows no analytic function inside SELECT * REPLACE: each column's fold is computed first, as a
  // working column beside the staged ones.
  const foldName = (i: number) => `__dimsync_fold_${i}`
  const foldColumn = (i: number) => q(foldName(i))
  const fold = (c: string) => {
    if (m.oneEventPerKey) return m.col('s', c)
    return keptNames.has(c) ? `FIRST_VALUE(${m.col('s', c)}) OVER (${w})` : m.d.lastNonNull(m.col('s', c), w)
  }
  const folded = (c: string, i: number) =>
    keptNames.has(c)
      ? `CASE WHEN ${hasCurrent} THEN ${m.col('cur', c)} ELSE s.${foldColumn(i)} END`
      : deleted === undefined
        ? `COALESCE(s.${foldColumn(i)}, ${m.col('cur', c)})`
        : `COALESCE(s.${foldColumn(i)}, CASE WHEN s.${era} = 0 THEN ${m.col('cur', c)} END)`
  // What each row said, before folding: the capture log keeps it so a late row can be folded again in time order.
  const raw = refoldsPartialUpdates(m.p.table)
    ? m.attributes.map((c, i) => `${m.col('s', c)} AS ${q(rawWorkColumn(i))}`)
    : []
  m.emit(
    "partial updates: fold rows into their keys' state",
    m.d.createTempTableAs(
      TEMP.folded,
      `${m.d.selectReplacing({
        alias: 's',
        // The columns of the subquery below: the staged ones, the stale flag, the era, each fold and each raw value.
        columns: [
          ...partial.staged,
          ...(stale === undefined ? [] : [staleName]),
          ...(deleted === undefined ? [] : [eraName]),
          ...attrs.map((_, i) => foldName(i)),
          ...(raw.length === 0 ? [] : m.attributes.map((_, i) => rawWorkColumn(i))),
        ],
        replacements: attrs.map((c, i) => [c, folded(c, i)] as const),
        separator: ',\n  ',
      })}\n` +
        `FROM (\n  SELECT s.*, ${[...attrs.map((c, i) => `${fold(c)} AS ${foldColumn(i)}`), ...raw].join(',\n    ')}\n  FROM ${staged} s\n) s\n` +
        `LEFT JOIN (\n  SELECT ${[...m.keys, ...attrs].map((c) => m.col('d', c)).join(', ')} FROM ${m.dim} d WHERE ${m.liveCurrent('d')}\n) cur ON ${m.keyEq('cur', 's')}`,
    ),
  )
}

/**
 * A lower bound on the capture log's reads in the fold: every capture it looks for is at or after a staged row's
 * time, so at or after the batch's earliest one (on BigQuery, the log's partitions of that month and later are
 * read, not the whole log).
 */
function capturesFromEarliestEvent(m: MergeSql): string {
  const earliest = m.d.earliestEventTime(`SELECT MIN(${m.eventTime}) FROM ${m.rawStage} s`)
  for (const sql of earliest.statements) m.emit('partial updates: note the earliest event time', sql)
  return `c.captured_at >= ${earliest.value}`
}
