import type { CompiledScript, CompiledStatement } from '../core/compiled-sql.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { SqlDialect } from './dialect.ts'
import { dimensionObjects, renderBatchLedgerDdl, renderSurrogateKeyRecordDdl } from './render-ddl.ts'
import { renderFactChangeLogDdl, renderFactTableDdl, renderFactViews } from './render-fact-ddl.ts'
import { renderFactLoad, renderFactReport, type FactLoadPlan } from './render-fact-load.ts'
import { renderCommittedBatch, renderLedgerOnceCheck } from './render-committed-batch.ts'

/**
 * The DDL a fact load runs first (all idempotent): the batch ledger, the surrogate-key record of each dimension it
 * infers members of, the fact table, a change feed's change log, its two views.
 */
export function renderFactDdl(d: SqlDialect, plan: FactLoadPlan): CompiledStatement[] {
  const inferring = plan.layout.references.filter((r) => r.inferredFlag !== undefined).map((r) => r.dimension)
  return [
    renderBatchLedgerDdl(d, plan.objects.batches),
    ...[...new Set(inferring)].map((t) =>
      renderSurrogateKeyRecordDdl(d, t, dimensionObjects(t, plan.schema).keys),
    ),
    renderFactTableDdl(d, plan.fact, plan.layout, plan.objects),
    ...renderFactChangeLogDdl(d, plan.fact, plan.layout, plan.objects),
    ...renderFactViews(d, plan.fact, plan.layout, plan.objects, plan.schema),
  ]
}

/**
 * The load of a fact batch as one script, for warehouses that run it as one job (see renderMergeScript): the
 * DDL, the load inside one transaction, then the staging table is dropped and the report selected (the last
 * statement's rows are the script's result).
 */
export function renderFactScript(
  d: SqlDialect,
  plan: FactLoadPlan & { readonly stage: TableRef },
): CompiledScript {
  const ddl = renderFactDdl(d, plan)
  const { batches } = plan.objects
  const target = plan.fact.target
  const merge = [...renderFactLoad(d, plan), renderLedgerOnceCheck(d, batches, target, plan.batchId)]
  const drop = { label: 'drop staging table', sql: d.dropTableIfExists(plan.stage) }
  const report = { label: 'report counts', sql: renderFactReport(d, plan) }
  const after = [drop, report]
  // Loaded already (a retry after COMMIT): the report reads only the fact table, so it answers the same counts.
  const committed = {
    ...renderCommittedBatch(d, batches, target, plan.batchId, plan.stage),
    after: [drop, report],
  }
  const title = `dimsync load of facts ${plan.fact.name}, batch ${plan.batchId} into ${d.table(plan.objects.table)}`
  return { ddl, merge, after, text: d.scriptText({ title, ddl, merge, after, committed }) }
}
