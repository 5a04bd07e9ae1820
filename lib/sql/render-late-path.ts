import type { TableRef } from '../core/table-ref.ts'
import { dbtVersionScdId, keyValues } from './dbt-ids.ts'
import { TEMP, WORK as W, type MergeSql } from './merge-sql.ts'
import { CAPTURE_SEQUENCE_COLUMN, refoldsPartialUpdates } from './render-ddl.ts'
import { REFOLDED } from './render-partial-refold.ts'
import { DELETED_STATE } from './row-hash.ts'

/**
 * The late path (docs/invariants.md, the merge, step 5). Keys with an event older than what is already captured (or, in a sequenced
 * change feed, another event at a captured change time) get their windows recomputed from the capture log: every
 * state ever captured, including ones that changed nothing, so the result is the same whatever the order batches
 * arrived in.
 *
 * The log is read as the key's effective states: per change time the last one in sequence order. Consecutive
 * equal states form runs; each run that is a version (a state, or a deletion under `new_record`) keeps the
 * existing version that starts at one of its captures (the earliest, when a correction merged two runs), so
 * existing versions keep their surrogate keys and only their windows move. Where a correction changed the state
 * at a version's start (a later event with the same change time), the version takes the corrected attributes in
 * place; a version left without a run is retired (moved to the retired-versions table, whose surrogate keys are
 * never given out again).
 */
export function renderLatePath(m: MergeSql, captures: TableRef): void {
  // Most batches have no late key: then the late path reads neither the capture log nor the dimension's history.
  m.guarded(`EXISTS (SELECT 1 FROM ${m.tmp(TEMP.lateKeys)})`, () => renderGuardedLatePath(m, captures))
}

