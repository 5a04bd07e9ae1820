import { describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { closedVersionReads } from '../../../lib/sql/bigquery/partition-filter-reads.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import {
  BATCH,
  DATASET,
  STAGED,
  bigQuery,
  layoutColumns,
  mergeRequest,
} from '../../support/zetasql/merge-config-matrix.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/*
 * A dimension with BigQuery's require_partition_filter is refused before a merge whose statements read its closed
 * versions: change_detection's check reads every version of the batch's keys, so it is one of them.
 */

function readsOf(table: ReturnType<typeof tableSpec>): string[] {
  const objects = dimensionObjects(table, DATASET)
  const layout = planDimensionLayout(table, BATCH, STAGED, layoutColumns(table, STAGED))
  const stage = { schema: DATASET, name: stagingTableName(table.target, BATCH) }
  const script = renderMergeScript(bigQuery, mergeRequest(table, layout, objects, stage))
  return closedVersionReads(script, bigQuery.table(objects.dimension))
}

describe('closed-version reads of a merge on BigQuery', () => {
  it('include the version column check of change_detection, and nothing of a table without it', () => {
    const plain = tableSpec({ key: ['tenant_id', 'customer_id'] })
    expect(readsOf(plain)).toEqual([])
    const versioned = {
      ...plain,
      changeDetection: { versionColumn: 'updated_at', onSameVersion: 'refuse' as const },
    }
    expect(readsOf(versioned)).toContain('version column: rows and versions in time order')
  })
})
