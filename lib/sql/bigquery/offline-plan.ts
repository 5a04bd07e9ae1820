import type { StagedColumn } from '../../core/batch.ts'
import { planDimensionLayout } from '../../core/dimension-layout.ts'
import { metadataColumnList } from '../../core/metadata-columns.ts'
import type { TableSpec } from '../../core/table-spec.ts'
import type { CompiledScript } from '../../core/compiled-sql.ts'
import { dimensionObjects } from '../render-ddl.ts'
import { renderMergeScript, stagingTableName } from '../render-merge-script.ts'
import { createBigQueryDialect } from './bigquery-dialect.ts'

export interface OfflinePlanRequest {
  readonly table: TableSpec
  /** The source's columns (Source.describe), as a batch would stage them. */
  readonly columns: readonly StagedColumn[]
  readonly project: string
  readonly dataset: string
  /** ISO instant used as the extraction and applied time of the example batch. */
  readonly now: string
  /**
   * A later batch: the dimension is taken to exist with these columns (its first load's), so the script is the one
   * every later batch runs (the diff, the closes, the overwrites). Default: the first load.
   */
  readonly later?: boolean
}

/** Batch id of the example batch an offline plan renders. */
export const OFFLINE_BATCH_ID = 'planned-offline'

/**
 * The complete BigQuery script dimsync would run for a first (or a later) batch of `table`, rendered without any
 * credentials or network (no BigQuery call): for review, and for `dimsync plan --dialect bigquery --sql`.
 * The dimension is assumed not to exist yet (the script's DDL creates it; on later runs the same DDL is
 * `IF NOT EXISTS`).
 */
export function renderOfflineBigQueryPlan(request: OfflinePlanRequest): CompiledScript {
  const { table } = request
  const d = createBigQueryDialect({ project: request.project })
  const first = planDimensionLayout(table, OFFLINE_BATCH_ID, request.columns, undefined)
  const layout = request.later
    ? planDimensionLayout(table, OFFLINE_BATCH_ID, request.columns, [
        ...first.stored,
        ...first.derived,
        ...metadataColumnList(table.columns),
      ])
    : first
  return renderMergeScript(d, {
    table,
    layout,
    objects: dimensionObjects(table, request.dataset),
    stage: { schema: request.dataset, name: stagingTableName(table.target, OFFLINE_BATCH_ID) },
    batchId: OFFLINE_BATCH_ID,
    extractedAt: request.now,
    appliedAt: request.now,
    mode: table.extract.mode,
    allowMassDelete: false,
  })
}
