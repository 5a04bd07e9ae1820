import type { ChangeDetectionSpec, TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'
import type { MergePlan, MergeSql } from './merge-sql.ts'
import { renderRowHash } from './row-hash.ts'
import { storedEndAfter } from './version-end.ts'

/** The batch's rows and its keys' versions in time order, each with the one before it (a temporary table). */
export const VERSION_STEPS = '__dimsync_version_steps'

const V = Object.freeze({
  t: '__dimsync_vt',
  version: '__dimsync_version',
  hash: '__dimsync_vhash',
  staged: '__dimsync_staged',
  nextVersionAt: '__dimsync_next_version_at',
  prevT: '__dimsync_prev_vt',
  prevVersion: '__dimsync_prev_version',
  prevHash: '__dimsync_prev_vhash',
  prevStaged: '__dimsync_prev_staged',
  prevNextVersionAt: '__dimsync_prev_next_version_at',
  end: '__dimsync_vend',
  prevEnd: '__dimsync_prev_vend',
})

/**
 * `change_detection: { version_column }` (dbt's timestamp strategy), before the diff. The version column is
 * tracked (or is valid_from), so its growth opens a version as any change does; what the row hash alone would not
 * see is the order: per key, the batch's rows (deletes aside) and the versions of the dimension are put in time
 * order and each is compared with the one before it.
 * - The version column going backwards (a smaller value after a larger one) refuses the batch: the row would put
 *   an older state after a newer one.
 * - A different row at the same version refuses the batch (`on_same_version: refuse`), or, with `overwrite`, when
 *   the row is the batch's and the one before it a stored version, is written into that version in place: its
 *   tracked values directly (the diff then finds nothing new), or, on a table with a capture log, by correcting
 *   the captured states and recomputing the key's windows on the late path. A batch row followed by a stored
 *   version at the same value (a late row), by another batch row, or a stored version a delete ended before the
 *   row (the key came back) is refused in both cases: which of them the version should hold is not for dimsync
 *   to guess.
 *
 * It reads every version of the batch's keys (on BigQuery, their whole history, not only the open partition).
 */
export function renderVersionColumn(m: MergeSql, spec: ChangeDetectionSpec): void {
  const d = m.d
  const q = (name: string) => m.q(name)
  const n = m.names
  const vc = spec.versionColumn
  // A version column that is the valid_from column is each version's start; it is not stored again.
  const isStart = m.p.layout.validFromColumn?.name === vc
  const stagedVersion = isStart ? m.eventTime : m.col('s', vc)
  const storedVersion = isStart ? `d.${q(n.validFrom)}` : m.col('d', vc)
  const tracked = m.p.layout.tracked.map((c) => c.name)
  const del = m.deleteEvent('s')
  const keysOf = (alias: string) => m.keys.map((k) => m.col(alias, k))
  const carried = (alias: string) => tracked.map((c) => `${m.col(alias, c)} AS ${q(c)}`)

  m.emit(
    'version column: check NULL values',
    `SELECT ${m.raise(
      'version-column',
      `${m.str(`${m.prefix()} has `)} || ${d.castToString('COUNT(*)')} || ` +
        m.str(` rows with a NULL version column (${vc}), for example key `) +
        ` || MIN(${m.keyText('s')}) || ` +
        m.str('; change_detection needs a value to tell whether a row is newer; nothing was written'),
    )}\nFROM ${m.stage} s WHERE ${stagedVersion} IS NULL${del === undefined ? '' : ` AND NOT (${del})`} HAVING COUNT(*) > 0`,
  )

  const staged =
    `SELECT ${[...keysOf('s'), `${m.eventTime} AS ${q(V.t)}`, `${stagedVersion} AS ${q(V.version)}`].join(', ')}, ` +
    `${renderRowHash(d, m.p.layout.tracked, 's')} AS ${q(V.hash)}, TRUE AS ${q(V.staged)}, ` +
    `CAST(NULL AS ${d.type('timestamp')}) AS ${q(V.nextVersionAt)}, CAST(NULL AS ${d.type('timestamp')}) AS ${q(V.end)}, ` +
    `${carried('s').join(', ')}\n` +
    `    FROM ${m.stage} s${del === undefined ? '' : ` WHERE NOT (${del})`}`
  const byStart = `PARTITION BY ${m.keyList('d')} ORDER BY d.${q(n.validFrom)}`
  const stored =
    `SELECT ${[...keysOf('d'), `d.${q(n.validFrom)}`, storedVersion].join(', ')}, d.${q(n.rowHash)}, FALSE, ` +
    `LEAD(d.${q(n.validFrom)}) OVER (${byStart}), d.${q(n.validTo)}, ${carried('d').join(', ')}\n` +
    `    FROM ${m.dim} d\n    WHERE NOT d.${q(n.isDeleted)} AND EXISTS (SELECT 1 FROM ${m.stage} s WHERE ${m.keyEq('s', 'd')})`
  const order = `PARTITION BY ${m.keyList('x')} ORDER BY x.${q(V.t)}, x.${q(V.staged)}`
  const lag = (from: string, to: string) => `LAG(x.${q(from)}) OVER (${order}) AS ${q(to)}`
  m.emit(
    'version column: rows and versions in time order',
    d.createTempTableAs(
      VERSION_STEPS,
      `SELECT x.*, ${[
        lag(V.t, V.prevT),
        lag(V.version, V.prevVersion),
        lag(V.hash, V.prevHash),
        lag(V.staged, V.prevStaged),
        lag(V.nextVersionAt, V.prevNextVersionAt),
        lag(V.end, V.prevEnd),
      ].join(', ')}\nFROM (\n  ${staged}\n  UNION ALL\n  ${stored}\n) x`,
    ),
  )

  const steps = d.table({ name: VERSION_STEPS })
  const at = (time: string) => d.castToString(`x.${q(time)}`)
  const pair =
    `${m.str(': key ')} || ${m.keyText('x')} || ${m.str(`: version column ${vc} is `)} || ` +
    `${d.castToString(`x.${q(V.prevVersion)}`)} || ${m.str(' at ')} || ${at(V.prevT)} || ` +
    `${m.str(' (')} || CASE WHEN x.${q(V.prevStaged)} THEN ${m.str('this batch')} ELSE ${m.str('stored')} END || ` +
    `${m.str(') then ')} || ${d.castToString(`x.${q(V.version)}`)} || ${m.str(' at ')} || ${at(V.t)} || ` +
    `${m.str(' (')} || CASE WHEN x.${q(V.staged)} THEN ${m.str('this batch')} ELSE ${m.str('stored')} END || ${m.str(')')}`
  const involvesBatch = `(x.${q(V.staged)} OR x.${q(V.prevStaged)})`
  m.emit(
    'version column: refuse a version going backwards',
    `SELECT ${m.raise(
      'version-column',
      `${m.str(m.prefix())} || ${pair} || ` +
        m.str(
          ': the version column went backwards, so the later row would put an older state after a newer one; ' +
            'nothing was written. Fix the source, or leave change_detection out to version by the row hash',
        ),
    )}\nFROM ${steps} x WHERE ${involvesBatch} AND x.${q(V.version)} < x.${q(V.prevVersion)}\nLIMIT 1`,
  )

  const sameVersion = sameVersionChange(d)
  const overwritable = overwritableRow(d, m.p.table)
  if (spec.onSameVersion === 'refuse') {
    m.emit(
      'version column: refuse a change at the same version',
      `SELECT ${m.raise(
        'version-column',
        `${m.str(m.prefix())} || ${pair} || ` +
          m.str(
            `: the row changed (its tracked columns differ) but its version column did not, and ` +
              'on_same_version is refuse; nothing was written. Set change_detection: { on_same_version: overwrite } ' +
              'to write the new content into that version in place, or fix the source',
          ),
      )}\nFROM ${steps} x WHERE ${involvesBatch} AND ${sameVersion}\nLIMIT 1`,
    )
    return
  }
  m.emit(
    'version column: refuse a same-version change that is not newer than its version',
    `SELECT ${m.raise(
      'version-column',
      `${m.str(m.prefix())} || ${pair} || ` +
        m.str(
          ': the two rows differ at the same version, and the second is not a row of this batch newer than a ' +
            'stored version (a late row, two rows of the batch, or a row after a delete ended that version), so ' +
            'which one the version holds is ambiguous; ' +
            'nothing was written. Send one row per version, or fix the version column in the source',
        ),
    )}\nFROM ${steps} x WHERE ${involvesBatch} AND ${sameVersion} AND NOT (${overwritable})\nLIMIT 1`,
  )
  const overwrites = `(SELECT * FROM ${steps} x WHERE ${sameVersion} AND ${overwritable})`
  const captures = m.p.objects.captures
  if (captures === undefined) {
    m.guarded(`EXISTS ${overwrites}`, () =>
      m.emit(
        'version column: overwrite a version changed at the same version',
        `UPDATE ${m.dim} AS d SET ${[...tracked.map((c) => `${q(c)} = y.${q(c)}`), `${q(n.rowHash)} = y.${q(V.hash)}`].join(', ')}\n` +
          `FROM ${overwrites} y\nWHERE ${m.keyEq('d', 'y')} AND d.${q(n.validFrom)} = y.${q(V.prevT)} AND NOT d.${q(n.isDeleted)}`,
      ),
    )
    return
  }
  // A table with a capture log: the captures are corrected and the key goes through the late path
  // (render-late-path.ts), which gives the version its new attributes and merges or retires versions the
  // correction made equal to their neighbour. A version column stored apart from valid_from is tracked, so the
  // captures of the overwritten version hold its value: they all take the new state. (A version column that is
  // valid_from is each capture's own time: later captures of the same content are other versions.)
  if (!isStart)
    m.guarded(`EXISTS ${overwrites}`, () =>
      m.emit(
        'version column: the captures of the overwritten version take its new state',
        `UPDATE ${d.table(captures)} AS c SET state_hash = y.${q(V.hash)}\nFROM ${overwrites} y\n` +
          `WHERE ${m.keyEq('c', 'y')} AND c.captured_at >= y.${q(V.prevT)} AND c.state_hash = y.${q(V.prevHash)}\n` +
          `  AND (y.${q(V.prevNextVersionAt)} IS NULL OR c.captured_at < y.${q(V.prevNextVersionAt)})`,
      ),
    )
  // A row at the time of a capture, at the same version, replaces what was captured then (its untracked values
  // too): the capture goes, and the row is captured as a new event rather than refused as one sent again. Where
  // the version column is valid_from, every capture is a version value of its own: a row at its time replaces it.
  const log = d.table(captures)
  const replacing = isStart
    ? `x.${q(V.staged)} AND EXISTS (SELECT 1 FROM ${log} c WHERE ${m.keyEq('c', 'x')} AND c.captured_at = x.${q(V.t)})`
    : REPLACING
  m.emit(
    'version column: rows that replace a captured state',
    d.createTempTableAs(
      REPLACED,
      `SELECT DISTINCT ${m.keyList('x')}, x.${q(V.t)} FROM ${steps} x WHERE ${replacing}`,
    ),
  )
  const replaced = d.table({ name: REPLACED })
  m.guarded(`EXISTS (SELECT 1 FROM ${replaced})`, () =>
    m.emit(
      'version column: a row at the same version replaces the capture at its time',
      `DELETE FROM ${log} c WHERE EXISTS (SELECT 1 FROM ${replaced} x WHERE ${m.keyEq('x', 'c')} AND c.captured_at = x.${q(V.t)})`,
    ),
  )
}

/** SQL condition on a VERSION_STEPS row `x`: it differs from the row before it at the same version. */
function sameVersionChange(d: SqlDialect): string {
  const q = (name: string) => d.quoteIdentifier(name)
  return `x.${q(V.version)} = x.${q(V.prevVersion)} AND x.${q(V.hash)} <> x.${q(V.prevHash)}`
}

/** SQL condition on a VERSION_STEPS row `x`: a row of the batch that overwrite may write into the version before it. */
function overwritableRow(d: SqlDialect, table: TableSpec): string {
  const q = (name: string) => d.quoteIdentifier(name)
  // A stored version a delete ended before the row is not the key's state then: the key came back (or the row
  // is one of its deleted time), so writing the row into that version would rewrite history before the delete.
  const prevEnd = `x.${q(V.prevEnd)}`
  const prevCovers = `(${prevEnd} IS NULL OR ${storedEndAfter(d, table, prevEnd, `x.${q(V.t)}`)})`
  return `x.${q(V.staged)} AND NOT x.${q(V.prevStaged)} AND ${prevCovers}`
}

/**
 * SQL: `overwritten_keys`, the keys whose version this merge wrote a row of the batch into in place (overwrite on
 * a table without a capture log; with one, the key is recomputed as a late key), read in the merge's session.
 */
export function overwrittenVersionsQuery(d: SqlDialect, plan: MergePlan): string | undefined {
  const spec = plan.table.changeDetection
  if (spec?.onSameVersion !== 'overwrite' || plan.objects.captures !== undefined) return undefined
  const keys = plan.table.key.map((k) => `x.${d.quoteIdentifier(k)}`).join(', ')
  return (
    `SELECT COUNT(*) AS overwritten_keys FROM (SELECT DISTINCT ${keys} FROM ${d.table({ name: VERSION_STEPS })} x
` + `  WHERE ${sameVersionChange(d)} AND ${overwritableRow(d, plan.table)}) o`
  )
}

/** Keys and times of the batch's rows that replace a captured state (a temporary table). */
const REPLACED = '__dimsync_replaced'

/** A batch row after a stored version with the same version value (what overwrite corrects). */
const REPLACING = `x.${V.staged} AND NOT x.${V.prevStaged} AND x.${V.version} = x.${V.prevVersion}`

/** Whether this merge corrects captured states in place (overwrite on a table with a capture log). */
export function replacesCaptures(m: MergeSql): boolean {
  const spec = m.p.table.changeDetection
  return spec?.onSameVersion === 'overwrite' && m.p.objects.captures !== undefined
}

/**
 * SQL condition: the key of the row aliased `alias` has a row of this batch at the same version as a stored
 * version (overwritten in place): its windows are recomputed like a late key's.
 */
export function replacedCaptureOf(m: MergeSql, alias: string): string {
  return `EXISTS (SELECT 1 FROM ${m.d.table({ name: REPLACED })} x WHERE ${m.keyEq('x', alias)})`
}
