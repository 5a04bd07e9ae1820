import type { CompiledScript } from '../core/compiled-sql.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { ScriptParts, SqlDialect } from './dialect.ts'
import { renderBatchMerge } from './render-batch-merge.ts'
import type { MergePlan } from './render-merge.ts'
import { renderBatchReport } from './render-batch-queries.ts'
import { renderBatchLedgerDdl } from './render-ddl.ts'
import { renderCommittedBatch, renderLedgerOnceCheck } from './render-committed-batch.ts'
import { FENCE_TABLE, renderFenceCheck, renderFenceDdl, type FenceHolder } from './render-fence.ts'

/**
 * The merge of a staged batch as one script, for warehouses that run a merge as one job: DDL (ledger,
 * dimension, added columns, capture log, views) before the transaction, the merge inside it (its ledger row
 * checked to be the batch's only one), then the staging table is dropped and the batch's counts are selected (the
 * last statement's rows are the script's result). With a lease `fence`, the merge checks before COMMIT that no
 * newer lease advanced it (render-fence.ts). A batch the ledger already holds is not merged again: the
 * script answers its recorded counts (renderCommittedBatch). The dialect writes the script around the statements
 * (`scriptText`).
 *
 * A script over the warehouse's query length (capabilities.maxQueryCharacters) also comes as the queries of one
 * session (`session`, each under the length). When one of its statements alone is over half the length, the
 * merge is rendered again with its widest statements in column groups (MergePlan.maxStatementLength). Scripts that
 * fit are rendered as before and run as one job.
 */
export function renderMergeScript(
  d: SqlDialect,
  m: MergePlan & { readonly stage: TableRef; readonly fence?: FenceHolder },
): CompiledScript {
  const whole = renderScript(d, m)
  const limit = d.capabilities.maxQueryCharacters
  if (limit === undefined || whole.compiled.text.length <= limit) return whole.compiled
  const statementLimit = Math.floor(limit / 2)
  const { compiled, parts } = [...whole.compiled.ddl, ...whole.compiled.merge, ...whole.compiled.after].every(
    (s) => s.sql.length + (s.onlyIf?.length ?? 0) <= statementLimit,
  )
    ? whole
    : renderScript(d, { ...m, maxStatementLength: statementLimit })
  return { ...compiled, session: d.sessionScript(parts, limit) }
}

function renderScript(
  d: SqlDialect,
  m: MergePlan & { readonly stage: TableRef; readonly fence?: FenceHolder },
): { compiled: CompiledScript; parts: ScriptParts } {
  const statements = renderBatchMerge(d, m)
  const { ddl, views } = statements
  const { batches } = m.objects
  const fences = { schema: batches.schema, name: FENCE_TABLE }
  const merge = [
    ...statements.merge,
    renderLedgerOnceCheck(d, batches, m.table.target, m.batchId),
    ...(m.fence === undefined ? [] : [renderFenceCheck(d, fences, m.table.name, m.table.target, m.fence)]),
  ]
  const committed = renderCommittedBatch(d, batches, m.table.target, m.batchId, m.stage)
  const before = [
    renderBatchLedgerDdl(d, m.objects.batches),
    ...(m.fence === undefined ? [] : [renderFenceDdl(d, fences)]),
    ...ddl,
    ...views,
  ]
  const after = [
    { label: 'drop staging table', sql: d.dropTableIfExists(m.stage) },
    { label: 'report counts', sql: renderBatchReport(d, m.objects.batches, m.table.target, m.batchId, m) },
  ]
  const title = `dimsync merge of table ${m.table.name}, batch ${m.batchId} into ${d.table(m.objects.dimension)}`
  const parts = { title, ddl: before, merge, after, committed }
  return { compiled: { ddl: before, merge, after, text: d.scriptText(parts) }, parts }
}

/**
 * The per-batch staging table of a warehouse whose loads cannot write a session's temporary table:
 * `_dimsync_stage_<target>_<batch id>` (table names allow letters, digits and `_` everywhere; a batch id's `.`
 * and `-` become `_`). Deterministic, so a retried load finds the table it created.
 */
export function stagingTableName(target: string, batchId: string): string {
  return `_dimsync_stage_${target}_${batchId.replace(/[^A-Za-z0-9_]/g, '_')}`.slice(0, 1024)
}
