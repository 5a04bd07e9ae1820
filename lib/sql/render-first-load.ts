import type { MergePlan, MergeSql } from './merge-sql.ts'
import { TEMP, WORK } from './merge-sql.ts'

/**
 * Whether the batch founds its dimension: the dimension does not exist yet (it is created by this merge), it keeps
 * history (not a mirror or an append table) and its versions start at the extraction time, so there is nothing to diff, close or slot late events into. Every
 * staged row that is not a soft delete is its key's first and current version.
 */
export function foundsDimension(plan: MergePlan): boolean {
  return (
    plan.layout.createDimension &&
    plan.table.mode === 'history' &&
    plan.table.validFrom.kind === 'extracted_at' &&
    plan.table.changes === undefined &&
    plan.objects.captures === undefined &&
    plan.objects.retired === undefined
  )
}

/**
 * The merge of a batch that founds its dimension (after the grain checks): one INSERT … SELECT from the staged
 * rows, with the rows, surrogate keys, hashes and windows the general path (diff against the current versions,
 * then insert the changes) gives an empty dimension, without materializing the diff. A soft-deleted row of a key
 * with no version is no change there either. The events count and the change list the batch's ledger row and
 * report read are the general path's: one change per inserted version, each a new key.
 */
export function renderFirstLoad(m: MergeSql): void {
  const softDeleted = m.softDeleted('s')
  const versionRows = softDeleted === undefined ? '' : ` WHERE NOT (${softDeleted})`
  const hash = m.stagedRowHash('s')
  // A NULL literal alone is an INT64 in BigQuery's INSERT … SELECT.
  const openEnd = m.p.table.openEnd === null ? `CAST(NULL AS ${m.d.type('timestamp')})` : m.openEnd()
  m.seedKeys()
  m.emit(
    'insert first versions',
    `INSERT INTO ${m.dim} (${m.metadataAndStoredList()})\n` +
      `SELECT n.${m.q(WORK.newKey)},\n` +
      `  ${m.stored.map((c) => m.col('s', c)).join(', ')},\n` +
      `  ${m.d.timestampLiteral(m.p.extractedAt)}, ${openEnd}, TRUE, FALSE, ${hash}, ${m.str(m.p.batchId)}` +
      `${m.presetColumnValues('s', m.d.timestampLiteral(m.p.extractedAt), 'FALSE')}\n` +
      `FROM ${m.stage} s\nJOIN ${m.numberedKeys('s', `${m.stage} s${versionRows}`)} n ON ${m.keyEq('n', 's')}${versionRows}`,
  )
  m.advanceKeys('s', `${m.stage} s${versionRows}`, 'first versions')
  checkEveryRowWritten(m, versionRows)
  // Soft deletes are events (unchanged ones) unless the policy ignores them, as in the general path.
  const events = m.p.table.deletes === 'ignore' ? versionRows : ''
  m.emit(
    'count events',
    m.d.createTempTableAs(TEMP.stats, `SELECT COUNT(*) AS events FROM ${m.stage} s${events}`),
  )
  m.emit(
    'list changes',
    m.d.createTempTableAs(
      TEMP.changes,
      `SELECT 1 AS ${m.q(WORK.changeNo)}, FALSE AS ${m.q(WORK.hadCurrent)}, FALSE AS ${m.q(WORK.del)}\n` +
        `FROM ${m.stage} s${versionRows}`,
    ),
  )
}

/**
 * The dimension is new, so it holds exactly what the INSERT wrote: one version per staged row that is not a soft
 * delete. The grain checks already refused repeated and NULL keys, so a difference is a defect of the INSERT (a
 * join or filter losing rows) and the batch is refused before it commits, instead of founding a history that
 * silently lacks keys the source sent.
 */
function checkEveryRowWritten(m: MergeSql, versionRows: string): void {
  const count = (expr: string) => m.d.castToString(expr)
  const what = versionRows === '' ? ' staged rows' : ' staged rows that are not soft deletes'
  m.emit(
    'check every staged row founded a version',
    `SELECT ${m.raise(
      'incomplete-load',
      `${m.str(`${m.prefix()} wrote `)} || ${count('c.written')} || ${m.str(' versions in its first load for ')} || ` +
        `${count('c.staged')} || ${m.str(`${what}; nothing was written`)}`,
    )}\nFROM (SELECT (SELECT COUNT(*) FROM ${m.dim} d WHERE ${m.current('d')}) AS written, ` +
      `(SELECT COUNT(*) FROM ${m.stage} s${versionRows}) AS staged) c\nWHERE c.written <> c.staged`,
  )
}
