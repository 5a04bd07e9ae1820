import type { CheckKind } from '../core/check-failure.ts'
import type { DimensionLayout } from '../core/dimension-layout.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { CompiledStatement, RowHashPiece, SqlDialect, TableRef } from './dialect.ts'
import { renderRowHash, rowHashPieces, type HashedColumn } from './row-hash.ts'
import { hasUntrackedAttributes, type DimensionObjects } from './render-ddl.ts'
import { dbtDeletedAssignments, dbtIdAssignments, keyValues } from './dbt-ids.ts'
import { presetColumnNames, presetColumnValues } from './preset-columns.ts'
import { raiseCheck, refuseWithExamples } from './raise-check.ts'
import { softDeleteComparison } from './soft-delete-condition.ts'
import {
  advanceRecordedHighestKey,
  newSurrogateKey,
  seedRecordedHighestKey,
  type KeyNumbering,
  type SurrogateKeyRecord,
} from './surrogate-keys.ts'
import { renameShadowed, TableAliases, userColumnNames } from './table-aliases.ts'
import { storedEnd, storedEndOfChange } from './version-end.ts'
import {
  currentBeforeTheBatch,
  currentByEitherFlag,
  currentFlagsDisagree,
  currentVersion,
  liveCurrentVersion,
} from './version-predicates.ts'

/** Names of the temporary tables a merge script creates; the warehouse adapter reads the counts from them. */
export const TEMP = Object.freeze({
  stage: '__dimsync_stage',
  events: '__dimsync_events',
  stats: '__dimsync_stats',
  lateKeys: '__dimsync_late_keys',
  changes: '__dimsync_changes',
  goneKeys: '__dimsync_gone_keys',
  lateCaptures: '__dimsync_late_captures',
  lateRuns: '__dimsync_late_runs',
  lateVersions: '__dimsync_late_versions',
  lateAttributes: '__dimsync_late_attributes',
  lateMatches: '__dimsync_late_matches',
  policyKeys: '__dimsync_policy_keys',
  type1Before: '__dimsync_type1_before',
  type1Newest: '__dimsync_type1_newest',
  type1Returning: '__dimsync_type1_returning',
  folded: '__dimsync_folded',
  hashedStage: '__dimsync_hashed_stage',
  type1Differs: '__dimsync_type1_differs',
})

/** Working columns added to staged rows (the reserved prefix keeps them apart from source columns). */
export const WORK = Object.freeze({
  t: '__dimsync_t',
  del: '__dimsync_del',
  rowHash: '__dimsync_row_hash',
  untrackedHash: '__dimsync_untracked_hash',
  state: '__dimsync_state',
  prevState: '__dimsync_prev_state',
  seq: '__dimsync_seq',
  changeNo: '__dimsync_change_no',
  hadCurrent: '__dimsync_had_current',
  absent: '__dimsync_absent',
  live: '__dimsync_live',
  gone: '__dimsync_gone',
  currentKey: '__dimsync_current_key_',
  next: '__dimsync_next',
  nextDeleted: '__dimsync_next_deleted',
  nextRunState: '__dimsync_next_run_state',
  prevRunFrom: '__dimsync_prev_run_from',
  prevStart: '__dimsync_prev_start',
  run: '__dimsync_run',
  start: '__dimsync_start',
  from: '__dimsync_from',
  to: '__dimsync_to',
  prevRunState: '__dimsync_prev_run_state',
  existingSk: '__dimsync_existing_sk',
  priority: '__dimsync_priority',
  order: '__dimsync_order',
  rank: '__dimsync_rank',
  newKey: '__dimsync_new_key',
  before: '__dimsync_before',
})

