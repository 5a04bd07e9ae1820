import type { CompiledScript } from '../core/compiled-sql.ts'
import type { DimensionLayout } from '../core/dimension-layout.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'
import { renderBatchReport } from './render-batch-queries.ts'
import { renderBatchLedgerDdl, renderDimensionDdl, type DimensionObjects } from './render-ddl.ts'
import { renderMerge } from './render-merge.ts'
import { renderViews } from './render-views.ts'

export interface MergeScriptPlan {
  readonly table: TableSpec
  readonly layout: DimensionLayout
  readonly objects: DimensionObjects
  /** The per-batch staging table the load jobs wrote (see stagingTableName). */
  readonly stage: TableRef
  readonly batchId: string
  readonly extractedAt: string
  readonly appliedAt: string
  readonly mode: 'full' | 'incremental'
  readonly allowMassDelete: boolean
}

/**
 * The merge of a staged batch as one script, for warehouses that run a merge as one job: DDL (ledger,
 * dimension, added columns, capture log, views) before the transaction, the merge inside it, then the staging
 * table is dropped and the batch's counts are selected (the last statement's rows are the script's result). The
 * dialect writes the script around the statements (`scriptText`).
 */
export function renderMergeScript(d: SqlDialect, request: MergeScriptPlan): CompiledScript {
  const { table, layout, objects } = request
  const ddl = [
    renderBatchLedgerDdl(d, objects.batches),
    ...renderDimensionDdl(d, table, layout, objects),
    ...renderViews(d, table, objects),
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
    { label: 'report counts', sql: renderBatchReport(d, objects.batches, table.target, request.batchId) },
  ]
  const title = `dimsync merge of table ${table.name}, batch ${request.batchId} into ${d.table(objects.dimension)}`
  return { ddl, merge, after, text: d.scriptText({ title, ddl, merge, after }) }
}

/**
 * The per-batch staging table of a warehouse whose loads cannot write a session's temporary table:
 * `_dimsync_stage_<target>_<batch id>` (table names allow letters, digits and `_` everywhere; a batch id's `.`
 * and `-` become `_`). Deterministic, so a retried load finds the table it created.
 */
export function stagingTableName(target: string, batchId: string): string {
  return `_dimsync_stage_${target}_${batchId.replace(/[^A-Za-z0-9_]/g, '_')}`.slice(0, 1024)
}
