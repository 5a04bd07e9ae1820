import type { TableRef } from '../core/table-ref.ts'
import { presetColumnNames } from './preset-columns.ts'
import type { CompiledStatement, SqlDialect } from './dialect.ts'
import { MergeSql, type MergePlan } from './merge-sql.ts'
import { refoldsPartialUpdates, statesCanBeCorrected } from './render-ddl.ts'
import { knownNowCondition } from './version-predicates.ts'

/** The temporary tables of a bitemporal merge (beside those of the merge it wraps, see TEMP). */
export const SYSTEM_TEMP = Object.freeze({
  before: '__dimsync_system_before',
  now: '__dimsync_system_now',
  retired: '__dimsync_system_retired',
  superseded: '__dimsync_system_superseded',
  learned: '__dimsync_system_learned',
})

/**
 * The merge of a bitemporal table (`system_time: true`, docs/bitemporal.md). A row of such a table is never
 * changed once written, except to close it in system time, so the ordinary merge (which closes, moves, corrects
 * and retires versions in place) runs on a working copy, then the difference is written as system-time versions:
 *
 * 1. the rows known now (open in system time) of the keys the batch can touch (its staged keys, and every current
 *    version when a full extract deletes by absence) are copied twice: as they were, and as the working copy;
 * 2. the ordinary merge (`renderOrdinary`) runs on the working copy, numbering new versions after every surrogate
 *    key the dimension gave out, with a temporary table for the versions it retires;
 * 3. every copied row the merge changed or removed is closed in the dimension (`system_to` = the merge's system
 *    time), and every row it changed or added is inserted (`system_from` = that time, `system_to` open).
 *
 * A version keeps its surrogate key across its system-time rows: the key names the business version, facts
 * point at it, and exactly one of its rows is known at any instant. The system time is the batch's applied time
 * (when the merge runs: what a reader saw before and after it commits); a merge whose applied time is not after
 * the table's last one is refused, so system windows never run backwards.
 */
