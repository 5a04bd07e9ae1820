import { renderColumnRenames } from './render-column-renames.ts'
import type { DimensionColumn, DimensionLayout } from '../core/dimension-layout.ts'
import { presetColumnList, systemTimeColumnList } from '../core/dimension-layout.ts'
import {
  DBT_ID_COLUMNS,
  METADATA_COLUMNS,
  metadataColumnList,
  metadataColumnNamed,
  SYNCED_COLUMN,
  SYSTEM_TIME_COLUMNS,
} from '../core/metadata-columns.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { CompiledStatement, SqlDialect, TableRef } from './dialect.ts'
import { assertSafeTypeText } from './safe-type.ts'

/** The warehouse objects of one dimension. */
export interface DimensionObjects {
  readonly dimension: TableRef
  readonly captures?: TableRef
  /**
   * The truncates of a change feed merged so far (`ops.truncate`): a key whose events arrive after a truncate was
   * merged, with a state before it, is ended by it too (render-truncates.ts).
   */
  readonly truncates?: TableRef
  /**
   * Versions removed from the dimension: replaced by a correction (tables whose state at a captured time can
   * change: sequenced change feeds) or, in a mirror, replaced or deleted rows. Kept so their surrogate keys are
   * never given out again and facts pointing at them can still be read.
   */
  readonly retired?: TableRef
  readonly batches: TableRef
  /**
   * One row: the highest surrogate key given out so far (see surrogate-keys.ts). New versions are numbered after
   * it, so a merge does not read the dimension's surrogate-key column to find the next key.
   */
  readonly keys: TableRef
  readonly currentView: TableRef
  readonly asOfFunction: TableRef
}

/** Tables are named after the target; the batch ledger is shared by all dimensions of a schema. */
export function dimensionObjects(table: TableSpec, schema: string): DimensionObjects {
  return Object.freeze({
    dimension: { schema, name: table.target },
    captures:
      table.validFrom.kind === 'column' ? { schema, name: `${table.target}_dimsync_captures` } : undefined,
    truncates:
      table.validFrom.kind === 'column' && (table.changes?.operation.truncate ?? []).length > 0
        ? { schema, name: `${table.target}_dimsync_truncates` }
        : undefined,
    // A bitemporal table keeps every row it ever held: a replaced version is closed in system time instead.
    retired:
      table.systemTime === undefined &&
      (statesCanBeCorrected(table) || refoldsPartialUpdates(table) || table.mode === 'mirror')
        ? { schema, name: `${table.target}_dimsync_retired` }
        : undefined,
    batches: { schema, name: '_dimsync_batches' },
    keys: { schema, name: `${table.target}_dimsync_keys` },
    currentView: { schema, name: `${table.target}_current` },
    asOfFunction: { schema, name: `${table.target}_as_of` },
  })
}

/**
 * Whether a later batch can change the state a key had at an instant already merged (not only add states
 * between): a sequenced change feed's event supersedes an earlier-merged one at the same change time, and so does
 * a row of a table that overwrites at the same version (change_detection).
 */
export function statesCanBeCorrected(table: TableSpec): boolean {
  // change_detection's overwrite replaces the state captured at a row's time (render-version-column.ts).
  const overwrites = table.changeDetection?.onSameVersion === 'overwrite' && table.validFrom.kind === 'column'
  return table.changes?.sequence !== undefined || overwrites
}

/**
 * Whether the capture log keeps what each event said (its raw values), so a late partial event can be folded into
 * the state at its time and the later captures of its key folded again (render-partial-refold.ts). Refolding can
 * change the state at a captured time, so such tables keep retired versions like sequenced change feeds.
 */
export function refoldsPartialUpdates(table: TableSpec): boolean {
  return table.partialUpdates !== undefined && table.validFrom.kind === 'column'
}

/** Throws naming the table and column when a staged type is not plain type text (never pasted into SQL). */
export function assertSafeType(table: string, column: DimensionColumn): void {
  assertSafeTypeText(table, column.name, column.type)
}

