import { describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { renderMerge } from '../../../lib/sql/render-merge.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

const LABEL = 'complete inferred members with their first real event'
const table = tableSpec()
const staged = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
]
const metadata = [
  { name: 'dimsync_sk', type: 'BIGINT' },
  { name: 'valid_from', type: 'TIMESTAMPTZ' },
  { name: 'valid_to', type: 'TIMESTAMPTZ' },
  { name: 'is_current', type: 'BOOLEAN' },
  { name: 'is_deleted', type: 'BOOLEAN' },
  { name: 'dimsync_row_hash', type: 'VARCHAR' },
  { name: 'dimsync_batch_id', type: 'VARCHAR' },
]

function labels(existing: readonly { name: string; type: string }[]) {
  const layout = planDimensionLayout(table, 'b2', staged, existing)
  return renderMerge(duckDbDialect, {
    table,
    layout,
    objects: dimensionObjects(table, 'main'),
    batchId: 'b2',
    extractedAt: '2024-03-10T14:30:00.000Z',
    appliedAt: '2024-03-10T14:31:00.000Z',
    mode: 'full',
    allowMassDelete: false,
  })
}

describe('the merge completes inferred members', () => {
  it('only in a dimension that has the flag column', () => {
    expect(labels([...staged, ...metadata]).map((s) => s.label)).not.toContain(LABEL)
    const merge = labels([...staged, ...metadata, { name: 'is_inferred', type: 'BOOLEAN' }])
    const at = merge.findIndex((s) => s.label === LABEL)
    expect(at).toBeGreaterThan(merge.findIndex((s) => s.label === 'check duplicate keys'))
    // Before the diff reads the current versions' hashes.
    expect(at).toBeLessThan(merge.findIndex((s) => s.label.startsWith('close')))
    expect(merge[at]!.sql).toContain('d."is_inferred" IS TRUE AND d."is_current"')
    // The flag is dimsync's own column, not a source column the source stopped sending: no rehash of the
    // current versions on every merge.
    expect(merge.map((s) => s.label)).not.toContain(
      'schema evolution: hash current versions without the removed columns',
    )
  })
})
