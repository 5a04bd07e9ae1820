import { describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { renderBatchMerge } from '../../../lib/sql/render-batch-merge.ts'
import { renderBatchReport } from '../../../lib/sql/render-batch-queries.ts'
import { renderMergeWork } from '../../../lib/sql/render-batch-work.ts'
import { dimensionObjects, renderBatchLedgerDdl } from '../../../lib/sql/render-ddl.ts'
import { foundsDimension } from '../../../lib/sql/render-first-load.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import {
  BATCH,
  DATASET,
  STAGED,
  bigQuery,
  layoutColumns,
  mergeConfigMatrix,
  mergeRequest,
} from '../../support/zetasql/merge-config-matrix.ts'

/**
 * A batch's merge work is the merge both warehouses ran before it was one plan: in a transaction the DDL, merge,
 * views and report of renderBatchMerge; as a script renderMergeScript's text, its lease check included.
 */
describe('renderMergeWork over the merge matrix', () => {
  it.each(mergeConfigMatrix().map((c) => [c.title, c] as const))('%s', (_title, c) => {
    const objects = dimensionObjects(c.table, DATASET)
    const existing = c.existing === undefined ? undefined : layoutColumns(c.table, c.existing)
    const layout = planDimensionLayout(c.table, BATCH, STAGED, existing)
    const stage = { schema: DATASET, name: stagingTableName(c.table.target, BATCH) }
    const staged = mergeRequest(c.table, layout, objects, stage)
    const session = { ...staged, stage: undefined }
    const merge = renderBatchMerge(duckDbDialect, session)
    const inTransaction = renderMergeWork(duckDbDialect, session).inTransaction()
    expect(inTransaction).toEqual({
      ddl: merge.ddl,
      statements: merge.merge,
      ddlAfter: merge.views,
      report: renderBatchReport(duckDbDialect, objects.batches, c.table.target, BATCH, session),
      alreadyRun: [renderBatchLedgerDdl(duckDbDialect, objects.batches)],
      firstLoad: foundsDimension(session),
    })
    const fence = { token: 7, owner: 'run-1' }
    expect(renderMergeWork(bigQuery, staged).asScript().text).toBe(renderMergeScript(bigQuery, staged).text)
    expect(renderMergeWork(bigQuery, { ...staged, fence }).asScript().text).toBe(
      renderMergeScript(bigQuery, { ...staged, fence }).text,
    )
    expect(() => renderMergeWork(bigQuery, session).asScript()).toThrow(/none was loaded/)
  })
})
