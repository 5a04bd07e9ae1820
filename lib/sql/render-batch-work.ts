import type { BatchWork } from '../core/batch-work.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { SqlDialect } from './dialect.ts'
import { renderBatchMerge } from './render-batch-merge.ts'
import { renderBatchReport } from './render-batch-queries.ts'
import { renderBatchLedgerDdl } from './render-ddl.ts'
import { renderFactDdl, renderFactScript } from './render-fact-script.ts'
import { renderFactLoad, renderFactReport, type FactLoadPlan } from './render-fact-load.ts'
import { foundsDimension } from './render-first-load.ts'
import type { MergePlan } from './render-merge.ts'
import { renderMergeScript } from './render-merge-script.ts'
import type { FenceHolder } from './render-fence.ts'

/**
 * A batch's merge in both forms: the transaction's DDL, merge and views with the batch's counts, or the script
 * (renderMergeScript) that reads the batch from `plan.stage` and, given a `fence`, checks the lease before COMMIT.
 */
export function renderMergeWork(
  d: SqlDialect,
  plan: MergePlan & { readonly fence?: FenceHolder },
): BatchWork {
  return {
    inTransaction: () => {
      const { ddl, merge, views } = renderBatchMerge(d, plan)
      const { batches } = plan.objects
      return {
        ddl,
        statements: merge,
        ddlAfter: views,
        report: renderBatchReport(d, batches, plan.table.target, plan.batchId, plan),
        alreadyRun: [renderBatchLedgerDdl(d, batches)],
        firstLoad: foundsDimension(plan),
      }
    },
    asScript: () => renderMergeScript(d, { ...plan, stage: scriptStage(plan.stage, plan.table.name) }),
  }
}

/** A fact batch's load in both forms (renderFactLoad in a transaction, or renderFactScript). */
export function renderFactWork(d: SqlDialect, plan: FactLoadPlan): BatchWork {
  return {
    inTransaction: () => ({
      ddl: renderFactDdl(d, plan),
      statements: renderFactLoad(d, plan),
      ddlAfter: [],
      report: renderFactReport(d, plan),
    }),
    asScript: () => renderFactScript(d, { ...plan, stage: scriptStage(plan.stage, plan.fact.name) }),
  }
}

function scriptStage(stage: TableRef | undefined, table: string): TableRef {
  if (stage === undefined)
    throw new Error(`table ${table}: a script reads its batch from a staging table, and none was loaded`)
  return stage
}