export function renderBatchLedgerDdl(d: SqlDialect, batches: TableRef): CompiledStatement {
  return {
    label: 'create batch ledger',
    sql:
      `CREATE TABLE IF NOT EXISTS ${d.table(batches)} (\n  target ${d.type('string')} NOT NULL, table_name ${d.type('string')} NOT NULL, ` +
      `batch_id ${d.type('string')} NOT NULL,\n  extracted_at ${d.type('timestamp')} NOT NULL, mode ${d.type('string')} NOT NULL, applied_at ${d.type('timestamp')} NOT NULL,\n` +
      `  events ${d.type('int64')}, inserted_versions ${d.type('int64')}, closed_versions ${d.type('int64')}, deleted_keys ${d.type('int64')},\n` +
      `  unchanged_events ${d.type('int64')}, late_keys ${d.type('int64')},\n` +
      `  ${LEDGER_RECORD_COLUMNS.map((c) => `${c} ${d.type('string')}`).join(', ')},\n  ${d.primaryKey(['target', 'batch_id'])}\n)` +
      d.tableOptions('ledger', {
        key: [],
        description: 'dimsync: one row per merged batch (idempotence ledger)',
      }),
  }
}

/**
 * Ledger columns a merge fills besides its counts (NULL otherwise): `contract`, the table's contract when the
 * merge records one (table-contract.ts: the first merge, and every merge whose config changed it); `watermark`,
 * the position an incremental batch moves the watermark to (canonical JSON), so the state store's watermark can
 * be checked against the warehouse, and set back to it.
 */
export const LEDGER_RECORD_COLUMNS = Object.freeze(['contract', 'watermark'] as const)

/** Adds the record columns a ledger created before them lacks (`missing`, from its description). */
export function renderLedgerColumnsDdl(
  d: SqlDialect,
  batches: TableRef,
  missing: readonly string[],
): CompiledStatement[] {
  return missing.map((column) => ({
    label: `batch ledger: add column ${column}`,
    sql: `ALTER TABLE ${d.table(batches)} ADD COLUMN IF NOT EXISTS ${d.quoteIdentifier(column)} ${d.type('string')}`,
  }))
}

/** The column of the surrogate-key record (objects.keys) holding the highest key given out. */
export const HIGHEST_KEY_COLUMN = 'highest_surrogate_key'

/** The surrogate-key record of a dimension (one row once a writer has recorded a key; see surrogate-keys.ts). */
export function renderSurrogateKeyRecordDdl(
  d: SqlDialect,
  table: TableSpec,
  keys: TableRef,
): CompiledStatement {
  return {
    label: 'create surrogate key record',
    sql:
      `CREATE TABLE IF NOT EXISTS ${d.table(keys)} (\n  ${HIGHEST_KEY_COLUMN} ${d.type('int64')} NOT NULL\n)` +
      d.tableOptions('captures', {
        key: [],
        description: `dimsync: the highest surrogate key given out in table ${table.name} (keys are never reused)`,
      }),
  }
}

/**
 * DDL that makes the dimension (and its capture log) match `layout`: create on first run, add new columns. Every
 * statement is idempotent (`IF NOT EXISTS`): a warehouse runs it before the merge's transaction, and a retried
 * merge runs it again.
 */
