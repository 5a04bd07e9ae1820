import { TEMP, WORK as W, type MergeSql } from './merge-sql.ts'

/**
 * Append tables (`mode: append`): every row of every extract is kept, valid from its extraction time. The rows a
 * new extract replaces end at its extraction time: all current rows for a full extract (a periodic snapshot: a key
 * missing from it has no row in it), the current rows of its keys for a delta. Nothing is compared, so an
 * unchanged row is appended again; a re-delivered batch is skipped by the batch ledger before this runs.
 */
export function renderAppend(m: MergeSql): void {
  const n = m.names
  const q = (name: string) => m.q(name)
  const at = m.d.timestampLiteral(m.p.extractedAt)
  // A bare NULL would be an INT64 to BigQuery's INSERT … SELECT.
  const openEnd = m.p.table.openEnd === null ? `CAST(NULL AS ${m.d.type('timestamp')})` : m.openEnd()
  const replaced =
    m.p.mode === 'full'
      ? m.current('d')
      : `${m.current('d')} AND EXISTS (SELECT 1 FROM ${m.stage} s WHERE ${m.keyEq('s', 'd')})`
  // What the batch did to keys, in the shape the batch report reads (one appended row each).
  const hadCurrent = `EXISTS (SELECT 1 FROM ${m.dim} d WHERE ${m.current('d')} AND ${m.keyEq('d', 's')})`
  m.emit(
    'list appended keys',
    m.d.createTempTableAs(
      TEMP.changes,
      `SELECT ${m.keyList('s')}, 1 AS ${q(W.changeNo)}, ${hadCurrent} AS ${q(W.hadCurrent)}, FALSE AS ${q(W.del)}
FROM ${m.stage} s`,
    ),
  )
  m.emit(
    'count appended and replaced rows',
    m.d.createTempTableAs(
      TEMP.stats,
      `SELECT (SELECT COUNT(*) FROM ${m.stage}) AS events, (SELECT COUNT(*) FROM ${m.dim} d WHERE ${replaced}) AS replaced`,
    ),
  )
  m.emit(
    'end the rows the extract replaces',
    `UPDATE ${m.dim} AS d SET ${q(n.validTo)} = ${m.endAt(at)}, ${q(n.isCurrent)} = FALSE\nWHERE ${replaced}`,
  )
  m.seedKeys()
  m.emit(
    'append the extract',
    `INSERT INTO ${m.dim} (${m.metadataAndStoredList()})\n` +
      `SELECT n.${q(W.newKey)},\n` +
      `  ${m.stored.map((c) => m.col('s', c)).join(', ')},\n` +
      `  ${at}, ${openEnd}, TRUE, FALSE, ${m.stagedRowHash('s')}, ${m.str(m.p.batchId)}${m.presetColumnValues('s', at, 'FALSE')}\n` +
      // The grain check leaves one row per key (append has no valid_from column).
      `FROM ${m.stage} s JOIN ${m.numberedKeys('s', `${m.stage} s`)} n ON ${m.keyEq('n', 's')}`,
  )
  m.advanceKeys('s', `${m.stage} s`, 'appended rows')
  m.recordBatch(
    {
      events: 'x.events',
      insertedVersions: 'x.events',
      closedVersions: 'x.replaced',
      deletedKeys: '0',
      unchangedEvents: '0',
      lateKeys: '0',
    },
    `${m.tmp(TEMP.stats)} x`,
  )
}
