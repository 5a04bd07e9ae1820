import type { TableRef } from '../core/table-ref.ts'
import { TEMP, WORK as W, type MergeSql } from './merge-sql.ts'
import { CAPTURE_RAW_LOGGED_COLUMN, CAPTURE_SEQUENCE_COLUMN, captureRawColumn } from './render-ddl.ts'
import { DELETED_STATE, renderRowHash } from './row-hash.ts'

/** The refolded captures of late keys: their attributes and state at each captured time. */
export const REFOLDED = '__dimsync_refolded'

/** Working column of the staged rows and events holding what attribute `i` (of `attributes`) said before folding. */
export function rawWorkColumn(i: number): string {
  return `__dimsync_raw_${i}`
}

/**
 * Partial updates and late events. The batch's own fold (render-partial-updates.ts) folds a row into its key's
 * current state, which is right for rows newer than every capture of their key. A late key (one with a capture
 * after one of its rows) is folded again here from what every captured event of the key said (the raw values the
 * capture log keeps), in time then sequence order, the state starting again after each delete: a late row takes
 * the state at its own time, and every later capture of the key the state it now follows. The log's states are
 * corrected in place, so the late path (render-late-path.ts) recomputes the key's versions from them, taking
 * their attributes from the refolded rows.
 */
export function renderRefoldLateKeys(m: MergeSql, captures: TableRef): void {
  const partial = m.p.layout.partial!
  const q = (name: string) => m.q(name)
  const log = m.d.table(captures)
  const sequence = m.sequenced ? `, c.${q(CAPTURE_SEQUENCE_COLUMN)}` : ''
  const order = `c.captured_at${sequence}`
  const era = q('__dimsync_fold_era')
  const ignored = new Set(partial.ignoreNulls.map((c) => c.name))
  const kept = new Set(partial.kept.map((c) => c.name))
  const w = `PARTITION BY ${m.keyList('c')}, c.${era} ORDER BY ${order}`
  const raw = (c: string) => `c.${q(captureRawColumn(c))}`
  const folded = (c: string) =>
    kept.has(c) ? `FIRST_VALUE(${raw(c)}) OVER (${w})` : ignored.has(c) ? m.d.lastNonNull(raw(c), w) : raw(c)
  const lateKeys = m.tmp(TEMP.lateKeys)
  const hash = renderRowHash(m.d, m.p.layout.tracked, 'r')
  m.emit(
    'partial updates: fold the captures of late keys again in time order',
    m.d.createTempTableAs(
      REFOLDED,
      `SELECT r.*, ${hash} AS ${q(W.rowHash)}, CASE WHEN r.is_deleted THEN ${m.str(DELETED_STATE)} ELSE ${hash} END AS ${q(W.state)}\n` +
        `FROM (\n  SELECT ${m.keyList('c')}, c.captured_at${sequence}, c.is_deleted, ${m.attributes.map((c) => `${folded(c)} AS ${q(c)}`).join(', ')}\n` +
        `  FROM (\n    SELECT c.*, COALESCE(SUM(CASE WHEN c.is_deleted THEN 1 ELSE 0 END) OVER (PARTITION BY ${m.keyList('c')} ORDER BY ${order} ` +
        `ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS ${era}\n` +
        `    FROM ${log} c WHERE EXISTS (SELECT 1 FROM ${lateKeys} l WHERE ${m.keyEq('l', 'c')})\n  ) c\n) r`,
    ),
  )
  m.emit(
    'partial updates: late keys take their refolded states in the capture log',
    `UPDATE ${log} AS c SET state_hash = r.${q(W.state)}\nFROM ${m.tmp(REFOLDED)} r\n` +
      `WHERE ${m.keyEq('c', 'r')} AND c.captured_at = r.captured_at` +
      (m.sequenced ? ` AND c.${q(CAPTURE_SEQUENCE_COLUMN)} = r.${q(CAPTURE_SEQUENCE_COLUMN)}` : '') +
      ` AND c.state_hash <> r.${q(W.state)}`,
  )
  // The batch's own events of late keys take their refolded values too: every later step (type 1 overwrite,
  // column policies) reads them.
  const ev = m.tmp(TEMP.events)
  m.emit(
    'partial updates: events of late keys take their refolded values',
    `UPDATE ${ev} AS e SET ${[...m.attributes.map((c) => `${q(c)} = r.${q(c)}`), `${q(W.rowHash)} = r.${q(W.rowHash)}`, `${q(W.state)} = r.${q(W.state)}`].join(', ')}\n` +
      `FROM ${m.tmp(REFOLDED)} r\nWHERE ${m.keyEq('e', 'r')} AND e.${q(W.t)} = r.captured_at` +
      (m.sequenced ? ` AND e.${q(W.order)} = r.${q(CAPTURE_SEQUENCE_COLUMN)}` : '') +
      ` AND NOT r.is_deleted`,
  )
}

/** The capture log columns a partial-update table appends beside the state: the flag, then each raw value. */
export function rawCaptureColumns(m: MergeSql): string[] {
  return [CAPTURE_RAW_LOGGED_COLUMN, ...m.attributes.map(captureRawColumn)]
}
