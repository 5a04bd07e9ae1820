import { TEMP, WORK as W, type MergeSql } from './merge-sql.ts'

/** The temporary table of values a batch's new versions carry over from their key's current version. */
export const CARRIED = '__dimsync_carried'
/** Columns of changedKeysWithCarried beside the keys. */
export const HAS_CARRIED = '__dimsync_has_carried'
export const carriedAs = (column: string) => `__dimsync_carried_${column}`
/** Column of CARRIED: the version is an inferred member this batch completed in place (render-inferred-completion.ts). */
const COMPLETED = '__dimsync_completed'
/** Changed keys without a current version that have older versions (back after a delete). */
const RETURNING = '__dimsync_carried_returning'

/**
 * Columns whose value on a new version does not come from the batch but from the key's other versions: types 0, 3
 * and 6 (with the columns types 3 and 6 derive from) and, under `removed_columns: keep_last`, removed columns.
 */
export function carriedColumns(m: MergeSql): string[] {
  const layout = m.p.layout
  const keepLast = m.p.table.removedColumns === 'keep_last' ? layout.removed.map((c) => c.name) : []
  const names = [
    ...layout.keepFirst.map((c) => c.name),
    ...layout.derived.flatMap((c) => [c.name, c.from]),
    ...keepLast,
  ]
  return [...new Set(names)]
}

/**
 * Before the batch closes any version: the carried columns of the current versions of the keys the batch changes,
 * read from the open partition on BigQuery. While a key's history is not rewritten, every version of it holds the
 * same type 0, 3 and 6 values and its current version the last value of a removed column, so these are the values
 * its new version takes (see historyNeeded for when that is not enough).
 */
export function renderCarriedValues(m: MergeSql): void {
  const columns = carriedColumns(m)
  if (columns.length === 0) return
  const changed = `EXISTS (SELECT 1 FROM ${m.tmp(TEMP.changes)} c WHERE ${m.keyEq('c', 'd')})`
  const ofBatch = `d.${m.q(m.names.batchId)} = ${m.str(m.p.batchId)}`
  const completed = m.p.layout.hasInferredFlag ? `, ${ofBatch} AS ${m.q(COMPLETED)}` : ''
  m.emit(
    'carried values of the current versions before the batch',
    m.d.createTempTableAs(
      CARRIED,
      `SELECT ${[...m.keys, ...columns].map((c) => m.col('d', c)).join(', ')}${completed} FROM ${m.dim} d\n` +
        `WHERE ${m.current('d')} AND ${m.p.layout.hasInferredFlag ? `(${changed} OR ${ofBatch})` : changed}`,
    ),
  )
  // A new key has no older version: only keys back after a delete make the values be read from history. Looked up
  // (in the key columns of the whole dimension) only when the batch has changed keys without a current version,
  // whatever the policy now: a dimension merged under `invalidate` before a config edit holds closed keys too.
  const returning = m.tmp(RETURNING)
  m.emit(
    'carried values: changed keys without a current version',
    m.d.createTempTableAs(
      RETURNING,
      `SELECT DISTINCT ${m.keyList('c')} FROM ${m.tmp(TEMP.changes)} c WHERE NOT c.${m.q(W.hadCurrent)}`,
    ),
  )
  m.guarded(`EXISTS (SELECT 1 FROM ${returning})`, () =>
    m.emit(
      'carried values: keep those with older versions',
      `DELETE FROM ${returning} WHERE NOT EXISTS (SELECT 1 FROM ${m.dim} d WHERE ${m.keys.map((k) => `d.${m.q(k)} = ${returning}.${m.q(k)}`).join(' AND ')})`,
    ),
  )
}

/**
 * SQL condition, reading only this batch's temporary tables: a carried value must be read from the history of a
 * key rather than from its current version before the batch. That is when the late path ran (versions slotted
 * into history), when the batch gave a key more than one version (the older ones are closed, outside the open
 * partition), when a changed key without a current version has older versions (back after a delete; a new key
 * has none), or the batch completed an inferred member. Undefined: never, for
 * this table.
 */
export function historyNeeded(m: MergeSql): string | undefined {
  const changes = m.tmp(TEMP.changes)
  const conditions = [
    ...(m.p.objects.captures === undefined ? [] : [`EXISTS (SELECT 1 FROM ${m.tmp(TEMP.lateKeys)})`]),
    ...(m.oneEventPerKey ? [] : [`EXISTS (SELECT 1 FROM ${changes} WHERE ${m.q(W.changeNo)} > 1)`]),
    `EXISTS (SELECT 1 FROM ${m.tmp(RETURNING)})`,
    // An inferred member completed in place took the batch's values without a new version.
    ...(m.p.layout.hasInferredFlag
      ? [`EXISTS (SELECT 1 FROM ${m.tmp(CARRIED)} WHERE ${m.q(COMPLETED)})`]
      : []),
  ]
  return conditions.length === 0 ? undefined : conditions.join('\nOR ')
}

/**
 * Per key the batch gave a version (one row each): its first change, with the key's carried values before the
 * batch (HAS_CARRIED false when it had no current version). Under `historyNeeded` false this version is the
 * key's only new one, and it is open.
 */
export function changedKeysWithCarried(m: MergeSql): string {
  const columns = carriedColumns(m)
  const versions = m.p.table.deletes === 'new_record' ? '' : ` AND NOT c.${m.q(W.del)}`
  return (
    `SELECT ${m.keyList('c')}, b.${m.q(m.keys[0]!)} IS NOT NULL AS ${m.q(HAS_CARRIED)}` +
    columns.map((c) => `, b.${m.q(c)} AS ${m.q(carriedAs(c))}`).join('') +
    `\n  FROM ${m.tmp(TEMP.changes)} c LEFT JOIN ${m.tmp(CARRIED)} b ON ${m.keyEq('b', 'c')}\n` +
    `  WHERE c.${m.q(W.changeNo)} = 1${versions}`
  )
}
