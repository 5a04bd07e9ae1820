import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { SqlDialect } from './dialect.ts'
import { renderDimensionDdl } from './render-ddl.ts'
import { renderMerge, type MergePlan } from './render-merge.ts'
import { renderViews } from './render-views.ts'

/** The statements of a batch merge: the dimension's DDL, the merge (ending with the ledger row), the views. */
export interface BatchMergeStatements {
  readonly ddl: readonly CompiledStatement[]
  readonly merge: readonly CompiledStatement[]
  readonly views: readonly CompiledStatement[]
}

export function renderBatchMerge(d: SqlDialect, plan: MergePlan): BatchMergeStatements {
  return {
    ddl: renderDimensionDdl(d, plan.table, plan.layout, plan.objects),
    merge: renderMerge(d, plan),
    views: renderViews(d, plan.table, plan.objects),
  }
}
