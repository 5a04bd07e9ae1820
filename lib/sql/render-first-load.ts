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
 * Whether a first load checks its keys for duplicates after its INSERT (`checkKeys` of renderFirstLoad) rather
 * than before it with the other grain checks: its grain is the key, every staged row is a version (no soft
 * deletes, which the INSERT leaves out), and no check between the grain checks and the INSERT can refuse the
 * batch first (a version column's, partial updates'), so a batch that has duplicates and another fault is refused
 * for the same one as before.
 */
export function checksDuplicatesAfterInsert(m: MergeSql): boolean {
  return (
    m.softDeleted('s') === undefined &&
    m.p.layout.validFromColumn === undefined &&
    m.p.layout.partial === undefined &&
    m.p.table.changeDetection === undefined
  )
}

/**
 * The merge of a batch that founds its dimension (after the grain checks): one INSERT … SELECT from the staged
 * rows, with the rows, surrogate keys, hashes and windows the general path (diff against the current versions,
 * then insert the changes) gives an empty dimension, without materializing the diff. A soft-deleted row of a key
 * with no version is no change there either. The events count and the change list the batch's ledger row and
 * report read are the general path's: one change per inserted version, each a new key.
 *
 * With `checkKeys` (checksDuplicatesAfterInsert), the check of duplicate keys comes after the INSERT instead of
 * before it: the INSERT numbers only the keys that occur once (numberedUniqueKeys, from the window that numbers
 * them anyway), so it writes fewer rows than were staged exactly when a key occurs twice, and the statements
 * `checkKeys` emits (the check, which refuses the batch naming the keys) run only then (CompiledStatement.onlyIf);
 * `checkAfter` emits the checks that followed it, after it. A batch without duplicates is not grouped by key.
 */
export function renderFirstLoad(m: MergeSql, checkKeys?: () => void, checkAfter?: () => void): void {
  const softDeleted = m.softDeleted('s')
  const versionRows = softDeleted === undefined ? '' : ` WHERE NOT (${softDeleted})`
  const hash = m.stagedRowHash('s')
  // A NULL literal alone is an INT64 in BigQuery's INSERT … SELECT.
  const openEnd = m.p.table.openEnd === null ? `CAST(NULL AS ${m.d.type('timestamp')})` : m.openEnd()
  const rows = `${m.stage} s${versionRows}`
  m.seedKeys()
  m.emit(
    'insert first versions',
    `INSERT INTO ${m.dim} (${m.metadataAndStoredList()})\n` +
      `SELECT n.${m.q(WORK.newKey)},\n` +
      `  ${m.stored.map((c) => m.col('s', c)).join(', ')},\n` +
      `  ${m.d.timestampLiteral(m.p.extractedAt)}, ${openEnd}, TRUE, FALSE, ${hash}, ${m.str(m.p.batchId)}` +
      `${m.presetColumnValues('s', m.d.timestampLiteral(m.p.extractedAt), 'FALSE')}\n` +
      `FROM ${m.stage} s\nJOIN ${checkKeys === undefined ? m.numberedKeys('s', rows) : m.numberedUniqueKeys('s', rows)} n ` +
      `ON ${m.keyEq('n', 's')}${versionRows}`,
  )
  // Every version the INSERT wrote is current: counted in the open partition (BigQuery prunes the others).
  const written = `(SELECT COUNT(*) FROM ${m.dim} d WHERE ${m.current('d')})`
  if (checkKeys !== undefined) m.guarded(`${written} <> (SELECT COUNT(*) FROM ${rows})`, checkKeys)
  checkAfter?.()
  m.advanceKeys('s', `${m.stage} s${versionRows}`, 'first versions')
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