/** Everything the merge of one batch depends on. Pure data: rendering does no I/O and reads no clock. */
export interface MergePlan {
  readonly table: TableSpec
  readonly layout: DimensionLayout
  /**
   * The dimension, its batch ledger and, exactly when valid_from comes from a source column (late events
   * supported), its capture log.
   */
  readonly objects: DimensionObjects
  readonly batchId: string
  /** ISO instant of the extraction. */
  readonly extractedAt: string
  /** ISO instant recorded as the batch's applied time. */
  readonly appliedAt: string
  readonly mode: 'full' | 'incremental'
  readonly allowMassDelete: boolean
  /**
   * The table holding the staged rows. Default: the temporary table `__dimsync_stage` (DuckDB loads Parquet into
   * it in the same session). BigQuery load jobs cannot write a script's temporary table, so there it is a
   * per-batch table in the dataset.
   */
  readonly stage?: TableRef
  /**
   * Further tables whose surrogate keys are already given out (a bitemporal merge works on a copy of the rows it
   * may change; the dimension itself holds the keys).
   */
  readonly keysGivenOutIn?: readonly TableRef[]
  /**
   * Buckets the batch's new surrogate keys are numbered in (surrogate-keys.ts, keyBucketsFor: from the staged
   * row count and the dialect's rows per bucket). Default 1: one ordered sequence.
   */
  readonly keyBuckets?: number
  /**
   * Written into the batch's ledger row with its counts (LEDGER_RECORD_COLUMNS): the table's contract when the
   * merge records it, and the watermark an incremental batch moves to (both texts).
   */
  readonly ledgerRecord?: { readonly contract?: string; readonly watermark?: string }
  /**
   * The current versions are hashed again over the tracked columns before the diff, so that a change of what is
   * tracked (the config, or a column the source stopped sending) opens no version by itself. Default: when the
   * dimension has columns the source no longer sends.
   */
  readonly rehashCurrent?: boolean
  /**
   * The config changed what some columns are: before the diff, every version of every key takes the values its
   * policies now define (render-policy-rewrite.ts): `type1`, the columns that just became type 1; `policies`,
   * keep_first, previous_value and current_value recomputed too.
   */
  readonly policyRewrite?: { readonly type1: readonly string[]; readonly policies: boolean }
  /**
   * The longest statement the warehouse accepts, for a table too wide for its statements to name every column
   * (set by renderMergeScript when a merge is over the warehouse's query length): the staged rows are copied once
   * with their row hash, computed in column groups (hashStagedRows), and the statements that name every type 1
   * column run in column groups, each under this length. Undefined: every statement names all its columns.
   */
  readonly maxStatementLength?: number
}

/** The ledger's counts of a merged batch, as SQL expressions. */
export interface BatchCounts {
  readonly events: string
  readonly insertedVersions: string
  readonly closedVersions: string
  readonly deletedKeys: string
  readonly unchangedEvents: string
  readonly lateKeys: string
}

/**
 * What every part of a merge renders with: the plan, the dialect, the statements rendered so far and the
 * quoting, key and check helpers. The merge's parts (render-merge.ts and the files it delegates to) extend or
 * receive it.
 */
export class MergeSql {
  readonly out: CompiledStatement[] = []

  constructor(
    readonly d: SqlDialect,
    readonly p: MergePlan,
  ) {}

