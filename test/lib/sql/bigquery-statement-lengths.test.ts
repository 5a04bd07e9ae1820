import { describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { metadataColumnList } from '../../../lib/core/metadata-columns.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { MAX_QUERY_CHARACTERS } from '../../../lib/sql/bigquery/script-length.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/*
 * The widest table BigQuery holds (10,000 columns, here named like real columns: 20 characters) cannot be merged by
 * splitting its script into several jobs of one session transaction alone: single statements of its merge are over
 * BigQuery's 1,024K-character query limit by themselves (docs/bigquery.md, "Limits that remain"). This pins the
 * lengths the docs state; it fails once the statements are split (update the docs then).
 */
const WIDTH = 10_000
const BATCH = '20240310T143000.000Z-3f9a1c'

function longestStatements(table: TableSpec, later: boolean): [label: string, length: number][] {
  const columns: StagedColumn[] = [
    { name: 'customer_id', type: 'BIGINT' },
    ...Array.from({ length: WIDTH - 1 }, (_, i) => ({
      name: `attribute_name_${String(i).padStart(5, '0')}`,
      type: 'VARCHAR',
    })),
  ]
  const first = planDimensionLayout(table, BATCH, columns, undefined)
  const layout = later
    ? planDimensionLayout(table, BATCH, columns, [...first.stored, ...metadataColumnList(table.columns)])
    : first
  const script = renderMergeScript(createBigQueryDialect({ project: 'acme-dw' }), {
    table,
    layout,
    objects: dimensionObjects(table, 'history'),
    stage: { schema: 'history', name: stagingTableName(table.target, BATCH) },
    batchId: BATCH,
    extractedAt: '2024-03-10T14:30:00.000Z',
    appliedAt: '2024-03-10T14:31:00.000Z',
    mode: 'full',
    allowMassDelete: false,
  })
  return [...script.ddl, ...script.merge, ...script.after]
    .filter((s) => s.sql.length > MAX_QUERY_CHARACTERS)
    .map((s) => [s.label, Math.ceil(s.sql.length / 1000)])
}

describe(`merge statements of a ${WIDTH.toLocaleString('en-US')}-column table on BigQuery`, () => {
  it('all columns tracked: the first load’s insert and a later batch’s diff are each over the query limit', () => {
    const table = tableSpec({})
    expect(longestStatements(table, false)).toEqual([['insert first versions', 1_101]])
    expect(longestStatements(table, true)).toEqual([['diff snapshot against current versions', 1_402]])
  })

  it('all columns type 1: a later batch’s overwrite of the type 1 columns is over the query limit', () => {
    const table = tableSpec({ tracked: { kind: 'list', columns: [] } })
    expect(longestStatements(table, false)).toEqual([])
    expect(longestStatements(table, true)).toEqual([['overwrite type 1 columns', 1_471]])
  })
})