export function renderSystemTimeMerge(
  d: SqlDialect,
  plan: MergePlan,
  renderOrdinary: (plan: MergePlan) => CompiledStatement[],
): CompiledStatement[] {
  const systemTime = plan.table.systemTime
  if (systemTime === undefined) throw new Error(`table ${plan.table.name} is not bitemporal`)
  // The config refuses these (resolve-table.ts); a spec built another way must not reach the merge either.
  if (plan.table.mode !== 'history')
    throw new Error(`table ${plan.table.name}: system_time applies to mode history, not ${plan.table.mode}`)
  const m = new MergeSql(d, plan)
  const q = (name: string) => m.q(name)
  const n = m.names
  const at = d.timestampLiteral(plan.appliedAt)
  const batches = d.table(plan.objects.batches)
  m.emit(
    'system time: check the merge is later than the last one',
    `SELECT ${m.raise(
      'system-time-order',
      `${m.str(`${m.prefix()} would be applied at ${plan.appliedAt}, not after batch `)} || b.batch_id || ` +
        `${m.str(' (applied at ')} || ${d.castToString('b.applied_at')} || ` +
        m.str(
          '); the system time of a bitemporal table only moves forward (is the clock of this machine behind?); ' +
            'nothing was written, run the merge again',
        ),
    )}\nFROM ${batches} b WHERE b.target = ${m.str(plan.table.target)} AND b.applied_at >= ${at}\nLIMIT 1`,
  )

  const layout = plan.layout
  const columns = [
    n.surrogateKey,
    ...layout.stored.map((c) => c.name),
    ...layout.derived.map((c) => c.name),
    ...layout.removed.map((c) => c.name),
    n.validFrom,
    n.validTo,
    n.isCurrent,
    n.isDeleted,
    n.rowHash,
    n.batchId,
    ...presetColumnNames(plan.table),
  ]
  const list = (alias?: string) => columns.map((c) => (alias ? m.col(alias, c) : q(c))).join(', ')
  // Keys the ordinary merge can touch: those staged, (deletes by absence, or current versions hashed again over
  // changed tracked columns) every key's current version, and (policies rewritten) every version.
  const staged = `EXISTS (SELECT 1 FROM ${m.rawStage} s WHERE ${m.keyEq('s', 'd')})`
  const scope =
    plan.policyRewrite !== undefined
      ? 'TRUE'
      : m.absenceDeletes || plan.rehashCurrent
        ? `(${staged} OR ${m.current('d')})`
        : staged
  m.emit(
    'system time: rows known now of the keys the batch can touch',
    d.createTempTableAs(
      SYSTEM_TEMP.before,
      `SELECT ${list('d')} FROM ${m.dim} d\nWHERE ${knownNow(m, 'd')} AND ${scope}`,
    ),
  )
  m.emit(
    'system time: working copy the merge changes',
    d.createTempTableAs(SYSTEM_TEMP.now, `SELECT * FROM ${m.tmp(SYSTEM_TEMP.before)}`),
  )
  const retired: TableRef | undefined =
    statesCanBeCorrected(plan.table) || refoldsPartialUpdates(plan.table)
      ? { name: SYSTEM_TEMP.retired }
      : undefined
  if (retired !== undefined) {
    const retiredColumns = [
      n.surrogateKey,
      ...m.keys,
      n.validFrom,
      n.validTo,
      n.isDeleted,
      n.rowHash,
      n.batchId,
    ]
    m.emit(
      'system time: versions the merge retires',
      d.createTempTableAs(
        SYSTEM_TEMP.retired,
        `SELECT ${retiredColumns.map((c) => q(c)).join(', ')}, ${q(n.batchId)} AS retired_by FROM ${m.tmp(SYSTEM_TEMP.before)} WHERE FALSE`,
      ),
    )
  }

  const ordinary = renderOrdinary({
    ...plan,
    table: { ...plan.table, systemTime: undefined },
    objects: { ...plan.objects, dimension: { name: SYSTEM_TEMP.now }, retired },
    keysGivenOutIn: [...(plan.keysGivenOutIn ?? []), plan.objects.dimension],
  })

  const differs = (a: string, b: string) =>
    columns.map((c) => `${m.col(a, c)} IS DISTINCT FROM ${m.col(b, c)}`).join(' OR ')
  const sk = q(n.surrogateKey)
  const after: CompiledStatement[] = []
  const emit = (label: string, sql: string) => after.push({ label, sql })
  emit(
    'system time: rows the merge changed or removed',
    d.createTempTableAs(
      SYSTEM_TEMP.superseded,
      `SELECT b.${sk} FROM ${m.tmp(SYSTEM_TEMP.before)} b LEFT JOIN ${m.tmp(SYSTEM_TEMP.now)} w ON w.${sk} = b.${sk}\n` +
        `WHERE w.${sk} IS NULL OR ${differs('b', 'w')}`,
    ),
  )
  emit(
    'system time: rows the merge changed or added',
    d.createTempTableAs(
      SYSTEM_TEMP.learned,
      `SELECT w.* FROM ${m.tmp(SYSTEM_TEMP.now)} w LEFT JOIN ${m.tmp(SYSTEM_TEMP.before)} b ON b.${sk} = w.${sk}\n` +
        `WHERE b.${sk} IS NULL OR ${differs('b', 'w')}`,
    ),
  )
  emit(
    'system time: close superseded rows',
    `UPDATE ${m.dim} AS d SET ${q(systemTime.systemTo)} = ${at}\n` +
      `WHERE ${knownNow(m, 'd')} AND d.${sk} IN (SELECT x.${sk} FROM ${m.tmp(SYSTEM_TEMP.superseded)} x)`,
  )
  emit(
    'system time: insert the rows learned',
    `INSERT INTO ${m.dim} (${list()}, ${q(systemTime.systemFrom)}, ${q(systemTime.systemTo)})\n` +
      `SELECT ${list('x')}, ${at}, ${plan.table.openEnd === null ? `CAST(NULL AS ${d.type('timestamp')})` : m.openEnd()}\n` +
      `FROM ${m.tmp(SYSTEM_TEMP.learned)} x`,
  )
  // Invariant 2 on the rows now known: the ordinary merge checked its working copy, not what was written here.
  // (In a MergeSql of its own: it runs after the statements above, which `m.out` precedes.)
  const checked = new MergeSql(d, plan)
  checked.checkOneCurrentVersion(
    'system time: check one current version per key',
    `SELECT DISTINCT ${m.keyList('t')} FROM (\n` +
      `  SELECT ${m.keyList('l')} FROM ${m.tmp(SYSTEM_TEMP.learned)} l UNION ALL\n` +
      `  SELECT ${m.keyList('b')} FROM ${m.tmp(SYSTEM_TEMP.before)} b JOIN ${m.tmp(SYSTEM_TEMP.superseded)} x ON x.${sk} = b.${sk}\n) t`,
    m.dim,
  )
  return [...m.out, ...ordinary, ...after, ...checked.out]
}

function knownNow(m: MergeSql, alias: string): string {
  return knownNowCondition(m.d, m.p.table, alias)!
}