export function renderDimensionDdl(
  d: SqlDialect,
  table: TableSpec,
  layout: DimensionLayout,
  objects: DimensionObjects,
): CompiledStatement[] {
  const out: CompiledStatement[] = []
  const keyNames = new Set(layout.key.map((c) => c.name))
  // Source columns get no description: descriptions are their users' (the staged types are recorded by the
  // warehouse adapter where users do not edit them); dimsync's own columns say what they hold.
  const column = (c: DimensionColumn, notNull: boolean, description?: string) => {
    assertSafeType(table.name, c)
    const type = d.columnType(c.type, { table: table.name, column: c.name })
    const described = description === undefined ? '' : d.columnDescription(description)
    return `${d.quoteIdentifier(c.name)} ${type}${notNull ? ' NOT NULL' : ''}${described}`
  }
  const keyTypes = layout.key.map((c) => ({ name: c.name, type: c.type }))
  // Before anything that reads the columns by their new names (render-column-renames.ts).
  out.push(...renderColumnRenames(d, objects.dimension, layout.renamed ?? []))
  if (layout.createDimension) {
    const n = table.columns
    const metadata = metadataColumnList(n)
    const first = metadata[0]!
    const rest = metadata.slice(1)
    const meta = (c: DimensionColumn) => {
      const contract = METADATA_COLUMNS[metadataColumnNamed(n, c.name)!]
      return column(c, contract.notNull, `dimsync: ${contract.meaning}`)
    }
    const columns = [
      meta(first),
      ...layout.stored.map((c) => column(c, keyNames.has(c.name))),
      ...layout.derived.map((c) => column(c, false, `dimsync: the ${c.kind} value of ${c.from}`)),
      ...rest.map((c) => meta(c)),
      ...presetColumnList(table).map((c) => {
        const contract =
          [DBT_ID_COLUMNS.scdId, DBT_ID_COLUMNS.updatedAt, DBT_ID_COLUMNS.isDeleted].find(
            (k) => k.name === c.name,
          ) ?? SYNCED_COLUMN
        return column(c, contract.notNull, `dimsync: ${contract.meaning}`)
      }),
      ...systemTimeColumnList(table).map((c, i) => {
        const contract = i === 0 ? SYSTEM_TIME_COLUMNS.systemFrom : SYSTEM_TIME_COLUMNS.systemTo
        return column(c, contract.notNull, `dimsync: ${contract.meaning}`)
      }),
    ]
    out.push({
      label: 'create dimension',
      sql:
        `CREATE TABLE IF NOT EXISTS ${d.table(objects.dimension)} (\n  ${columns.join(',\n  ')}\n)` +
        d.tableOptions('dimension', {
          validTo: d.quoteIdentifier(n.validTo),
          key: keyTypes,
          description: `dimsync: type 2 history of table ${table.name}, one row per version`,
        }),
    })
  }
  for (const c of layout.widened) {
    const change = { from: c.from, to: c.type }
    const where = { table: table.name, column: c.name }
    // A key column is also in the capture log and the retired versions.
    const tables = [
      objects.dimension,
      ...(keyNames.has(c.name) ? [objects.captures, objects.retired].filter((t) => t !== undefined) : []),
    ]
    for (const ref of tables) {
      for (const sql of d.alterColumnType(ref, c.name, change, where))
        out.push({ label: `widen column ${c.name} from ${c.from} to ${c.type}`, sql })
    }
  }
  for (const c of layout.addColumns) {
    out.push({
      label: `add column ${c.name}`,
      sql: `ALTER TABLE ${d.table(objects.dimension)} ADD COLUMN IF NOT EXISTS ${column(c, false)}`,
    })
  }
  // The capture and truncate logs order events of the same time by the feed's sequence.
  const sequence =
    layout.sequence === undefined
      ? ''
      : `${column({ name: CAPTURE_SEQUENCE_COLUMN, type: layout.sequence.type }, true)}, `
  if (objects.captures !== undefined) {
    const keys = layout.key.map((c) => column(c, true))
    out.push({
      label: 'create capture log',
      sql:
        `CREATE TABLE IF NOT EXISTS ${d.table(objects.captures)} (\n  ${keys.join(', ')},\n  captured_at ${d.type('timestamp')} NOT NULL, ${sequence}` +
        `state_hash ${d.type('string')} NOT NULL, is_deleted ${d.type('bool')} NOT NULL, batch_id ${d.type('string')} NOT NULL\n)` +
        d.tableOptions('captures', {
          key: keyTypes,
          capturedAt: d.quoteIdentifier('captured_at'),
          description: `dimsync: every state of table ${table.name} captured so far (late events)`,
        }),
    })
  }
  if (objects.truncates !== undefined) {
    out.push({
      label: 'create truncate log',
      sql:
        `CREATE TABLE IF NOT EXISTS ${d.table(objects.truncates)} (\n  captured_at ${d.type('timestamp')} NOT NULL, ${sequence}` +
        `batch_id ${d.type('string')} NOT NULL\n)`,
    })
  }
  if (objects.captures !== undefined && hasUntrackedAttributes(layout)) {
    // Added, not created: logs written before it was kept gain the column (NULL on their rows: not compared).
    out.push({
      label: 'capture log: hash of untracked values',
      sql: `ALTER TABLE ${d.table(objects.captures)} ADD COLUMN IF NOT EXISTS ${CAPTURE_UNTRACKED_HASH_COLUMN} ${d.type('string')}`,
    })
  }
  if (objects.captures !== undefined && refoldsPartialUpdates(table) && layout.partial !== undefined) {
    // Added, not created: logs written before raw values were kept gain the columns (their rows hold NULL in
    // raw_logged, and a late event of such a key is refused).
    const raw = [
      column({ name: CAPTURE_RAW_LOGGED_COLUMN, type: 'BOOLEAN' }, false),
      ...layout.stored
        .filter((c) => !keyNames.has(c.name))
        .map((c) => column({ name: captureRawColumn(c.name), type: c.type }, false)),
    ]
    for (const definition of raw) {
      out.push({
        label: 'capture log: raw values of partial events',
        sql: `ALTER TABLE ${d.table(objects.captures)} ADD COLUMN IF NOT EXISTS ${definition}`,
      })
    }
    // A widened attribute is widened in the log too, so refolded values hash like the dimension's.
    for (const c of layout.widened.filter((w) => !keyNames.has(w.name))) {
      const name = captureRawColumn(c.name)
      const change = { from: c.from, to: c.type }
      for (const sql of d.alterColumnType(objects.captures, name, change, {
        table: table.name,
        column: name,
      }))
        out.push({ label: `capture log: widen column ${name} from ${c.from} to ${c.type}`, sql })
    }
  }
  out.push(renderSurrogateKeyRecordDdl(d, table, objects.keys))
  if (objects.retired !== undefined) {
    const n = table.columns
    const keys = layout.key.map((c) => column(c, true))
    out.push({
      label: 'create retired versions',
      sql:
        `CREATE TABLE IF NOT EXISTS ${d.table(objects.retired)} (\n  ${d.quoteIdentifier(n.surrogateKey)} ${d.type('int64')} NOT NULL, ${keys.join(', ')},\n` +
        `  ${d.quoteIdentifier(n.validFrom)} ${d.type('timestamp')} NOT NULL, ${d.quoteIdentifier(n.validTo)} ${d.type('timestamp')}, ` +
        `${d.quoteIdentifier(n.isDeleted)} ${d.type('bool')} NOT NULL,\n  ${d.quoteIdentifier(n.rowHash)} ${d.type('string')} NOT NULL, ` +
        `${d.quoteIdentifier(n.batchId)} ${d.type('string')} NOT NULL, retired_by ${d.type('string')} NOT NULL\n)` +
        d.tableOptions('captures', {
          key: keyTypes,
          description: `dimsync: versions of table ${table.name} removed from it (their surrogate keys are never reused)`,
        }),
    })
  }
  return out
}

/** The capture log's column holding a sequenced change feed's sequence value (its source type). */
export const CAPTURE_SEQUENCE_COLUMN = 'captured_sequence'

/**
 * Description line recording a column's staged type: what dimension tables written by earlier versions carry
 * (still read back by the BigQuery adapter), and what fact tables carry.
 */
export const SOURCE_TYPE_NOTE = 'dimsync source type: '

/**
 * The capture log's column holding a hash of what an event said in its untracked columns (type 1 and keep_first;
 * the state of a deletion), compared when the same event is sent again. NULL on rows logged before it was kept.
 */
export const CAPTURE_UNTRACKED_HASH_COLUMN = 'untracked_hash'

/** Whether a layout has untracked attributes (type 1 or keep_first columns), whose hash the capture log keeps. */
export function hasUntrackedAttributes(layout: DimensionLayout): boolean {
  return layout.type1.length + layout.keepFirst.length > 0
}

/** Partial-update tables: the capture log's flag that a row holds its event's raw values (NULL on older rows). */
export const CAPTURE_RAW_LOGGED_COLUMN = 'raw_logged'

/** Partial-update tables: the capture log's column holding what an event said in attribute `name` (before folding). */
export function captureRawColumn(name: string): string {
  return `raw_${name}`
}
