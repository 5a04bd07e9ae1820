import { describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import type { TableRef } from '../../../lib/core/table-ref.ts'
import { SqlDialectBase } from '../../../lib/sql/dialect-base.ts'
import type { LogicalType, TableFunctionParameter } from '../../../lib/sql/dialect.ts'
import { renderBatchReport } from '../../../lib/sql/render-batch-queries.ts'
import { dimensionObjects, renderDimensionDdl } from '../../../lib/sql/render-ddl.ts'
import { renderHistoryQuery } from '../../../lib/sql/render-history.ts'
import { renderMerge } from '../../../lib/sql/render-merge.ts'
import { renderMergeScript } from '../../../lib/sql/render-merge-script.ts'
import { renderViews } from '../../../lib/sql/render-views.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/**
 * A third warehouse, as small as it can be: only the members SqlDialectBase leaves abstract (what has no
 * standard SQL form). Every shared renderer works with it, and it inherits standard SQL everywhere else.
 */
class PlainDialect extends SqlDialectBase {
  readonly name = 'plain'
  type(logical: LogicalType): string {
    return { string: 'TEXT', int64: 'BIGINT', bool: 'BOOLEAN', timestamp: 'TIMESTAMP WITH TIME ZONE' }[
      logical
    ]
  }
  canonicalText(expression: string): string {
    return this.castToString(expression)
  }
  raiseError(message: string): string {
    return `raise_error(${message})`
  }
  isNan(expression: string): string {
    return `is_nan(${expression})`
  }
  columnType(stagedType: string): string {
    return stagedType
  }
  createTableFunction(
    ref: TableRef,
    parameters: readonly TableFunctionParameter[],
    body: (args: readonly string[]) => string,
  ): string {
    const declared = parameters.map((p) => `${p.name} ${this.type(p.type)}`).join(', ')
    return `CREATE OR REPLACE FUNCTION ${this.table(ref)}(${declared}) AS\n${body(parameters.map((p) => p.name))}`
  }
}

const d = new PlainDialect()
const table = tableSpec({ deletes: 'invalidate' })
const objects = dimensionObjects(table, 'history')
const layout = planDimensionLayout(
  table,
  'b1',
  [
    { name: 'customer_id', type: 'BIGINT' },
    { name: 'name', type: 'VARCHAR' },
  ],
  undefined,
)

describe('a dialect that states only what has no standard form', () => {
  it('inherits standard SQL: double-quoted identifiers, doubled quotes in literals, || and md5()', () => {
    expect(d.table({ schema: 'my"schema', name: 'dim' })).toBe('"my""schema"."dim"')
    expect(d.stringLiteral("it's")).toBe("'it''s'")
    expect(d.timestampLiteral('2024-03-10T14:30:00Z')).toBe("TIMESTAMP WITH TIME ZONE '2024-03-10T14:30:00Z'")
    expect(d.concat(['a', 'b'])).toBe('a || b')
    expect(d.md5Hex('x')).toBe('md5(x)')
  })

  it('the conservative capabilities: DDL outside transactions, current versions read by their flag alone', () => {
    expect(d.capabilities).toEqual({ transactionalDdl: false, partitionedOnValidTo: false })
    const close = renderMerge(d, {
      table,
      // An existing dimension: a batch founding one has no versions to close.
      layout: { ...layout, createDimension: false },
      objects,
      batchId: 'b1',
      extractedAt: '2024-03-10T14:30:00Z',
      appliedAt: '2024-03-10T14:31:00Z',
      mode: 'full',
      allowMassDelete: false,
    }).find((s) => s.label === 'close changed current versions')!
    expect(close.sql).toContain('WHERE d."is_current" AND d."customer_id" = c."customer_id"')
  })

  it('every shared renderer renders with it', () => {
    expect(renderDimensionDdl(d, table, layout, objects)[0]!.sql).toMatch(
      /^CREATE TABLE IF NOT EXISTS "history"."dim_customer"/,
    )
    expect(renderViews(d, table, objects).map((s) => s.sql.split('\n')[0])).toEqual([
      'CREATE OR REPLACE VIEW "history"."dim_customer_current" AS',
      'CREATE OR REPLACE FUNCTION "history"."dim_customer_as_of"(ts TIMESTAMP WITH TIME ZONE) AS',
    ])
    expect(renderHistoryQuery(d, table, objects.dimension, { key: [['customer_id', '101']] })).toBe(
      `SELECT * FROM "history"."dim_customer" WHERE CAST("customer_id" AS TEXT) = '101' ORDER BY "customer_id", "valid_from"`,
    )
    expect(renderBatchReport(d, objects.batches, table.target, 'b1')).toContain('FROM "__dimsync_changes"')
  })

  it('a merge as one script is refused with the dialect named', () => {
    expect(() =>
      renderMergeScript(d, {
        table,
        layout,
        objects,
        stage: { schema: 'history', name: 'stage' },
        batchId: 'b1',
        extractedAt: '2024-03-10T14:30:00Z',
        appliedAt: '2024-03-10T14:31:00Z',
        mode: 'full',
        allowMassDelete: false,
      }),
    ).toThrow('the plain dialect does not render merges as one script')
  })
})
