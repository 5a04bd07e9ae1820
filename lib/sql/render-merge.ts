import type { TableRef } from '../core/table-ref.ts'
import { typeFamily } from '../core/staged-types.ts'
import type { CompiledStatement, SqlDialect } from './dialect.ts'
import { MergeSql, TEMP, WORK, type MergePlan } from './merge-sql.ts'
import { renderColumnPolicies } from './render-column-policies.ts'
import {
  carriedAs,
  changedKeysWithCarried,
  HAS_CARRIED,
  historyNeeded,
  renderCarriedValues,
} from './render-carried-values.ts'
import { renderChangeFeedChecks, renderOperationCheck } from './render-change-feed-checks.ts'
import { renderAppend } from './render-append.ts'
import { foundsDimension, renderFirstLoad } from './render-first-load.ts'
import { renderInferredCompletion } from './render-inferred-completion.ts'
import { LATE_INSERTED, renderLatePath } from './render-late-path.ts'
import { renderPartialUpdates } from './render-partial-updates.ts'
import { renderPolicyRewrite } from './render-policy-rewrite.ts'
import { renderSystemTimeMerge } from './render-system-time.ts'
import { withTruncates } from './render-truncates.ts'
import { renderVersionColumn, replacedCaptureOf, replacesCaptures } from './render-version-column.ts'
import {
  CAPTURE_RAW_LOGGED_COLUMN,
  CAPTURE_SEQUENCE_COLUMN,
  CAPTURE_UNTRACKED_HASH_COLUMN,
  captureRawColumn,
  refoldsPartialUpdates,
} from './render-ddl.ts'
import { rawCaptureColumns, rawWorkColumn, REFOLDED, renderRefoldLateKeys } from './render-partial-refold.ts'
import { DELETED_STATE, renderRowHash } from './row-hash.ts'
import { currentVersion } from './version-predicates.ts'
import { versionsNotEndedBy } from './fact-version-join.ts'

export { TEMP, WORK, type MergePlan } from './merge-sql.ts'
const W = WORK

/**
 * Renders the merge of one staged batch (already loaded into `plan.stage`) as a list of
 * set-based statements, to run inside one transaction (docs/invariants.md, the merge). Checks are statements that raise an
 * error, so a rejected batch aborts the transaction and nothing is written.
 */
export function renderMerge(d: SqlDialect, plan: MergePlan): CompiledStatement[] {
  const ordinary = (p: MergePlan) => withTruncates(d, p, (q) => new MergeRenderer(d, q).render())
  return plan.table.systemTime === undefined ? ordinary(plan) : renderSystemTimeMerge(d, plan, ordinary)
}