  get names() {
    return this.p.table.columns
  }
  #aliases: TableAliases | undefined
  /** The table alias or CTE name to write for `name`: one no column of this table can shadow (table-aliases.ts). */
  alias(name: string): string {
    return this.#tableAliases().of(name)
  }
  #tableAliases(): TableAliases {
    return (this.#aliases ??= new TableAliases(userColumnNames(this.p.table, this.p.layout)))
  }
  get keys(): readonly string[] {
    return this.p.layout.key.map((c) => c.name)
  }
  get attributes(): readonly string[] {
    const keys = new Set(this.keys)
    return this.p.layout.stored.filter((c) => !keys.has(c.name)).map((c) => c.name)
  }
  get stored(): readonly string[] {
    return this.p.layout.stored.map((c) => c.name)
  }
  /**
   * The capture log keeps a hash of each event's untracked values (type 1 and keep_first columns), so an event sent
   * again at a captured time that differs only in them is refused like one that differs in a tracked column.
   */
  get logsUntrackedHash(): boolean {
    return this.p.objects.captures !== undefined && hasUntrackedAttributes(this.p.layout)
  }
  /** Deletes by absence: full extracts of snapshot tables (in a change feed, absence means nothing). */
  get absenceDeletes(): boolean {
    return this.p.mode === 'full' && this.p.table.deletes !== 'ignore' && this.p.table.changes === undefined
  }
  /** Events of a key that share a change time are ordered by a sequence column (change feeds). */
  get sequenced(): boolean {
    return this.p.layout.sequence !== undefined
  }
  get oneEventPerKey(): boolean {
    return this.p.table.validFrom.kind === 'extracted_at'
  }
  q(name: string): string {
    return this.d.quoteIdentifier(name)
  }
  tmp(name: string): string {
    return this.d.table({ name })
  }
  str(value: string): string {
    return this.d.stringLiteral(value)
  }
  col(alias: string, name: string): string {
    return `${alias}.${this.q(name)}`
  }
  keyEq(a: string, b: string): string {
    return this.keys.map((k) => `${this.col(a, k)} = ${this.col(b, k)}`).join(' AND ')
  }
  keyList(alias?: string): string {
    return this.keys.map((k) => (alias ? this.col(alias, k) : this.q(k))).join(', ')
  }
  /** `customer_id=101` (or `a=1, b=2`) as a STRING expression, for error messages. */
  keyText(alias: string): string {
    return this.keys
      .map((k, i) => `${this.str(`${i > 0 ? ', ' : ''}${k}=`)} || ${this.d.castToString(this.col(alias, k))}`)
      .join(' || ')
  }
  openEnd(): string {
    return this.p.table.openEnd === null ? 'NULL' : this.d.timestampLiteral(this.p.table.openEnd)
  }
  /** The valid_to to write for versions that end (exclusively) at the instant expression `end` (version-end.ts). */
  endAt(end: string): string {
    return storedEnd(this.d, this.p.table, end)
  }
  /** dbt preset under `new_record`: a deletion version's dbt_scd_id needs the start of the version before it. */
  get dbtDeletionIds(): boolean {
    return this.p.table.dbtIds !== undefined && this.p.table.deletes === 'new_record'
  }
  /** Like `endAt`, for a version whose end is a delete when the boolean expression `byDelete` holds. */
  endAtChange(end: string, byDelete: string): string {
    return storedEndOfChange(this.d, this.p.table, end, byDelete)
  }
  /**
   * `, <value>…` of the preset's own columns (preset-columns.ts) of a version whose key columns are `alias.<key>`,
   * whose start is `start` and whose deletion flag is `deleted`, to follow the values of `metadataAndStoredList`
   * ('' for tables whose preset has none).
   */
  presetColumnValues(alias: string, start: string, deleted: string, previousStart?: string): string {
    const keys = keyValues(this.d, this.p.layout.key, alias)
    const loadedAt = this.d.timestampLiteral(this.p.appliedAt)
    const previous = previousStart === undefined ? {} : { previousStart }
    return presetColumnValues(this.d, this.p.table, { keys, start, deleted, loadedAt, ...previous })
      .map((v) => `, ${v}`)
      .join('')
  }
  /** dbt preset: `, dbt_is_deleted = …` for an UPDATE giving versions the deletion flag `deleted`. */
  dbtDeletedAssignments(deleted: string): string {
    return dbtDeletedAssignments(this.d, this.p.table, deleted)
      .map((v) => `, ${v}`)
      .join('')
  }
  /**
   * dbt preset: `, dbt_scd_id = …, dbt_updated_at = …` for an UPDATE giving versions of `alias` the start `start`
   * (`deletion`: as for dbtVersionScdId).
   */
  dbtIdAssignments(
    alias: string,
    start: string,
    deletion?: { readonly deleted: string; readonly previousStart: string },
  ): string {
    const keys = keyValues(this.d, this.p.layout.key, alias)
    return dbtIdAssignments(this.d, this.p.table, keys, start, deletion)
      .map((v) => `, ${v}`)
      .join('')
  }
  #onlyIf: string | undefined
  /**
   * Adds a statement, its short names that a column of the table would shadow renamed (table-aliases.ts): the
   * parts of the merge write `d`, `s` or `cur` and need not know the table's columns.
   */
  emit(label: string, sql: string): void {
    const own = (text: string) => this.#renamed(text)
    this.out.push(
      this.#onlyIf === undefined
        ? { label, sql: own(sql) }
        : { label, sql: own(sql), onlyIf: own(this.#onlyIf) },
    )
  }
  #renamed(sql: string): string {
    // A dialect whose literal of one backslash escapes it reads backslash escapes in its quoted text.
    return renameShadowed(this.#tableAliases(), sql, this.d.stringLiteral('\\') !== "'\\'")
  }
  /**
   * Renders the statements `body` emits to be needed only when `condition` holds (CompiledStatement.onlyIf): every
   * warehouse skips them otherwise (a BigQuery script's IF, guarded-runs.ts elsewhere), so what they read is not
   * read (and not billed). They must change nothing when `condition` is false (the test harnesses run them to check
   * it), and a temporary table they create is read only under the same condition.
   */
  guarded(condition: string, body: () => void): void {
    const outer = this.#onlyIf
    this.#onlyIf = outer === undefined ? condition : `(${outer}) AND (${condition})`
    try {
      body()
    } finally {
      this.#onlyIf = outer
    }
  }
  prefix(): string {
    return `table ${this.p.table.name}: batch ${this.p.batchId}`
  }
  get dim(): string {
    return this.d.table(this.p.objects.dimension)
  }
  /** The staged rows as loaded. */
  get rawStage(): string {
    return this.d.table(this.p.stage ?? { name: TEMP.stage })
  }
  /**
   * The staged rows the merge reads: as loaded, or with partial updates folded into their keys' state, or (once
   * hashStagedRows ran) a copy of those with their row hash.
   */
  get stage(): string {
    if (this.#hashedStage) return this.tmp(TEMP.hashedStage)
    return this.p.layout.partial === undefined ? this.rawStage : this.tmp(TEMP.folded)
  }
  #hashedStage = false

  /**
   * The row hash of the tracked columns of staged row `alias`: computed here (a float's text read from the staging
   * table where the warehouse's load wrote it there), or read from the hashed copy.
   */
  stagedRowHash(alias: string): string {
    return this.#hashedStage ? this.col(alias, WORK.rowHash) : this.stagedHash(this.p.layout.tracked, alias)
  }

  /** The row hash of `columns` of row `alias` of `stage`, reading the floats' texts the load wrote beside them. */
  stagedHash(columns: readonly HashedColumn[], alias: string): string {
    return renderRowHash(this.d, columns, alias, { readsStagedFloatTexts: this.stage === this.rawStage })
  }

  /**
   * `items` in consecutive groups whose statement (`render`) fits maxStatementLength, halving a group until it
   * does (a single item is a group whatever its length); one group when the plan sets no length.
   */
  inGroups<T>(items: readonly T[], render: (group: readonly T[]) => string): (readonly T[])[] {
    const limit = this.p.maxStatementLength
    if (limit === undefined) return [items]
    const split = (group: readonly T[]): (readonly T[])[] => {
      if (group.length <= 1 || render(group).length <= limit) return [group]
      const half = Math.ceil(group.length / 2)
      return [...split(group.slice(0, half)), ...split(group.slice(half))]
    }
    return split(items)
  }

  /** ` (columns 1 to 4,000 of 9,999)` for group `i` of `groups`; '' when there is one group. */
  groupLabel<T>(groups: readonly (readonly T[])[], i: number): string {
    if (groups.length === 1) return ''
    const n = (x: number) => x.toLocaleString('en-US')
    const from = groups.slice(0, i).reduce((sum, g) => sum + g.length, 0)
    const total = groups.reduce((sum, g) => sum + g.length, 0)
    return ` (columns ${n(from + 1)} to ${n(from + groups[i]!.length)} of ${n(total)})`
  }

  /**
   * With maxStatementLength: copies the staged rows with their row hash (WORK.rowHash), its text built in column
   * groups each under that length, then hashed; the merge then reads the copy (`stage`, `stagedRowHash`). The row
   * hash of a wide table names each tracked column twice, more than one statement can hold (10,000 columns of
   * 20 characters: 600K characters).
   */
  hashStagedRows(): void {
    if (this.p.maxStatementLength === undefined || this.p.layout.tracked.length === 0) return
    const source = this.stage
    const hashed = this.tmp(TEMP.hashedStage)
    const hash = this.q(WORK.rowHash)
    const pieces = rowHashPieces(this.d, this.p.layout.tracked, 's')
    const create = (text: string) =>
      this.d.createTempTableAs(TEMP.hashedStage, `SELECT s.*, ${text} AS ${hash} FROM ${source} s`)
    const append = (group: readonly RowHashPiece[]) =>
      `UPDATE ${hashed} AS s SET ${hash} = ${this.d.concat([`s.${hash}`, this.d.rowHashText(group)])} WHERE TRUE`
    const groups = this.inGroups(pieces, (g) => create(this.d.rowHashOf(g)))
    if (groups.length === 1) {
      this.emit('copy staged rows with their row hash', create(this.d.rowHashOf(pieces)))
    } else {
      const [first, ...rest] = this.inGroups(pieces, (g) => append(g))
      const all = [first!, ...rest]
      this.emit(
        `copy staged rows with their row hash${this.groupLabel(all, 0)}`,
        create(this.d.rowHashText(first!)),
      )
      rest.forEach((g, i) => this.emit(`row hash of staged rows${this.groupLabel(all, i + 1)}`, append(g)))
      this.emit(
        'row hash of staged rows: hash',
        `UPDATE ${hashed} SET ${hash} = ${this.d.md5Hex(hash)} WHERE TRUE`,
      )
    }
    this.#hashedStage = true
  }
  /** `alias` is the key's current version (see version-predicates.ts). */
  current(alias: string): string {
    return currentVersion(this.d, this.p.table, alias)
  }
  /** `alias` is the key's current version and does not record a deletion. */
  liveCurrent(alias: string): string {
    return liveCurrentVersion(this.d, this.p.table, alias)
  }
  /** A check that refuses the batch with `message` (a STRING expression); see raise-check.ts. */
  raise(kind: CheckKind, message: string): string {
    return raiseCheck(this.d, { kind, table: this.p.table.name, batchId: this.p.batchId }, message)
  }
  /** A check that refuses the batch when `offending` returns rows, with examples; see refuseWithExamples. */
  refuseWithExamples(kind: CheckKind, refusal: Parameters<typeof refuseWithExamples>[2]): string {
    return refuseWithExamples(this.d, { kind, table: this.p.table.name, batchId: this.p.batchId }, refusal)
  }
  /**
   * Emits the check of invariant 2 on what the merge wrote (docs/invariants.md): refuses the batch when a key of
   * `touched` (a query of key columns) has more than one version in `versions` (the dimension, or a derived table
   * of it aliased by the caller) that is_current or an open valid_to calls current, or one whose flags disagree.
   */
  checkOneCurrentVersion(label: string, touched: string, versions: string): void {
    const count = (expr: string) => this.d.castToString(expr)
    const n = this.names
    const disagree = `SUM(CASE WHEN ${currentFlagsDisagree(this.d, this.p.table, 'd')} THEN 1 ELSE 0 END)`
    this.emit(
      label,
      this.refuseWithExamples('one-current-version', {
        offending:
          `SELECT ${this.keyText('d')} AS k, COUNT(*) AS n, ${disagree} AS m\n` +
          `  FROM ${versions} d JOIN (${touched}) t ON ${this.keyEq('t', 'd')}\n` +
          `  WHERE ${currentByEitherFlag(this.d, this.p.table, 'd')}\n` +
          `  GROUP BY ${this.keyList('d')} HAVING COUNT(*) > 1 OR ${disagree} > 0`,
        message: (keys) =>
          `${this.str(`${this.prefix()} would leave `)} || ${count(keys)} || ` +
          `(CASE WHEN ${keys} = 1 THEN ${this.str(' key')} ELSE ${this.str(' keys')} END) || ` +
          this.str(
            ` with more than one current version, or one whose ${n.isCurrent} and ${n.validTo} disagree`,
          ),
        example:
          `k || ${this.str(' (')} || ${count('n')} || ${this.str(' current versions')} || ` +
          `(CASE WHEN m > 0 THEN ${this.str(', ')} || ${count('m')} || ${this.str(` with ${n.isCurrent} and ${n.validTo} disagreeing`)} ELSE '' END) || ` +
          this.str(')'),
      }),
    )
  }
  /**
   * Emits the check of the keys the batch changes or deletes (`changed`, a query of key columns) against what the
   * dimension holds before it writes: a key with more than one current version was bent by an earlier dimsync (a
   * `key` edit did it before it was refused), and closing both at the new version's start would leave their windows
   * overlapping. The batch is refused, naming the key, until the dimension is repaired (docs/errors.md).
   */
  checkNoBentKeys(label: string, changed: string): void {
    const count = (expr: string) => this.d.castToString(expr)
    this.emit(
      label,
      this.refuseWithExamples('bent-key', {
        offending:
          `SELECT ${this.keyText('d')} AS k, COUNT(*) AS n\n` +
          `  FROM ${this.dim} d JOIN (${changed}) t ON ${this.keyEq('t', 'd')}\n` +
          `  WHERE ${currentBeforeTheBatch(this.d, this.p.table, 'd')}\n` +
          `  GROUP BY ${this.keyList('d')} HAVING COUNT(*) > 1`,
        message: (keys) =>
          `${this.str(`${this.prefix()} changes `)} || ${count(keys)} || ` +
          `(CASE WHEN ${keys} = 1 THEN ${this.str(' key')} ELSE ${this.str(' keys')} END) || ` +
          this.str(
            ' that the dimension already holds with more than one current version (written so before dimsync ' +
              'checked it; repair the dimension as docs/errors.md says, then run again)',
          ),
        example: `k || ${this.str(' (')} || ${count('n')} || ${this.str(' current versions)')}`,
      }),
    )
  }
  get eventTime(): string {
    const column = this.p.layout.validFromColumn
    return column === undefined
      ? this.d.timestampLiteral(this.p.extractedAt)
      : this.d.castToTimestamp(this.col('s', column.name))
  }

  /** SQL condition: a staged row is a soft delete. */
  softDeleted(alias: string): string | undefined {
    const soft = this.p.layout.softDelete
    if (soft === undefined) return undefined
    const equals = this.p.table.softDeleteEquals
    if (equals !== undefined)
      return `COALESCE(${softDeleteComparison(this.d, this.col(alias, soft.name), equals)}, FALSE)`
    return soft.type.toUpperCase() === 'BOOLEAN'
      ? `COALESCE(${this.col(alias, soft.name)}, FALSE)`
      : `${this.col(alias, soft.name)} IS NOT NULL`
  }

  /** SQL condition: a staged row deletes its key (a soft delete, or a change feed's delete operation). */
  deleteEvent(alias: string): string | undefined {
    const conditions = [this.softDeleted(alias), this.operationIs(alias, 'delete')].filter(
      (c): c is string => c !== undefined,
    )
    return conditions.length === 0 ? undefined : conditions.join(' OR ')
  }

  /** SQL condition: a change feed's row has one of the values of operation `kind` (undefined: not a feed). */
  operationIs(alias: string, kind: 'insert' | 'update' | 'delete'): string | undefined {
    const feed = this.p.table.changes
    const column = this.p.layout.operation
    if (feed === undefined || column === undefined) return undefined
    const values = feed.operation[kind].map((v) => this.str(v)).join(', ')
    return `COALESCE(${this.d.castToString(this.col(alias, column.name))} IN (${values}), FALSE)`
  }

  /** The dimension's surrogate-key record and the tables holding keys given out before it (surrogate-keys.ts). */
  get keyRecord(): SurrogateKeyRecord {
    return {
      dialect: this.d,
      record: this.p.objects.keys,
      surrogateKey: this.names.surrogateKey,
      givenOutIn: [
        this.p.objects.dimension,
        ...(this.p.objects.retired === undefined ? [] : [this.p.objects.retired]),
        ...(this.p.keysGivenOutIn ?? []),
      ],
    }
  }

  /**
   * A surrogate key for each row of a SELECT over `alias` (key columns qualified by it), numbered after the
   * highest key given out, in the order of `order`. The SELECT's statement is emitted between `seedKeys` and
   * `advanceKeys`.
   */
  newKey(alias: string, order: readonly string[]): string {
    return newSurrogateKey(this.keyRecord, this.keyNumbering, this.p.layout.key, alias, order)
  }

  /**
   * `rows` (`<table> <alias> [WHERE …]`, rows of distinct keys) numbered as `newKey` in key order, as a subquery of
   * their key columns and `WORK.newKey`, to join back on the key. Numbering the keys alone sorts only them: one
   * window over wide rows sorts every column (a 1M-row, 10-column first load ran out of DuckDB's 112MB that way;
   * numbered apart, it fits 64MB).
   */
  numberedKeys(alias: string, rows: string): string {
    return `(SELECT ${this.keyList(alias)}, ${this.newKey(alias, [this.keyList(alias)])} AS ${this.q(WORK.newKey)} FROM ${rows})`
  }

  /** Emits what `newKey` reads first: the record's row, for a dimension that has none yet. */
  seedKeys(): void {
    const seed = seedRecordedHighestKey(
      this.keyRecord,
      'surrogate keys: record the highest key given out (a dimension without a record)',
    )
    this.guarded(seed.onlyIf!, () => this.emit(seed.label, seed.sql))
  }

  /** Emits the record's move past the keys `newKey` gave `rows` (`<table> <alias> [WHERE …]`). */
  advanceKeys(alias: string, rows: string, what: string): void {
    const s = advanceRecordedHighestKey(
      this.keyRecord,
      this.keyNumbering,
      this.p.layout.key,
      alias,
      rows,
      `${what}: record their surrogate keys as given out`,
    )
    this.emit(s.label, s.sql)
  }

  get keyNumbering(): KeyNumbering {
    return { buckets: this.p.keyBuckets ?? 1 }
  }

  /**
   * Records the batch in the ledger with its counts (each a scalar SQL expression over `from`, which holds one
   * row), so a re-delivered batch is recognised and skipped.
   */
  recordBatch(counts: BatchCounts, from: string): void {
    const record = Object.entries(this.p.ledgerRecord ?? {}).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    )
    const recordColumns = record.map(([column]) => `, ${this.q(column)}`).join('')
    const recordValues = record.map(([, text]) => `, ${this.str(text)}`).join('')
    this.emit(
      'record batch as applied',
      `INSERT INTO ${this.d.table(this.p.objects.batches)} (target, table_name, batch_id, extracted_at, mode, applied_at, events, inserted_versions, closed_versions, deleted_keys, unchanged_events, late_keys${recordColumns})\n` +
        `SELECT ${this.str(this.p.table.target)}, ${this.str(this.p.table.name)}, ${this.str(this.p.batchId)}, ` +
        `${this.d.timestampLiteral(this.p.extractedAt)}, ${this.str(this.p.mode)}, ${this.d.timestampLiteral(this.p.appliedAt)},\n` +
        `  ${counts.events}, ${counts.insertedVersions},\n  ${counts.closedVersions},\n  ${counts.deletedKeys},\n` +
        `  ${counts.unchangedEvents},\n  ${counts.lateKeys}${recordValues}\nFROM ${from}`,
    )
  }

  /**
   * Moves the versions matching `where` (unqualified columns of the dimension) to the retired-versions table, in
   * the merge's transaction, so their surrogate keys stay given out.
   */
  retireVersions(retired: TableRef, where: string, labelPrefix: string, why: string): void {
    const n = this.names
    const columns = [n.surrogateKey, ...this.keys, n.validFrom, n.validTo, n.isDeleted, n.rowHash, n.batchId]
    this.emit(
      `${labelPrefix}retire versions ${why}`,
      `INSERT INTO ${this.d.table(retired)} (${columns.map((c) => this.q(c)).join(', ')}, retired_by)\n` +
        `SELECT ${columns.map((c) => this.q(c)).join(', ')}, ${this.str(this.p.batchId)}\n` +
        `FROM ${this.dim} WHERE ${where}`,
    )
    this.emit(`${labelPrefix}remove retired versions`, `DELETE FROM ${this.dim} WHERE ${where}`)
  }

  metadataAndStoredList(): string {
    const n = this.names
    return [
      n.surrogateKey,
      ...this.stored,
      n.validFrom,
      n.validTo,
      n.isCurrent,
      n.isDeleted,
      n.rowHash,
      n.batchId,
      ...presetColumnNames(this.p.table),
    ]
      .map((c) => this.q(c))
      .join(', ')
  }
}