function renderGuardedLatePath(m: MergeSql, captures: TableRef): void {
  const n = m.names
  const q = (name: string) => m.q(name)
  const log = m.d.table(captures)
  const lateKeys = m.tmp(TEMP.lateKeys)
  const ofLateKeys = `EXISTS (SELECT 1 FROM ${lateKeys} l WHERE ${m.keyEq('l', 'c')})`
  const effective = m.sequenced
    ? `(\n    ${m.d.firstPerGroup({
        select: `SELECT c.* FROM ${log} c WHERE ${ofLateKeys}`,
        separator: '\n    ',
        partitionBy: `${m.keyList('c')}, c.captured_at`,
        orderBy: `c.${q(CAPTURE_SEQUENCE_COLUMN)} DESC`,
      })}\n  ) c`
    : `${log} c WHERE ${ofLateKeys}`
  const wk = `PARTITION BY ${m.keyList('c')} ORDER BY c.captured_at`
  m.emit(
    'late keys: number runs of equal states',
    m.d.createTempTableAs(
      TEMP.lateCaptures,
      `SELECT x.*, SUM(CASE WHEN x.${q(W.start)} THEN 1 ELSE 0 END) OVER (PARTITION BY ${m.keyList('x')} ORDER BY x.captured_at ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ${q(W.run)}\n` +
        `FROM (\n  SELECT ${m.keyList('c')}, c.captured_at, c.state_hash, c.state_hash IS DISTINCT FROM LAG(c.state_hash) OVER (${wk}) AS ${q(W.start)}\n` +
        `  FROM ${effective}\n) x`,
    ),
  )
  const wr = `PARTITION BY ${m.keyList('r')} ORDER BY r.${q(W.from)}`
  m.emit(
    'late keys: windows of runs',
    m.d.createTempTableAs(
      TEMP.lateRuns,
      `SELECT r.*, LEAD(r.${q(W.from)}) OVER (${wr}) AS ${q(W.to)}, LAG(r.state_hash) OVER (${wr}) AS ${q(W.prevRunState)},\n` +
        `  LEAD(r.state_hash) OVER (${wr}) AS ${q(W.nextRunState)}, LAG(r.${q(W.from)}) OVER (${wr}) AS ${q(W.prevRunFrom)}\n` +
        `FROM (\n  SELECT ${m.keyList('c')}, c.${q(W.run)}, MIN(c.captured_at) AS ${q(W.from)}, MIN(c.state_hash) AS state_hash\n` +
        `  FROM ${m.tmp(TEMP.lateCaptures)} c GROUP BY ${m.keyList('c')}, c.${q(W.run)}\n) r`,
    ),
  )
  m.emit(
    'late keys: existing versions and their runs',
    m.d.createTempTableAs(
      TEMP.lateMatches,
      `SELECT d.${q(n.surrogateKey)} AS ${q(W.existingSk)}, ${m.keyList('c')}, c.${q(W.run)},\n` +
        `  ROW_NUMBER() OVER (PARTITION BY ${m.keyList('c')}, c.${q(W.run)} ORDER BY d.${q(n.validFrom)}) AS ${q(W.rank)}\n` +
        `FROM ${m.dim} d JOIN ${m.tmp(TEMP.lateCaptures)} c ON ${m.keyEq('d', 'c')} AND d.${q(n.validFrom)} = c.captured_at`,
    ),
  )
  const deletedRuns = m.p.table.deletes === 'new_record' ? ` OR r.${q(W.prevRunState)} IS NOT NULL` : ''
  m.emit(
    'late keys: match runs to existing versions',
    m.d.createTempTableAs(
      TEMP.lateVersions,
      `SELECT r.*, v.${q(W.existingSk)}\nFROM ${m.tmp(TEMP.lateRuns)} r\n` +
        `LEFT JOIN ${m.tmp(TEMP.lateMatches)} v ON ${m.keyEq('v', 'r')} AND v.${q(W.run)} = r.${q(W.run)} AND v.${q(W.rank)} = 1\n` +
        `WHERE r.state_hash <> ${m.str(DELETED_STATE)}${deletedRuns}`,
    ),
  )
  const lv = m.tmp(TEMP.lateVersions)
  // Attributes of a run: an event of this batch or an existing version with the same state (same tracked
  // values); a deletion run carries the attributes of the run before it.
  const attrs = m.attributes
  const source =
    `SELECT ${m.keyList('e')}, e.${q(W.rowHash)} AS h, 1 AS ${q(W.priority)}${attrs.map((c) => `, ${m.col('e', c)}`).join('')}\n` +
    `    FROM ${m.tmp(TEMP.events)} e WHERE NOT e.${q(W.del)}\n    UNION ALL\n` +
    `    SELECT ${m.keyList('d')}, d.${q(n.rowHash)}, 2${attrs.map((c) => `, ${m.col('d', c)}`).join('')}\n` +
    `    FROM ${m.dim} d WHERE EXISTS (SELECT 1 FROM ${lateKeys} l WHERE ${m.keyEq('l', 'd')})` +
    refoldedAttributes(m)
  const a = m.alias('a')
  m.emit(
    'late keys: attributes of each state',
    m.d.createTempTableAs(
      TEMP.lateAttributes,
      m.d.firstPerGroup({
        select: `SELECT * FROM (\n  ${source}\n) ${a} WHERE TRUE`,
        separator: '\n',
        partitionBy: `${m.keyList(a)}, ${a}.h`,
        orderBy: `${a}.${q(W.priority)}`,
      }),
    ),
  )
  if (m.p.objects.retired !== undefined) retireVersionsWithoutRun(m, m.p.objects.retired)
  const end = `COALESCE(${m.endAtChange(`v.${q(W.to)}`, `v.${q(W.nextRunState)} = ${m.str(DELETED_STATE)}`)}, ${m.openEnd()})`
  const deletion = `v.state_hash = ${m.str(DELETED_STATE)}`
  // dbt: a deletion version's id hashes the id of the version before it, whose start may have moved alone.
  const deletionId = m.dbtDeletionIds
    ? { deleted: deletion, previousStart: `v.${q(W.prevRunFrom)}` }
    : undefined
  const ids = m.dbtIdAssignments('d', `v.${q(W.from)}`, deletionId)
  const scdId = m.p.table.dbtIds?.scdId
  const idMoved =
    deletionId === undefined || scdId === undefined
      ? ''
      : ` OR d.${q(scdId)} <> ${dbtVersionScdId(m.d, keyValues(m.d, m.p.layout.key, 'd'), `v.${q(W.from)}`, deletionId)}`
  m.emit(
    'late keys: move windows of existing versions',
    `UPDATE ${m.dim} AS d SET ${q(n.validFrom)} = v.${q(W.from)}, ${q(n.validTo)} = ${end}, ${q(n.isCurrent)} = v.${q(W.to)} IS NULL` +
      `${ids}\n` +
      `FROM ${lv} v\nWHERE d.${q(n.surrogateKey)} = v.${q(W.existingSk)} AND (d.${q(n.validFrom)} <> v.${q(W.from)} ` +
      `OR d.${q(n.validTo)} IS DISTINCT FROM ${end} OR d.${q(n.isCurrent)} <> (v.${q(W.to)} IS NULL)${idMoved})`,
  )
  const attributeState = `(CASE WHEN v.state_hash = ${m.str(DELETED_STATE)} THEN v.${q(W.prevRunState)} ELSE v.state_hash END)`
  // A deletion version carries the attributes of the version before it, which a late event may have changed; a
  // version whose starting state was corrected takes the corrected attributes.
  m.emit(
    "late keys: versions take their run's attributes",
    `UPDATE ${m.dim} AS d SET ${[...attrs.map((c) => `${q(c)} = x.${q(c)}`), `${q(n.rowHash)} = x.h`, `${q(n.isDeleted)} = x.${q(W.del)}`].join(', ')}${m.dbtDeletedAssignments(`x.${q(W.del)}`)}\n` +
      `FROM (\n  SELECT v.${q(W.existingSk)}, ${deletion} AS ${q(W.del)}, a.*\n  FROM ${lv} v JOIN ${m.tmp(TEMP.lateAttributes)} a ON ${m.keyEq('a', 'v')} AND a.h = ${attributeState}\n` +
      `  WHERE v.${q(W.existingSk)} IS NOT NULL\n) x\n` +
      `WHERE d.${q(n.surrogateKey)} = x.${q(W.existingSk)} AND (d.${q(n.rowHash)} <> x.h OR d.${q(n.isDeleted)} <> x.${q(W.del)})`,
  )
  const newVersions =
    `${lv} v JOIN ${m.tmp(TEMP.lateAttributes)} a ON ${m.keyEq('a', 'v')} AND a.h = ${attributeState}\n` +
    `WHERE v.${q(W.existingSk)} IS NULL`
  m.seedKeys()
  m.emit(
    'late keys: insert new versions',
    `INSERT INTO ${m.dim} (${m.metadataAndStoredList()})\n` +
      `SELECT ${m.newKey('v', [m.keyList('v'), `v.${q(W.from)}`])},\n` +
      `  ${m.stored.map((c) => (m.keys.includes(c) ? m.col('v', c) : m.col('a', c))).join(', ')},\n` +
      `  v.${q(W.from)}, ${end}, v.${q(W.to)} IS NULL, ${deletion}, a.h, ${m.str(m.p.batchId)}${m.presetColumnValues('v', `v.${q(W.from)}`, deletion, deletionId?.previousStart)}\n` +
      `FROM ${newVersions}`,
  )
  m.advanceKeys('v', newVersions, 'late keys: new versions')
  // The ledger counts them from the batch's stats, which exist whether or not the late path ran.
  m.emit(
    'late keys: count inserted versions',
    `UPDATE ${m.tmp(TEMP.stats)} SET ${q(LATE_INSERTED)} = (SELECT COUNT(*) FROM ${lv} WHERE ${q(W.existingSk)} IS NULL) WHERE TRUE`,
  )
}