class MergeRenderer extends MergeSql {
  render(): CompiledStatement[] {
    const rehash = this.p.rehashCurrent ?? this.p.layout.removed.length > 0
    if (rehash && !this.p.layout.createDimension && this.p.table.mode !== 'append')
      this.#rehashWithoutRemovedColumns()
    if (this.p.table.mode !== 'append') renderPolicyRewrite(this)
    if (this.p.layout.partial !== undefined) renderPartialUpdates(this)
    this.#checkGrain()
    this.hashStagedRows()
    if (this.p.table.changeDetection !== undefined) renderVersionColumn(this, this.p.table.changeDetection)
    renderInferredCompletion(this)
    if (this.p.table.mode === 'append') {
      this.#checkExtractionOrder()
      if (this.p.mode === 'full' && !this.p.allowMassDelete) {
        this.#guardMassDelete(
          `(SELECT COUNT(*) FROM ${this.dim} d WHERE ${this.liveCurrent('d')} AND NOT EXISTS (SELECT 1 FROM ${this.stage} s WHERE ${this.keyEq('s', 'd')}))`,
          { goneCheap: false },
        )
      }
      renderAppend(this)
      return this.out
    }
    if (foundsDimension(this.p)) {
      // Nothing to diff against: one INSERT of the staged rows (render-first-load.ts).
      this.#checkExtractionOrder()
      renderFirstLoad(this)
      renderColumnPolicies(this, { foundsDimension: true })
      this.#recordBatch()
      return this.out
    }
    if (this.oneEventPerKey) {
      // Snapshot tables: at most one event per key, all at the extraction time, so the diff is one join of the
      // staged rows with the current versions (absent keys included) and no event table is materialized.
      this.#checkExtractionOrder()
      this.#buildChangesFromSnapshot()
      this.#checkNoBentKeys()
      if (this.absenceDeletes && !this.p.allowMassDelete)
        this.#guardMassDelete(this.#absentFromChanges(), { goneCheap: true })
    } else {
      this.#buildEvents()
      if (this.absenceDeletes) this.#addAbsenceDeletes()
      if (this.deleteEvent('s') !== undefined && this.p.table.deletes === 'ignore') {
        this.emit(
          'drop delete events (policy ignore)',
          `DELETE FROM ${this.tmp(TEMP.events)} WHERE ${this.q(W.del)}`,
        )
      }
      const lateInserted = `, CAST(0 AS ${this.d.type('int64')}) AS ${this.q(LATE_INSERTED)}`
      this.emit(
        'count events',
        this.d.createTempTableAs(
          TEMP.stats,
          `SELECT COUNT(*) AS events${this.p.objects.captures === undefined ? '' : lateInserted} FROM ${this.tmp(TEMP.events)}`,
        ),
      )
      if (this.p.objects.captures !== undefined) this.#logCaptures(this.p.objects.captures)
      if (this.p.layout.type1.length > 0) this.#newestType1Events()
      if (this.sequenced) this.#dropSupersededEvents()
      this.#buildChanges()
      this.#checkNoBentKeys()
    }
    if (this.p.layout.type1.length > 0) this.#type1BeforeBatch()
    renderCarriedValues(this)
    this.#closeCurrentVersions()
    this.#insertNewVersions()
    if (this.p.objects.captures !== undefined) renderLatePath(this, this.p.objects.captures)
    if (this.p.layout.type1.length > 0) this.#overwriteType1()
    if (this.p.table.removedColumns === 'keep_last' && this.p.layout.removed.length > 0)
      this.#keepLastRemoved()
    renderColumnPolicies(this, { foundsDimension: false })
    if (this.p.table.mode === 'mirror') this.#removeReplacedRows(this.p.objects.retired!)
    this.#checkOneCurrentVersion()
    this.#recordBatch()
    return this.out
  }

  #checkGrain(): void {
    const stage = this.stage
    const count = (expr: string) => this.d.castToString(expr)
    const nullKey = this.keys.map((k) => `${this.col('s', k)} IS NULL`).join(' OR ')
    renderOperationCheck(this)
    this.emit(
      'check NULL keys',
      `SELECT ${this.raise(
        'null-key',
        `${this.str(`${this.prefix()} has `)} || ${count('COUNT(*)')} || ` +
          this.str(` rows with a NULL key (${this.keys.join(', ')}); nothing was written`),
      )}\nFROM ${stage} s WHERE ${nullKey} HAVING COUNT(*) > 0`,
    )
    this.#checkNanKeys()
    const validFrom = this.p.layout.validFromColumn
    if (validFrom !== undefined) {
      this.emit(
        'check NULL valid_from',
        `SELECT ${this.raise(
          'null-valid-from',
          `${this.str(`${this.prefix()} has `)} || ${count('COUNT(*)')} || ` +
            this.str(` rows with a NULL valid_from column (${validFrom.name}); nothing was written`),
        )}\nFROM ${stage} s WHERE ${this.col('s', validFrom.name)} IS NULL HAVING COUNT(*) > 0`,
      )
    }
    if (this.p.table.changes !== undefined) return renderChangeFeedChecks(this)
    // A full extract is one state per key; a delta may hold several changes of a key, one per change time.
    const perTime = this.p.mode === 'incremental' && validFrom !== undefined
    const grain = perTime ? `${this.keyList('s')}, ${this.col('s', validFrom.name)}` : this.keyList('s')
    const what = perTime ? `(key, ${validFrom.name}) pairs` : 'keys'
    this.emit(
      'check duplicate keys',
      this.refuseWithExamples('duplicate-key', {
        offending: `SELECT ${this.keyText('s')} AS k FROM ${stage} s GROUP BY ${grain} HAVING COUNT(*) > 1`,
        message: (n) =>
          `${this.str(`${this.prefix()} has `)} || ${count(n)} || ` +
          this.str(` duplicate ${what} (a full extract must hold one row per key)`),
      }),
    )
  }

  /**
   * NaN is refused as a key value on every warehouse, so that a table loads alike on both: BigQuery's NaN equals
   * nothing, so a NaN key would never match its current version and every batch would open another one.
   */
  #checkNanKeys(): void {
    const floatKeys = this.p.layout.key.filter((c) => typeFamily(c.type).kind === 'float').map((c) => c.name)
    if (floatKeys.length === 0) return
    this.emit(
      'check NaN keys',
      `SELECT ${this.raise(
        'nan-key',
        `${this.str(`${this.prefix()} has `)} || ${this.d.castToString('COUNT(*)')} || ` +
          this.str(
            ` rows with a NaN key (${floatKeys.join(', ')}): NaN equals no value on BigQuery, so such a key ` +
              'could never be matched to its versions; nothing was written',
          ),
      )}\nFROM ${this.stage} s WHERE ${floatKeys.map((k) => this.d.isNan(this.col('s', k))).join(' OR ')} HAVING COUNT(*) > 0`,
    )
  }

  /** Without a capture log, history can only grow at its end: snapshots must arrive in extraction order. */
  #checkExtractionOrder(): void {
    const b = this.d.table(this.p.objects.batches)
    this.emit(
      'check extraction order',
      `SELECT ${this.raise(
        'extraction-order',
        `${this.str(`${this.prefix()} was extracted at ${this.p.extractedAt}, not after batch `)} || b.batch_id || ` +
          `${this.str(' (extracted at ')} || ${this.d.castToString('b.extracted_at')} || ` +
          this.str(
            ') which is already merged; snapshots of a table whose valid_from is the extraction time must be merged ' +
              'in extraction order (dimsync backfill sorts them); nothing was written',
          ),
      )}\nFROM ${b} b WHERE b.target = ${this.str(this.p.table.target)} AND b.extracted_at >= ${this.d.timestampLiteral(this.p.extractedAt)}\nLIMIT 1`,
    )
  }

  /**
   * A column the source stopped sending stays in the dimension, but its old values must not make every current
   * version differ from the staged rows: current versions are hashed again over the columns still tracked.
   */
  #rehashWithoutRemovedColumns(): void {
    const n = this.names
    const hash = renderRowHash(this.d, this.p.layout.tracked, 'd')
    this.emit(
      'schema evolution: hash current versions without the removed columns',
      `UPDATE ${this.dim} AS d SET ${this.q(n.rowHash)} = ${hash}\nWHERE ${this.current('d')} AND d.${this.q(n.rowHash)} <> ${hash}`,
    )
  }

  #buildEvents(): void {
    const del = this.deleteEvent('s') ?? 'FALSE'
    const rowHash = this.stagedRowHash('s')
    const raw = this.#refolds ? this.attributes.map((_, i) => `, s.${this.q(rawWorkColumn(i))}`).join('') : ''
    const columns = this.stored.map((c) => this.col('s', c)).join(', ') + raw
    const sequence = this.p.layout.sequence
    const order = sequence === undefined ? '' : `, ${this.col('s', sequence.name)} AS ${this.q(W.order)}`
    const untracked = this.logsUntrackedHash
      ? `,\n  CASE WHEN ${del} THEN ${this.str(DELETED_STATE)} ELSE ${this.stagedHash([...this.p.layout.type1, ...this.p.layout.keepFirst], 's')} END AS ${this.q(W.untrackedHash)}`
      : ''
    // A change feed may deliver the same event twice in one batch (the grain check refused different ones).
    const events =
      `SELECT e.*, CASE WHEN e.${this.q(W.del)} THEN ${this.str(DELETED_STATE)} ELSE e.${this.q(W.rowHash)} END AS ${this.q(W.state)}\n` +
      `FROM (\n  SELECT ${columns}, ${this.eventTime} AS ${this.q(W.t)}, ${del} AS ${this.q(W.del)},\n` +
      `  ${rowHash} AS ${this.q(W.rowHash)}${order}${untracked}\n  FROM ${this.stage} s\n) e`
    this.emit(
      'build events',
      this.d.createTempTableAs(
        TEMP.events,
        this.p.table.changes === undefined
          ? events
          : this.d.firstPerGroup({
              select: `${events}\nWHERE TRUE`,
              separator: '\n',
              partitionBy: `${this.keyList('e')}, e.${this.q(W.t)}${sequence ? `, e.${this.q(W.order)}` : ''}`,
            }),
      ),
    )
  }

  /** Full extracts: a current key absent from the extract was deleted at the extraction time. */
  #addAbsenceDeletes(): void {
    const n = this.names
    const absent = `${this.liveCurrent('d')} AND NOT EXISTS (SELECT 1 FROM ${this.stage} s WHERE ${this.keyEq('s', 'd')})`
    if (!this.p.allowMassDelete)
      this.#guardMassDelete(`(SELECT COUNT(*) FROM ${this.dim} d WHERE ${absent})`, { goneCheap: false })
    const columns = this.stored.map((c) => this.q(c)).join(', ')
    const untrackedName = this.logsUntrackedHash ? `, ${this.q(W.untrackedHash)}` : ''
    const untrackedValue = this.logsUntrackedHash ? `, ${this.str(DELETED_STATE)}` : ''
    this.emit(
      'add deletes by absence',
      `INSERT INTO ${this.tmp(TEMP.events)} (${columns}, ${this.q(W.t)}, ${this.q(W.del)}, ${this.q(W.rowHash)}, ${this.q(W.state)}${untrackedName})\n` +
        `SELECT ${this.stored.map((c) => this.col('d', c)).join(', ')}, ${this.d.timestampLiteral(this.p.extractedAt)}, TRUE, d.${this.q(n.rowHash)}, ${this.str(DELETED_STATE)}${untrackedValue}\n` +
        `FROM ${this.dim} d WHERE ${absent}`,
    )
  }

  /**
   * Refuses the batch when the keys deleted by absence exceed the allowed share of live current keys. When `gone`
   * is cheap to read twice (the changes table, not a scan of the dimension), the live keys are counted only up to
   * the most that could still refuse the batch (ceil(gone / share) + 1): a count below that bound is exact, one
   * that reaches it cannot refuse, and the dimension's history is not read to its end on every merge (where the
   * dialect can stop a count: dialect.countUpTo).
   */
  #guardMassDelete(goneExpression: string, { goneCheap }: { goneCheap: boolean }): void {
    const share = this.p.table.maxDeleteShare
    const liveRows = `SELECT 1 FROM ${this.dim} d WHERE ${this.liveCurrent('d')}`
    const live =
      goneCheap && share > 0
        ? this.d.countUpTo(
            liveRows,
            `(SELECT CAST(CEIL(${goneExpression} / ${share}) AS ${this.d.type('int64')}) + 1)`,
          )
        : `(SELECT COUNT(*) FROM ${this.dim} d WHERE ${this.liveCurrent('d')})`
    this.emit(
      'guard mass delete',
      `SELECT ${this.raise(
        'mass-delete',
        `${this.str(`${this.prefix()} would delete `)} || ${this.d.castToString('x.gone')} || ${this.str(' of ')} || ` +
          `${this.d.castToString('x.live')} || ` +
          this.str(
            ` current keys (more than the allowed share ${share}); nothing was written. ` +
              'If the source really lost these rows, rerun with --allow-mass-delete',
          ),
      )}\nFROM (\n  SELECT ${live} AS live,\n` +
        `  ${goneExpression} AS gone\n) x\nWHERE x.live > 0 AND x.gone > ${share} * x.live`,
    )
  }

  #absentFromChanges(): string {
    return `(SELECT COUNT(*) FROM ${this.tmp(TEMP.changes)} WHERE ${this.q(W.absent)})`
  }

  /**
   * The diff of a snapshot against the current versions, in one hash join over all keys whose build side is narrow:
   * the staged rows (every attribute, the row hash) against the current versions' key and state only. One FULL OUTER
   * JOIN carrying every attribute of both sides did not fit DuckDB's default memory limit at 10M keys; a second join
   * over all keys to find the deleted ones (the dimension against the staged keys) raised a 3M-key merge's resident
   * memory by 45-50 MB, for a second hash table of every key. A staged row whose state differs from its key's current
   * state is a change; its attributes are the staged ones. With a delete policy, a live current key missing from a
   * full extract (hence the FULL OUTER JOIN) or soft deleted in it is a deletion: the join writes it to the changes,
   * flagged, beside the changed rows; the deleted keys are then listed, taken out, and added back with their last
   * attributes, read from their current versions by a join with that short list.
   */
  #buildChangesFromSnapshot(): void {
    const n = this.names
    const softDeleted = this.softDeleted('s')
    const keepSoftDeletes = softDeleted !== undefined && this.p.table.deletes !== 'ignore'
    const dropSoftDeletes = softDeleted !== undefined && !keepSoftDeletes ? ` WHERE NOT (${softDeleted})` : ''
    const deletes = this.absenceDeletes || keepSoftDeletes
    const del = this.q(W.del)
    const rowHash = this.q(W.rowHash)
    const stateOf = this.q(W.state)
    const live = this.q(W.live)
    const stagedDelete = keepSoftDeletes ? softDeleted : 'FALSE'
    const staged =
      `SELECT ${this.stored.map((c) => this.col('s', c)).join(', ')}, ${stagedDelete} AS ${del},\n` +
      `    ${this.stagedRowHash('s')} AS ${rowHash}\n` +
      `  FROM ${this.stage} s${dropSoftDeletes}`
    const state = `CASE WHEN d.${this.q(n.isDeleted)} THEN ${this.str(DELETED_STATE)} ELSE d.${this.q(n.rowHash)} END`
    const liveState = deletes ? `, ${this.liveCurrent('d')} AS ${live}` : ''
    const currentStates = `SELECT ${this.keyList('d')}, ${state} AS ${stateOf}${liveState}\n  FROM ${this.dim} d WHERE ${this.current('d')}`
    const firstKey = this.q(this.keys[0]!)
    // Absent keys need the FULL OUTER JOIN; soft deletes alone need only the staged rows.
    const join = this.absenceDeletes ? 'FULL OUTER JOIN' : 'LEFT JOIN'
    const diff = `FROM (\n  ${staged}\n) e ${join} (\n  ${currentStates}\n) cur ON ${this.keyEq('cur', 'e')}`
    const changed = `NOT e.${del} AND e.${rowHash} IS DISTINCT FROM COALESCE(cur.${stateOf}, ${this.str(DELETED_STATE)})`
    // A column named by its reference keeps its name: a wide table's diff need not name each column twice.
    const same = this.p.maxStatementLength === undefined ? (c: string) => ` AS ${this.q(c)}` : () => ''
    const changeColumns = (absent: string) => [
      ...this.stored.map((c) => `${this.col('e', c)}${same(c)}`),
      `${this.d.timestampLiteral(this.p.extractedAt)} AS ${this.q(W.t)}`,
      `FALSE AS ${del}`,
      `e.${rowHash} AS ${rowHash}`,
      `e.${rowHash} AS ${stateOf}`,
      `(cur.${stateOf} IS NOT NULL) AS ${this.q(W.hadCurrent)}`,
      `1 AS ${this.q(W.changeNo)}`,
      `${absent} AS ${this.q(W.absent)}`,
      // dbt: the start of the version a deletion ends (deleted keys are added below, from that version).
      ...(this.dbtDeletionIds ? [`CAST(NULL AS ${this.d.type('timestamp')}) AS ${this.q(W.prevStart)}`] : []),
    ]
    if (!deletes) {
      this.emit(
        'diff snapshot against current versions',
        this.d.createTempTableAs(
          TEMP.changes,
          `SELECT ${changeColumns('FALSE').join(',\n  ')}\n${diff}\nWHERE ${changed}`,
        ),
      )
    } else {
      // The changed rows are written once: a table of the join's rows split into two copies raised a 10M-key
      // merge's resident memory by 45 MB (its 500,000 changes outgrew DuckDB's memory limit). The deleted keys come
      // from the current versions (an absent key has no staged row); the flag and these columns stay unread after.
      const gone = `cur.${live} AND (e.${firstKey} IS NULL OR e.${del})`
      const currentKey = (i: number) => this.q(`${W.currentKey}${i}`)
      const flagged = [
        ...changeColumns(`(e.${firstKey} IS NULL)`),
        `COALESCE(${gone}, FALSE) AS ${this.q(W.gone)}`,
        ...this.keys.map((k, i) => `${this.col('cur', k)} AS ${currentKey(i)}`),
      ]
      this.emit(
        'diff snapshot against current versions',
        this.d.createTempTableAs(
          TEMP.changes,
          `SELECT ${flagged.join(',\n  ')}\n${diff}\nWHERE (e.${firstKey} IS NOT NULL AND ${changed}) OR (${gone})`,
        ),
      )
      this.emit(
        'find deleted keys',
        this.d.createTempTableAs(
          TEMP.goneKeys,
          `SELECT ${this.keys.map((k, i) => `x.${currentKey(i)} AS ${this.q(k)}`).join(', ')}, x.${this.q(W.absent)}\n` +
            `FROM ${this.tmp(TEMP.changes)} x WHERE x.${this.q(W.gone)}`,
        ),
      )
      this.emit(
        'take deleted keys out of the changes',
        `DELETE FROM ${this.tmp(TEMP.changes)} WHERE ${this.q(W.gone)}`,
      )
      const goneColumns = [
        ...this.stored.map((c) => this.col('d', c)),
        this.d.timestampLiteral(this.p.extractedAt),
        'TRUE',
        `d.${this.q(n.rowHash)}`,
        this.str(DELETED_STATE),
        'TRUE',
        '1',
        `g.${this.q(W.absent)}`,
        ...(this.dbtDeletionIds ? [`d.${this.q(n.validFrom)}`] : []),
      ]
      const columns = [
        ...[...this.stored, W.t, W.del, W.rowHash, W.state, W.hadCurrent, W.changeNo, W.absent],
        ...(this.dbtDeletionIds ? [W.prevStart] : []),
      ]
      this.emit(
        'add deleted keys to the changes',
        `INSERT INTO ${this.tmp(TEMP.changes)} (${columns.map((c) => this.q(c)).join(', ')})\n` +
          `SELECT ${goneColumns.join(', ')}\nFROM ${this.dim} d JOIN ${this.tmp(TEMP.goneKeys)} g ON ${this.keyEq('g', 'd')}\nWHERE ${this.current('d')}`,
      )
    }
    this.emit(
      'count events',
      this.d.createTempTableAs(
        TEMP.stats,
        `SELECT (SELECT COUNT(*) FROM ${this.stage} s${dropSoftDeletes}) + ${this.#absentFromChanges()} AS events`,
      ),
    )
  }

  #logCaptures(captures: TableRef): void {
    const log = this.d.table(captures)
    const ev = this.tmp(TEMP.events)
    const seq = this.sequenced
    // The same event: same key and change time (and sequence, in a sequenced change feed).
    const sameEvent = (e: string) =>
      `c.captured_at = ${e}.${this.q(W.t)}` +
      (seq ? ` AND c.${this.q(CAPTURE_SEQUENCE_COLUMN)} = ${e}.${this.q(W.order)}` : '')
    const at = seq
      ? `${this.str(' at ')} || ${this.d.castToString(`e.${this.q(W.t)}`)} || ${this.str(' (sequence ')} || ${this.d.castToString(`e.${this.q(W.order)}`)} || ')'`
      : `${this.str(' at ')} || ${this.d.castToString(`e.${this.q(W.t)}`)}`
    const why = seq
      ? 'the source changed an event without changing its valid_from and sequence columns'
      : 'the source changed a row without changing its valid_from column'
    this.#dropEventsOfCurrentVersions()
    // Every capture these statements look for is at or after an event's time, so at or after the batch's earliest
    // one: the log is read from there on (on BigQuery, its partitions of that month and later).
    const earliest = this.d.earliestEventTime(`SELECT MIN(${this.q(W.t)}) FROM ${ev}`)
    for (const sql of earliest.statements) this.emit('note the earliest event time', sql)
    this.#earliestEvent = earliest.value
    const recent = (c: string) => `${c}.captured_at >= ${earliest.value}`
    this.#recentCaptures = recent
    this.emit(
      'check conflicting captures',
      `SELECT ${this.raise(
        'conflicting-capture',
        `${this.str(`${this.prefix()}: key `)} || ${this.keyText('e')} || ${this.str(' already has a different state captured')} || ` +
          `${at} || ${this.str(' (batch ')} || c.batch_id || ${this.str(`): ${why}; nothing was written`)}`,
      )}\nFROM ${ev} e JOIN ${log} c ON ${this.keyEq('c', 'e')} AND ${sameEvent('e')} AND ${recent('c')}\n` +
        `WHERE ${this.#refolds ? this.#saidOtherwise() : this.#otherState()}\nLIMIT 1`,
    )
    this.emit(
      'drop re-delivered events',
      `DELETE FROM ${ev} WHERE EXISTS (SELECT 1 FROM ${log} c WHERE ${this.keys.map((k) => `c.${this.q(k)} = ${ev}.${this.q(k)}`).join(' AND ')} AND ${sameEvent(ev)} AND ${recent('c')})`,
    )
    // A key is late when it has a capture after one of its events, or (sequenced) another event at the same time.
    const later = seq ? 'c.captured_at >=' : 'c.captured_at >'
    this.emit(
      'find late keys',
      this.d.createTempTableAs(
        TEMP.lateKeys,
        `SELECT DISTINCT ${this.keyList('e')} FROM ${ev} e\nWHERE EXISTS (SELECT 1 FROM ${log} c WHERE ${this.keyEq('c', 'e')} AND ${later} e.${this.q(W.t)} AND ${recent('c')})` +
          (replacesCaptures(this) ? `\n   OR ${replacedCaptureOf(this, 'e')}` : ''),
      ),
    )
    // Partial updates read older captures of late keys only: not at all in a batch without late keys.
    const lateKeysExist = `EXISTS (SELECT 1 FROM ${this.tmp(TEMP.lateKeys)})`
    if (this.p.layout.partial !== undefined)
      this.guarded(lateKeysExist, () => this.#refuseLatePartialEvents(log, recent('c')))
    const rawNames = this.#refolds
      ? rawCaptureColumns(this)
          .map((c) => `, ${this.q(c)}`)
          .join('')
      : ''
    const rawValues = this.#refolds
      ? `, TRUE${this.attributes.map((_, i) => `, e.${this.q(rawWorkColumn(i))}`).join('')}`
      : ''
    const untrackedName = this.logsUntrackedHash ? `, ${CAPTURE_UNTRACKED_HASH_COLUMN}` : ''
    const untrackedValue = this.logsUntrackedHash ? `, e.${this.q(W.untrackedHash)}` : ''
    this.emit(
      'append capture log',
      `INSERT INTO ${log} (${this.keyList()}, captured_at, ${seq ? `${this.q(CAPTURE_SEQUENCE_COLUMN)}, ` : ''}state_hash, is_deleted, batch_id${untrackedName}${rawNames})\n` +
        `SELECT ${this.keyList('e')}, e.${this.q(W.t)}, ${seq ? `e.${this.q(W.order)}, ` : ''}e.${this.q(W.state)}, e.${this.q(W.del)}, ${this.str(this.p.batchId)}${untrackedValue}${rawValues} FROM ${ev} e`,
    )
    if (this.#refolds) this.guarded(lateKeysExist, () => renderRefoldLateKeys(this, captures))
  }

  /**
   * Full extracts: every key comes with its last change time, most of them the start of their current version,
   * long ago. Such an event is the current version itself (same start, same state, same type 1 values), already
   * in the capture log: it is dropped here, from the open partition alone, as the log would drop it (re-delivered),
   * so that the log is read from the earliest event that changes something rather than from the oldest change time
   * in the snapshot. Not where the log holds more than a version shows (keep_first values, raw values of partial
   * updates, sequences).
   */
  #dropEventsOfCurrentVersions(): void {
    if (this.p.mode !== 'full' || this.sequenced || this.#refolds || this.p.layout.keepFirst.length > 0)
      return
    const n = this.names
    const ev = this.tmp(TEMP.events)
    const state = `CASE WHEN d.${this.q(n.isDeleted)} THEN ${this.str(DELETED_STATE)} ELSE d.${this.q(n.rowHash)} END`
    const untracked = this.logsUntrackedHash
      ? ` AND ${renderRowHash(this.d, this.p.layout.type1, 'd')} = ${ev}.${this.q(W.untrackedHash)}`
      : ''
    this.emit(
      "drop events that are their key's current version",
      `DELETE FROM ${ev} WHERE EXISTS (SELECT 1 FROM ${this.dim} d WHERE ${this.current('d')} AND ` +
        `${this.keys.map((k) => `d.${this.q(k)} = ${ev}.${this.q(k)}`).join(' AND ')} AND d.${this.q(n.validFrom)} = ${ev}.${this.q(W.t)} ` +
        `AND ${state} = ${ev}.${this.q(W.state)}${untracked})`,
    )
  }

  /** SQL condition: capture `c` of the log is at or after the batch's earliest event (read from there on). */
  #recentCaptures: ((c: string) => string) | undefined
  /** The batch's earliest event time, once #logCaptures noted it (a script variable on BigQuery). */
  #earliestEvent: string | undefined

  /** Partial-update tables whose capture log keeps raw values (render-partial-refold.ts). */
  get #refolds(): boolean {
    return this.p.layout.partial !== undefined && refoldsPartialUpdates(this.p.table)
  }

  /**
   * A logged capture `c` and an event `e` of the same key and time whose states differ, or (where both hashes are
   * known) their untracked values.
   */
  #otherState(): string {
    const state = `c.state_hash <> e.${this.q(W.state)}`
    if (!this.logsUntrackedHash) return state
    return `(${state} OR c.${CAPTURE_UNTRACKED_HASH_COLUMN} <> e.${this.q(W.untrackedHash)})`
  }

  /** A logged capture `c` and an event `e` of the same key and time that said different things. */
  #saidOtherwise(): string {
    const rawDiffers = this.attributes
      .map((c, i) => ` OR c.${this.q(captureRawColumn(c))} IS DISTINCT FROM e.${this.q(rawWorkColumn(i))}`)
      .join('')
    return (
      `(CASE WHEN c.${this.q(CAPTURE_RAW_LOGGED_COLUMN)} THEN (c.is_deleted <> e.${this.q(W.del)}${rawDiffers}) ` +
      `ELSE ${this.#otherState()} END)`
    )
  }

  /**
   * Partial updates fold each event into the state of its key before it (render-partial-updates.ts), from the
   * rows of the batch and the key's current version. A late event would have to fold into the state at its own
   * time and refold every later capture of its key, which the capture log (folded states only) cannot do yet: the
   * batch is refused, naming the key, its earliest late event and its newest capture, rather than folding the
   * event into the current state (a silently wrong history).
   */
  #refuseLatePartialEvents(log: string, recent: string): void {
    // Tables that refold late keys refuse only keys with a capture logged before raw values were kept.
    const lateKeys = this.#refolds
      ? `(SELECT * FROM ${this.tmp(TEMP.lateKeys)} k WHERE EXISTS (SELECT 1 FROM ${log} u WHERE ${this.keyEq('u', 'k')} AND u.${this.q(CAPTURE_RAW_LOGGED_COLUMN)} IS NULL))`
      : this.tmp(TEMP.lateKeys)
    const t = this.q(W.t)
    const at = (e: string) => this.d.castToString(e)
    const newest = this.d.firstPerGroup({
      select:
        `SELECT ${this.keyList('c')}, c.captured_at, c.batch_id FROM ${log} c\n` +
        `  WHERE ${recent} AND EXISTS (SELECT 1 FROM ${lateKeys} l WHERE ${this.keyEq('l', 'c')})`,
      separator: '\n  ',
      partitionBy: this.keyList('c'),
      orderBy: 'c.captured_at DESC, c.batch_id',
    })
    const earliest =
      `SELECT ${this.keyList('e')}, MIN(e.${t}) AS ${t} FROM ${this.tmp(TEMP.events)} e\n` +
      `  WHERE EXISTS (SELECT 1 FROM ${lateKeys} l WHERE ${this.keyEq('l', 'e')}) GROUP BY ${this.keyList('e')}`
    // The first late key in key order, so the message is the same on every warehouse and every run.
    const first =
      `SELECT ${this.keyText('e')} AS key_text, e.${t} AS event_at, c.captured_at, c.batch_id\n` +
      `  FROM (\n  ${earliest}\n  ) e JOIN (\n  ${newest}\n  ) c ON ${this.keyEq('c', 'e')}\n  ORDER BY key_text LIMIT 1`
    this.emit(
      'check late events of a table with partial updates',
      `SELECT ${this.raise(
        'late-partial-event',
        `${this.str(`${this.prefix()}: key `)} || x.key_text || ${this.str(' has an event at ')} || ${at('x.event_at')} || ` +
          `${this.str(', not after its state captured at ')} || ${at('x.captured_at')} || ${this.str(' (batch ')} || x.batch_id || ` +
          this.str(
            '): a late event of a table with partial updates (ignore_null_updates, columns_to_update) cannot be ' +
              'folded into the state at its time yet; merge the events in change-time order; nothing was written',
          ),
      )}\nFROM (\n  ${first}\n) x`,
    )
  }

  /**
   * Sequenced change feeds: of a key's events at one change time, only the last in sequence order is the key's
   * state then (a version cannot start and end at the same instant). The others stay in the capture log.
   */
  #dropSupersededEvents(): void {
    const ev = this.tmp(TEMP.events)
    this.emit(
      'drop events superseded at the same change time',
      `DELETE FROM ${ev} WHERE EXISTS (SELECT 1 FROM ${ev} l WHERE ${this.keys.map((k) => `l.${this.q(k)} = ${ev}.${this.q(k)}`).join(' AND ')} ` +
        `AND l.${this.q(W.t)} = ${ev}.${this.q(W.t)} AND l.${this.q(W.order)} > ${ev}.${this.q(W.order)})`,
    )
  }

  #buildChanges(): void {
    const n = this.names
    const ev = this.tmp(TEMP.events)
    const notLate =
      this.p.objects.captures === undefined
        ? ''
        : `WHERE NOT EXISTS (SELECT 1 FROM ${this.tmp(TEMP.lateKeys)} l WHERE ${this.keyEq('l', 'e')})`
    const current =
      `SELECT ${this.keyList('d')}, CASE WHEN d.${this.q(n.isDeleted)} THEN ${this.str(DELETED_STATE)} ELSE d.${this.q(n.rowHash)} END AS ${this.q(W.state)}, ` +
      `d.${this.q(n.rowHash)} AS ${this.q(W.rowHash)}` +
      (this.dbtDeletionIds ? `, d.${this.q(n.validFrom)} AS ${this.q(W.prevStart)}` : '') +
      this.attributes.map((c) => `, ${this.col('d', c)}`).join('') +
      `\n  FROM ${this.dim} d WHERE ${this.current('d')}`
    // A deletion version carries the last known attributes: those of the event before it, or the current version.
    const firstOfKey = `e.${this.q(W.seq)} = 1`
    const lagAlias = (i: number) => this.q(`__dimsync_lag_${i}`)
    const previous = (c: string) => `e.${lagAlias(this.attributes.indexOf(c))}`
    const carried = (c: string) =>
      `CASE WHEN e.${this.q(W.del)} THEN (CASE WHEN ${firstOfKey} THEN ${this.col('cur', c)} ELSE ${previous(c)} END) ELSE ${this.col('e', c)} END AS ${this.q(c)}`
    const carriedHash = `CASE WHEN e.${this.q(W.del)} THEN (CASE WHEN ${firstOfKey} THEN cur.${this.q(W.rowHash)} ELSE e.${lagAlias(this.attributes.length)} END) ELSE e.${this.q(W.rowHash)} END AS ${this.q(W.rowHash)}`
    const select = [
      ...this.keys.map((k) => this.col('e', k)),
      ...this.attributes.map(carried),
      `e.${this.q(W.t)}`,
      `e.${this.q(W.del)}`,
      carriedHash,
      `e.${this.q(W.state)}`,
      `(cur.${this.q(W.state)} IS NOT NULL) AS ${this.q(W.hadCurrent)}`,
    ]
    const w = `PARTITION BY ${this.keyList('e')} ORDER BY e.${this.q(W.t)}`
    // The start of the version before each change (windows see only the changes, WHERE applies first): a deletion
    // version's dbt_scd_id hashes the id of the version it ends.
    if (this.dbtDeletionIds)
      select.push(
        `COALESCE(LAG(e.${this.q(W.t)}) OVER (${w}), cur.${this.q(W.prevStart)}) AS ${this.q(W.prevStart)}`,
      )
    const lagged = [...this.attributes, W.rowHash]
      .map((c, i) => `LAG(${this.col('e', c)}) OVER (${w}) AS ${lagAlias(i)}`)
      .join(',\n    ')
    const sql =
      `WITH cur AS (\n  ${current}\n),\nseq AS (\n  SELECT e.*, ROW_NUMBER() OVER (${w}) AS ${this.q(W.seq)},\n` +
      `    COALESCE(LAG(e.${this.q(W.state)}) OVER (${w}), cur.${this.q(W.state)}, ${this.str(DELETED_STATE)}) AS ${this.q(W.prevState)},\n    ${lagged}\n` +
      `  FROM ${ev} e LEFT JOIN cur ON ${this.keyEq('cur', 'e')}\n  ${notLate}\n)\n` +
      `SELECT ${select.join(',\n  ')},\n  ROW_NUMBER() OVER (PARTITION BY ${this.keyList('e')} ORDER BY e.${this.q(W.t)}) AS ${this.q(W.changeNo)}\n` +
      `FROM seq e LEFT JOIN cur ON ${this.keyEq('cur', 'e')}\n` +
      `WHERE e.${this.q(W.state)} IS DISTINCT FROM e.${this.q(W.prevState)}`
    this.emit('diff events against current versions', this.d.createTempTableAs(TEMP.changes, sql))
  }

  #closeCurrentVersions(): void {
    const n = this.names
    this.emit(
      'close changed current versions',
      `UPDATE ${this.dim} AS d SET ${this.q(n.validTo)} = ${this.endAtChange(`c.${this.q(W.t)}`, `c.${this.q(W.del)}`)}, ${this.q(n.isCurrent)} = FALSE\n` +
        `FROM (SELECT * FROM ${this.tmp(TEMP.changes)} WHERE ${this.q(W.changeNo)} = 1 AND ${this.q(W.hadCurrent)}) c\n` +
        `WHERE ${this.current('d')} AND ${this.keyEq('d', 'c')}`,
    )
  }

  #insertNewVersions(): void {
    const onlyVersions = this.p.table.deletes === 'new_record' ? '' : `WHERE NOT x.${this.q(W.del)}`
    // In a snapshot every key has one change, so no version of this batch is followed by another.
    const following = (c: string) =>
      `LEAD(c.${this.q(c)}) OVER (PARTITION BY ${this.keyList('c')} ORDER BY c.${this.q(W.t)})`
    const next = this.oneEventPerKey ? `CAST(NULL AS ${this.d.type('timestamp')})` : following(W.t)
    const nextDeleted = this.oneEventPerKey ? 'FALSE' : `COALESCE(${following(W.del)}, FALSE)`
    this.seedKeys()
    this.emit(
      'insert new versions',
      `INSERT INTO ${this.dim} (${this.metadataAndStoredList()})\n` +
        `SELECT ${this.newKey('x', [this.keyList('x'), `x.${this.q(W.t)}`])},\n` +
        `  ${this.stored.map((c) => this.col('x', c)).join(', ')},\n` +
        `  x.${this.q(W.t)}, COALESCE(${this.endAtChange(`x.${this.q(W.next)}`, `x.${this.q(W.nextDeleted)}`)}, ${this.openEnd()}), x.${this.q(W.next)} IS NULL, x.${this.q(W.del)}, x.${this.q(W.rowHash)}, ${this.str(this.p.batchId)}` +
        `${this.presetColumnValues('x', `x.${this.q(W.t)}`, `x.${this.q(W.del)}`, this.dbtDeletionIds ? `x.${this.q(W.prevStart)}` : undefined)}\n` +
        `FROM (\n  SELECT c.*, ${next} AS ${this.q(W.next)}, ${nextDeleted} AS ${this.q(W.nextDeleted)}\n` +
        `  FROM ${this.tmp(TEMP.changes)} c\n) x\n${onlyVersions}`,
    )
    this.advanceKeys('x', `${this.tmp(TEMP.changes)} x ${onlyVersions}`, 'new versions')
  }

  /**
   * Type 1 values of the batch's keys before the merge, read from their current versions (the open partition on
   * BigQuery): every version of a key holds the same type 1 values, so these are the values of all its versions.
   * A late key may have no current version (a delete closed it under `invalidate`, now or under the policy the
   * table had before a config edit): its values are read from its newest version, before the late path changes any.
   */
  #type1BeforeBatch(): void {
    const cols = [...this.keys, ...this.p.layout.type1.map((c) => c.name)]
    this.emit(
      'type 1 values before the batch',
      this.d.createTempTableAs(
        TEMP.type1Before,
        `SELECT ${cols.map((c) => this.col('d', c)).join(', ')} FROM ${this.dim} d\n` +
          `WHERE ${this.current('d')} AND EXISTS (SELECT 1 FROM ${this.stage} s WHERE ${this.keyEq('s', 'd')})`,
      ),
    )
    // Whatever the policy now: a dimension merged under `invalidate` before a config edit holds closed keys too.
    this.#type1ReturningKeys()
    if (this.p.objects.captures === undefined) return
    const before = this.tmp(TEMP.type1Before)
    this.guarded(`EXISTS (SELECT 1 FROM ${this.tmp(TEMP.lateKeys)})`, () =>
      this.emit(
        'type 1 values before the batch of late keys without a current version',
        `INSERT INTO ${before} (${cols.map((c) => this.q(c)).join(', ')})\n` +
          this.d.firstPerGroup({
            select:
              `SELECT ${cols.map((c) => this.col('d', c)).join(', ')} FROM ${this.dim} d\n` +
              `WHERE EXISTS (SELECT 1 FROM ${this.tmp(TEMP.lateKeys)} l WHERE ${this.keyEq('l', 'd')})\n` +
              `  AND NOT EXISTS (SELECT 1 FROM ${before} b WHERE ${this.keyEq('b', 'd')})`,
            separator: '\n',
            partitionBy: this.keyList('d'),
            orderBy: `d.${this.q(this.names.validFrom)} DESC, d.${this.q(this.names.surrogateKey)} DESC`,
          }),
      ),
    )
  }

  /**
   * Type 1 columns hold, on every version of a key, the values of the key's newest event that is not a delete, in
   * change time then sequence order (a delete sends no values; the values of an update before it stay). Per key of
   * the batch: its newest such event in the batch, read before events superseded at the same change time are
   * dropped (a delete superseding an update at its time keeps the update's values), kept only where no capture
   * of the key that is not a delete is newer. A key whose events are all newer than its captures (not late) has
   * none; partial-update tables that fold late keys again take the late key's newest refolded state instead.
   */
  #newestType1Events(): void {
    const q = (name: string) => this.q(name)
    const type1 = this.p.layout.type1.map((c) => c.name)
    const order = this.sequenced ? `, e.${q(W.order)}` : ''
    const newest = this.tmp(TEMP.type1Newest)
    this.emit(
      'type 1: newest event of each key that is not a delete',
      this.d.createTempTableAs(
        TEMP.type1Newest,
        this.d.firstPerGroup({
          select:
            `SELECT ${[...this.keys, ...type1].map((c) => this.col('e', c)).join(', ')}, e.${q(W.t)}${order}\n` +
            `FROM ${this.tmp(TEMP.events)} e WHERE NOT e.${q(W.del)}`,
          separator: '\n',
          partitionBy: this.keyList('e'),
          orderBy: `e.${q(W.t)} DESC${order ? `${order} DESC` : ''}`,
        }),
      ),
    )
    const log = this.d.table(this.p.objects.captures!)
    const late = this.tmp(TEMP.lateKeys)
    this.guarded(`EXISTS (SELECT 1 FROM ${late})`, () => {
      if (this.#refolds) {
        this.emit(
          'type 1: late keys take their newest refolded state',
          `DELETE FROM ${newest} WHERE EXISTS (SELECT 1 FROM ${late} l WHERE ${this.keys.map((k) => `l.${q(k)} = ${newest}.${q(k)}`).join(' AND ')})`,
        )
        const sequence = this.sequenced ? `, r.${q(CAPTURE_SEQUENCE_COLUMN)}` : ''
        this.emit(
          'type 1: newest refolded state of late keys',
          `INSERT INTO ${newest} (${[...this.keys, ...type1, W.t, ...(this.sequenced ? [W.order] : [])].map(q).join(', ')})\n` +
            this.d.firstPerGroup({
              select:
                `SELECT ${[...this.keys, ...type1].map((c) => this.col('r', c)).join(', ')}, r.captured_at${sequence}\n` +
                `FROM ${this.tmp(REFOLDED)} r WHERE NOT r.is_deleted`,
              separator: '\n',
              partitionBy: this.keyList('r'),
              orderBy: `r.captured_at DESC${sequence ? `${sequence} DESC` : ''}`,
            }),
        )
        return
      }
      const newer =
        `c.captured_at > ${newest}.${q(W.t)}` +
        (this.sequenced
          ? ` OR (c.captured_at = ${newest}.${q(W.t)} AND c.${q(CAPTURE_SEQUENCE_COLUMN)} > ${newest}.${q(W.order)})`
          : '')
      this.emit(
        'type 1: drop events of late keys older than a capture that is not a delete',
        `DELETE FROM ${newest} WHERE EXISTS (SELECT 1 FROM ${log} c WHERE ${this.keys.map((k) => `c.${q(k)} = ${newest}.${q(k)}`).join(' AND ')} ` +
          `AND NOT c.is_deleted AND (${newer}) AND ${this.#recentCaptures!('c')})`,
      )
    })
  }

  /**
   * Untracked columns take the values of the key's newest event that is not a delete on every version of the key
   * (#newestType1Events; in a snapshot, the staged row). Rewriting every version reads the keys' whole history, so
   * it runs only when a version may hold other values (see #type1MayDiffer); when none can, it would change nothing.
   */
  #overwriteType1(): void {
    const type1 = this.p.layout.type1.map((c) => c.name)
    const latest = (columns: readonly string[]) => {
      if (this.oneEventPerKey) return `SELECT * FROM ${this.#newestType1(columns)} e`
      // A key whose newest event that is not a delete is not in this batch keeps the values it had (all its
      // versions share them): this also repairs versions the late path wrote with a late event's older values.
      const cols = (alias: string) => [...this.keys, ...columns].map((c) => this.col(alias, c)).join(', ')
      return this.d.firstPerGroup({
        select:
          `SELECT * FROM (\n` +
          `    SELECT ${cols('e')}, 1 AS ${this.q(W.priority)} FROM ${this.tmp(TEMP.type1Newest)} e\n` +
          `    UNION ALL\n` +
          `    SELECT ${cols('b')}, 2 FROM ${this.tmp(TEMP.type1Before)} b\n` +
          `  ) l WHERE TRUE`,
        separator: '\n  ',
        partitionBy: this.keyList('l'),
        orderBy: `l.${this.q(W.priority)}`,
      })
    }
    const overwrite = (columns: readonly string[]) =>
      `UPDATE ${this.dim} AS d SET ${columns.map((c) => `${this.q(c)} = l.${this.q(c)}`).join(', ')}\n` +
      `FROM (\n  ${latest(columns)}\n) l\n` +
      `WHERE ${this.keyEq('d', 'l')} AND (${columns.map((c) => `d.${this.q(c)} IS DISTINCT FROM l.${this.q(c)}`).join(' OR ')})`
    const mayDiffer = (columns: readonly string[]) =>
      this.#type1MayDiffer(this.#newestType1(columns), columns)
    const groups = this.inGroups(type1, overwrite)
    if (groups.length === 1) {
      this.guarded(mayDiffer(type1), () => this.emit('overwrite type 1 columns', overwrite(type1)))
      return
    }
    // Too wide for one statement: the guard is computed in column groups into a one-row table first, so each
    // group's overwrite runs under the same answer whichever groups ran before it.
    const differs = this.tmp(TEMP.type1Differs)
    const flag = (columns: readonly string[]) =>
      `UPDATE ${differs} SET differs = TRUE WHERE NOT differs AND (${mayDiffer(columns)})`
    const [first, ...rest] = this.inGroups(type1, flag)
    const guards = [first!, ...rest]
    this.emit(
      `type 1: whether values may differ${this.groupLabel(guards, 0)}`,
      this.d.createTempTableAs(TEMP.type1Differs, `SELECT (${mayDiffer(first!)}) AS differs`),
    )
    rest.forEach((g, i) =>
      this.emit(`type 1: whether values may differ${this.groupLabel(guards, i + 1)}`, flag(g)),
    )
    this.guarded(`EXISTS (SELECT 1 FROM ${differs} WHERE differs)`, () =>
      groups.forEach((g, i) =>
        this.emit(`overwrite type 1 columns${this.groupLabel(groups, i)}`, overwrite(g)),
      ),
    )
  }

  /** Per key of the batch whose values it sets, the type 1 values (`columns`) of its newest event that is not a delete. */
  #newestType1(columns: readonly string[]): string {
    if (!this.oneEventPerKey) return this.tmp(TEMP.type1Newest)
    // Only the columns read from it: BigQuery bills every column a statement names.
    const names = [...this.keys, ...columns].map((c) => this.col('e', c)).join(', ')
    const softDeleted = this.softDeleted('e')
    return `(SELECT ${names} FROM ${this.stage} e${softDeleted ? ` WHERE NOT (${softDeleted})` : ''})`
  }

  /**
   * The batch's keys without a current version that have older versions (a delete closed them under `invalidate`,
   * now or before a config edit): those versions may hold other type 1 values. Found before the batch inserts any version, and only when the
   * batch has a key without a current version: a new key has none, and must not make the rewrite of every
   * version run (the look-up reads the key columns of the whole dimension, the rewrite every column).
   */
  #type1ReturningKeys(): void {
    const returning = this.tmp(TEMP.type1Returning)
    const before = this.tmp(TEMP.type1Before)
    const keys = this.keys.map((c) => this.col('s', c)).join(', ')
    const withoutCurrent = `${this.stage} s WHERE NOT EXISTS (SELECT 1 FROM ${before} b WHERE ${this.keyEq('b', 's')})`
    this.emit(
      'type 1: keys without a current version',
      this.d.createTempTableAs(TEMP.type1Returning, `SELECT DISTINCT ${keys} FROM ${withoutCurrent}`),
    )
    this.guarded(`EXISTS (SELECT 1 FROM ${returning})`, () =>
      this.emit(
        'type 1: keep those with older versions',
        `DELETE FROM ${returning} WHERE NOT EXISTS (SELECT 1 FROM ${this.dim} d WHERE ${this.keys.map((k) => `d.${this.q(k)} = ${returning}.${this.q(k)}`).join(' AND ')})`,
      ),
    )
  }

  /**
   * SQL condition, reading only this batch's tables: some version of a key may hold type 1 values other than the
   * key's newest. That is when the newest values differ from those before the batch (or the key had no current
   * version and may still have older versions: deletes closed keys under `invalidate`), when a version this batch
   * inserted holds other values (several events of a key), or when the late path ran.
   */
  #type1MayDiffer(newest: string, type1: readonly string[]): string {
    const differ = (a: string, b: string) =>
      type1.map((c) => `${this.col(a, c)} IS DISTINCT FROM ${this.col(b, c)}`).join(' OR ')
    const conditions = [
      `EXISTS (SELECT 1 FROM ${newest} l JOIN ${this.tmp(TEMP.type1Before)} b ON ${this.keyEq('b', 'l')}\n` +
        `  WHERE ${differ('b', 'l')})`,
      `EXISTS (SELECT 1 FROM ${this.tmp(TEMP.type1Returning)})`,
      `EXISTS (SELECT 1 FROM ${this.tmp(TEMP.changes)} c JOIN ${newest} l ON ${this.keyEq('c', 'l')} WHERE ${differ('c', 'l')})`,
      ...(this.p.objects.captures === undefined ? [] : [`EXISTS (SELECT 1 FROM ${this.tmp(TEMP.lateKeys)})`]),
    ]
    return conditions.join('\nOR ')
  }

  /**
   * `removed_columns: keep_last`: the versions of this batch take the key's last value of each removed column. The
   * new (open) version of a key takes its current version's before the batch (the open partition); the key's
   * history is read only when that is not its last value (see historyNeeded).
   */
  #keepLastRemoved(): void {
    const n = this.names
    const removed = this.p.layout.removed.map((c) => c.name)
    const batch = this.str(this.p.batchId)
    const q = (name: string) => this.q(name)
    this.emit(
      'schema evolution: new versions keep the current value of removed columns',
      `UPDATE ${this.dim} AS d SET ${removed.map((c) => `${q(c)} = l.${q(carriedAs(c))}`).join(', ')}\n` +
        `FROM (\n  ${changedKeysWithCarried(this)}\n) l\n` +
        `WHERE ${this.current('d')} AND d.${q(n.batchId)} = ${batch} AND ${this.keyEq('d', 'l')} AND l.${q(HAS_CARRIED)}\n` +
        `  AND (${removed.map((c) => `d.${q(c)} IS DISTINCT FROM l.${q(carriedAs(c))}`).join(' OR ')})`,
    )
    const history = historyNeeded(this)
    if (history === undefined) return
    const last = this.d.firstPerGroup({
      select:
        `SELECT ${[...this.keys, ...removed].map((c) => this.col('x', c)).join(', ')} FROM ${this.dim} x\n` +
        `  WHERE x.${q(n.batchId)} <> ${batch} AND EXISTS (SELECT 1 FROM ${this.dim} y WHERE y.${q(n.batchId)} = ${batch} AND ${this.keyEq('y', 'x')})`,
      separator: '\n  ',
      partitionBy: this.keyList('x'),
      orderBy: `x.${q(n.validFrom)} DESC, x.${q(n.surrogateKey)} DESC`,
    })
    this.guarded(history, () =>
      this.emit(
        'schema evolution: new versions keep the last value of removed columns',
        `UPDATE ${this.dim} AS d SET ${removed.map((c) => `${q(c)} = l.${q(c)}`).join(', ')}\n` +
          `FROM (\n  ${last}\n) l\n` +
          `WHERE ${this.keyEq('d', 'l')} AND d.${q(n.batchId)} = ${batch} AND (${removed.map((c) => `d.${q(c)} IS DISTINCT FROM l.${q(c)}`).join(' OR ')})`,
      ),
    )
  }

  /**
   * A mirror holds only the source's current state: the merge above versioned deletions and re-inserts like
   * history does (so late events and re-deliveries are handled the same way), then every row that is not a key's
   * current version moves to the retired-versions table (its surrogate key is never given out again).
   */
  #removeReplacedRows(retired: TableRef): void {
    this.retireVersions(
      retired,
      `NOT (${currentVersion(this.d, this.p.table)})`,
      'mirror: ',
      'replaced or deleted',
    )
  }

  /** The keys this batch changes or deletes have one current version each before it writes (MergeSql.checkNoBentKeys). */
  #checkNoBentKeys(): void {
    this.checkNoBentKeys(
      'check the changed keys have one current version',
      `SELECT DISTINCT ${this.keyList()} FROM ${this.tmp(TEMP.changes)}`,
    )
  }

  /**
   * Invariant 2 (docs/invariants.md) on what this merge wrote, before it commits: no key the batch touched (one it
   * changed, deleted or slotted late events into) has more than one version that is_current or an open valid_to
   * calls current, nor one whose two flags disagree. Every input was checked before, so only a defect of these
   * statements can leave one; the batch is refused instead of committing a history whose facts would join twice.
   * It reads the touched keys' versions where either flag says current. Where the dimension is partitioned on
   * valid_to (BigQuery), only the partitions this batch can have written are read: the open versions' and those
   * from the batch's earliest change or event on (every window it ends or moves ends at one of them), so a version
   * it closed but left flagged current is seen without reading the whole history.
   */
  #checkOneCurrentVersion(): void {
    const keys = (table: string) => `SELECT ${this.keyList()} FROM ${this.tmp(table)}`
    const touched =
      this.p.objects.captures === undefined
        ? `SELECT DISTINCT ${this.keyList()} FROM ${this.tmp(TEMP.changes)}`
        : `SELECT DISTINCT ${this.keyList('t')} FROM (${keys(TEMP.changes)} UNION ALL ${keys(TEMP.lateKeys)}) t`
    this.checkOneCurrentVersion(
      'check one current version per key',
      touched,
      this.#versionsTheBatchCanHaveWritten(),
    )
  }

  /**
   * The dimension, or where it is partitioned on valid_to the versions open or ended at or after the batch's
   * earliest change: every window this batch ends or moves ends at one of its changes' or events' times. Where the
   * table logs captures that time is already noted (#logCaptures, before any event is turned into a change), and
   * the script variable keeps that one meaning; otherwise it is noted here from the changes. A millisecond earlier,
   * so that the bound is a strict comparison on the bare column.
   */
  #versionsTheBatchCanHaveWritten(): string {
    if (!this.d.capabilities.partitionedOnValidTo) return this.dim
    let earliest = this.#earliestEvent
    if (earliest === undefined) {
      const noted = this.d.earliestEventTime(`SELECT MIN(${this.q(W.t)}) FROM ${this.tmp(TEMP.changes)}`)
      for (const sql of noted.statements) this.emit('note the earliest change', sql)
      earliest = noted.value
    }
    const n = this.p.table.columns
    return versionsNotEndedBy(
      this.d,
      this.p.table,
      this.p.objects.dimension,
      this.d.addMilliseconds(earliest, -1),
      [n.isCurrent],
    )
  }

  #recordBatch(): void {
    const changes = this.tmp(TEMP.changes)
    const inserted =
      this.p.table.deletes === 'new_record'
        ? `(SELECT COUNT(*) FROM ${changes})`
        : `(SELECT COUNT(*) FROM ${changes} WHERE NOT ${this.q(W.del)})`
    const lateInserted = this.p.objects.captures === undefined ? '' : ` + s.${this.q(LATE_INSERTED)}`
    const lateKeys =
      this.p.objects.captures === undefined ? '0' : `(SELECT COUNT(*) FROM ${this.tmp(TEMP.lateKeys)})`
    const lateEvents =
      this.p.objects.captures === undefined
        ? '0'
        : `(SELECT COUNT(*) FROM ${this.tmp(TEMP.events)} e WHERE EXISTS (SELECT 1 FROM ${this.tmp(TEMP.lateKeys)} l WHERE ${this.keyEq('l', 'e')}))`
    this.recordBatch(
      {
        events: 's.events',
        insertedVersions: `${inserted}${lateInserted}`,
        closedVersions: `(SELECT COUNT(*) FROM ${changes} WHERE ${this.q(W.changeNo)} = 1 AND ${this.q(W.hadCurrent)})`,
        deletedKeys: `(SELECT COUNT(*) FROM ${changes} WHERE ${this.q(W.del)})`,
        unchangedEvents: `s.events - (SELECT COUNT(*) FROM ${changes}) - ${lateEvents}`,
        lateKeys,
      },
      `${this.tmp(TEMP.stats)} s`,
    )
  }
}
