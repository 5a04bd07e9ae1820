import { describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { metadataColumnList } from '../../../lib/core/metadata-columns.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import type { SqlDialect } from '../../../lib/sql/dialect.ts'
import { dimensionObjects, renderDimensionDdl } from '../../../lib/sql/render-ddl.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

const table = tableSpec({ validFrom: { kind: 'column', column: 'changed_at' } })
const existing = [
  { name: 'customer_id', type: 'INTEGER' },
  { name: 'balance', type: 'DECIMAL(10,2)' },
  { name: 'score', type: 'FLOAT' },
  ...metadataColumnList(table.columns),
]
const staged = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'balance', type: 'DECIMAL(18,2)' },
  { name: 'score', type: 'DOUBLE' },
  { name: 'changed_at', type: 'TIMESTAMP' },
]

describe('widened source types: the DDL before the merge', () => {
  const layout = planDimensionLayout(table, 'b1', staged, existing)

  it('the layout lists each widened column with both types', () => {
    expect(layout.widened).toEqual([
      { name: 'customer_id', type: 'BIGINT', from: 'INTEGER' },
      { name: 'balance', type: 'DECIMAL(18,2)', from: 'DECIMAL(10,2)' },
      { name: 'score', type: 'DOUBLE', from: 'FLOAT' },
    ])
  })

  it('DuckDB alters each column type (a key also in the capture log); BigQuery sets the data type only where its types differ', () => {
    const ddl = (d: SqlDialect) =>
      renderDimensionDdl(d, table, layout, dimensionObjects(table, 'h'))
        .filter((s) => s.label.startsWith('widen'))
        .map((s) => s.sql)
    expect(ddl(duckDbDialect)).toEqual([
      'ALTER TABLE "h"."dim_customer" ALTER COLUMN "customer_id" TYPE BIGINT',
      'ALTER TABLE "h"."dim_customer_dimsync_captures" ALTER COLUMN "customer_id" TYPE BIGINT',
      'ALTER TABLE "h"."dim_customer" ALTER COLUMN "balance" TYPE DECIMAL(18,2)',
      'ALTER TABLE "h"."dim_customer" ALTER COLUMN "score" TYPE DOUBLE',
    ])
    expect(ddl(createBigQueryDialect({ project: 'p' }))).toEqual([
      'ALTER TABLE `p`.`h`.`dim_customer` ALTER COLUMN `balance` SET DATA TYPE NUMERIC(18, 2)',
    ])
  })
})