/** Column of the batch's stats table: versions the late path inserted (0 when it did not run). */
export const LATE_INSERTED = '__dimsync_late_inserted'

/**
 * Versions whose run a correction took away (two runs merged into one, or the state at the version's start
 * became a deletion under `invalidate`): moved to the retired-versions table, in the same transaction.
 */
function retireVersionsWithoutRun(m: MergeSql, retired: TableRef): void {
  const q = (name: string) => m.q(name)
  const doomed =
    `SELECT x.${q(W.existingSk)} FROM ${m.tmp(TEMP.lateMatches)} x\n` +
    `  WHERE NOT EXISTS (SELECT 1 FROM ${m.tmp(TEMP.lateVersions)} v WHERE v.${q(W.existingSk)} = x.${q(W.existingSk)})`
  m.retireVersions(
    retired,
    `${q(m.names.surrogateKey)} IN (\n  ${doomed}\n)`,
    'late keys: ',
    'a correction replaced',
  )
}

/** Partial updates: a late key's states folded again (render-partial-refold.ts) come first. */
function refoldedAttributes(m: MergeSql): string {
  if (m.p.layout.partial === undefined || !refoldsPartialUpdates(m.p.table)) return ''
  const q = (name: string) => m.q(name)
  return (
    `\n    UNION ALL\n    SELECT ${m.keyList('r')}, r.${q(W.state)}, 0${m.attributes.map((c) => `, ${m.col('r', c)}`).join('')}\n` +
    `    FROM ${m.tmp(REFOLDED)} r WHERE NOT r.is_deleted`
  )
}
