import type { DimensionLayout } from '../../core/dimension-layout.ts'
import type { TableSpec } from '../../core/table-spec.ts'
import type { CompiledStatement, SqlDialect, TableRef } from '../dialect.ts'
import { renderBatchLedgerDdl, renderDimensionDdl, type DimensionObjects } from '../render-ddl.ts'
import { renderMerge, TEMP } from '../render-merge.ts'
import { renderBigQueryViews } from './bigquery-views.ts'

/** Script variable holding the label of the running step, so a failure names it. */
export const STEP_VARIABLE = 'dimsync_step'
/** Prefix of the message a failed merge script raises; the adapter parses it back (see bigquery-errors.ts). */
export const STEP_FAILED = 'dimsync step '
/** Script variable holding the error message while the handler rolls back. */
const ERROR_VARIABLE = 'dimsync_error'

export interface BigQueryMergeRequest {
  readonly table: TableSpec
  readonly layout: DimensionLayout
  readonly objects: DimensionObjects
  /** The per-batch staging table the load jobs wrote. */
  readonly stage: TableRef
  readonly batchId: string
  readonly extractedAt: string
  readonly appliedAt: string
  readonly mode: 'full' | 'incremental'
  readonly allowMassDelete: boolean
}

/** The merge of one batch as one BigQuery multi-statement script, with its parts for review and tests. */
export interface BigQueryMergeScript {
  /** DDL: ledger, dimension, added columns, capture log, views. Runs before the transaction (BigQuery refuses DDL on permanent tables inside one). */
  readonly ddl: readonly CompiledStatement[]
  /** The merge proper, between BEGIN TRANSACTION and COMMIT TRANSACTION, ending with the ledger row. */
  readonly merge: readonly CompiledStatement[]
  /** After COMMIT: drop the staging table, then one row with the batch's counts (the script's result). */
  readonly after: readonly CompiledStatement[]
  /** The whole script, as sent in one query job. */
  readonly text: string
}

/**
 * Renders the merge of a staged batch as one script: DDL first, then the merge inside
 * `BEGIN TRANSACTION … COMMIT TRANSACTION` with an exception handler that rolls back and re-raises the error
 * prefixed with the failing step's label, then the staging table is dropped and the counts are selected (the
 * last statement's rows are the script job's result).
 */
export function renderBigQueryMergeScript(d: SqlDialect, request: BigQueryMergeRequest): BigQueryMergeScript {
  const { table, layout, objects } = request
  const ddl = [
    renderBatchLedgerDdl(d, objects.batches),
    ...renderDimensionDdl(d, table, layout, objects),
    ...renderBigQueryViews(d, table, objects),
  ]
  const merge = renderMerge(d, {
    table,
    layout,
    dimension: objects.dimension,
    captures: objects.captures,
    batches: objects.batches,
    batchId: request.batchId,
    extractedAt: request.extractedAt,
    appliedAt: request.appliedAt,
    mode: request.mode,
    allowMassDelete: request.allowMassDelete,
    stage: request.stage,
  })
  const after = [
    { label: 'drop staging table', sql: d.dropTableIfExists(request.stage) },
    { label: 'report counts', sql: renderCountsQuery(d, objects.batches, table.target, request.batchId) },
  ]
  const v = STEP_VARIABLE
  const step = (s: CompiledStatement, indent: string) =>
    `${indent}SET ${v} = ${d.stringLiteral(s.label)};\n${indent}${s.sql.replaceAll('\n', `\n${indent}`)};`
  const text = [
    `-- dimsync merge of table ${oneLine(table.name)}, batch ${oneLine(request.batchId)} into ${oneLine(d.table(objects.dimension))}`,
    `DECLARE ${v} STRING DEFAULT '';`,
    `DECLARE ${ERROR_VARIABLE} STRING DEFAULT '';`,
    ...ddl.map((s) => step(s, '')),
    'BEGIN',
    '  BEGIN TRANSACTION;',
    ...merge.map((s) => step(s, '  ')),
    '  COMMIT TRANSACTION;',
    'EXCEPTION WHEN ERROR THEN',
    // Keep the message first: a failing ROLLBACK (no open transaction) would replace @@error.
    `  SET ${ERROR_VARIABLE} = CONCAT(${d.stringLiteral(STEP_FAILED)}, ${v}, ': ', @@error.message);`,
    '  BEGIN',
    '    ROLLBACK TRANSACTION;',
    '  EXCEPTION WHEN ERROR THEN',
    `    SET ${ERROR_VARIABLE} = ${ERROR_VARIABLE};`,
    '  END;',
    `  RAISE USING MESSAGE = ${ERROR_VARIABLE};`,
    'END;',
    ...after.map((s) => step(s, '')),
  ].join('\n')
  return { ddl, merge, after, text: `${text}\n` }
}

/** One row: the ledger row of the batch plus what it did to keys (first seen, changed, deleted). */
export function renderCountsQuery(d: SqlDialect, batches: TableRef, target: string, batchId: string): string {
  const q = d.quoteIdentifier
  const changes = d.table({ name: TEMP.changes })
  return (
    `SELECT b.events, b.inserted_versions, b.closed_versions, b.deleted_keys, b.unchanged_events, b.late_keys,\n` +
    `  k.new_keys, k.changed_keys, k.deleted_keys AS deleted_key_changes\n` +
    `FROM ${d.table(batches)} b CROSS JOIN (\n` +
    `  SELECT SUM(CASE WHEN ${q('__dimsync_change_no')} = 1 AND NOT ${q('__dimsync_had_current')} AND NOT ${q('__dimsync_del')} THEN 1 ELSE 0 END) AS new_keys,\n` +
    `    SUM(CASE WHEN ${q('__dimsync_change_no')} = 1 AND ${q('__dimsync_had_current')} AND NOT ${q('__dimsync_del')} THEN 1 ELSE 0 END) AS changed_keys,\n` +
    `    SUM(CASE WHEN ${q('__dimsync_del')} THEN 1 ELSE 0 END) AS deleted_keys\n` +
    `  FROM ${changes}\n) k\n` +
    `WHERE b.target = ${d.stringLiteral(target)} AND b.batch_id = ${d.stringLiteral(batchId)}`
  )
}

const oneLine = (text: string) => text.replace(/[\r\n]+/g, ' ')

/**
 * The per-batch staging table: `_dimsync_stage_<target>_<batch id>` (BigQuery table names allow letters, digits
 * and `_`; a batch id's `.` and `-` become `_`). Deterministic, so a retried load finds the table it created.
 */
export function stagingTableName(target: string, batchId: string): string {
  return `_dimsync_stage_${target}_${batchId.replace(/[^A-Za-z0-9_]/g, '_')}`.slice(0, 1024)
}
