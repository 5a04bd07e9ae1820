import { afterEach, describe, expect, it } from 'vitest'

import { MassDeleteRefusedError } from '../../lib/core/errors.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const JAN = '2024-01-01T09:00:00Z'
const COLUMNS = [
  { name: 'code', type: 'VARCHAR' },
  { name: 'amount', type: 'DECIMAL(12,2)' },
  { name: 'changed_at', type: 'TIMESTAMP' },
]

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})
async function setup(overrides: Partial<TableSpec> = {}): Promise<ScdHarness> {
  harness = await ScdHarness.create(tableSpec({ key: ['code'], ...overrides }), COLUMNS)
  return harness
}

describe('an empty full extract on a first load (real DuckDB)', () => {
  it('is refused like a mass delete, and creates no dimension', async () => {
    const h = await setup()
    const batchId = await h.stage([], { extractedAt: JAN })
    const error = await h.merge(batchId).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(MassDeleteRefusedError)
    expect(error).toMatchObject({ table: 'customers', batchId })
    expect((error as Error).message).toBe(
      `table customers: batch ${batchId} is an empty full extract and dim_customer does not exist yet; nothing ` +
        'was written. If the source really is empty, rerun with --allow-mass-delete',
    )
    expect(await h.warehouse.describeTable({ schema: 'main', name: 'dim_customer' })).toBeUndefined()
  })

  it('creates the empty dimension with its types when the guard is overridden', async () => {
    const h = await setup()
    const result = await h.merge(await h.stage([], { extractedAt: JAN }), { allowMassDelete: true })
    expect(result.status).toBe('merged')
    const columns = await h.warehouse.describeTable({ schema: 'main', name: 'dim_customer' })
    expect(columns?.find((c) => c.name === 'amount')?.type).toBe('DECIMAL(12,2)')
  })

  it('an empty first delta is not refused: a delta may find nothing new', async () => {
    const h = await setup({ extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 } })
    const result = await h.merge(await h.stage([], { extractedAt: JAN }))
    expect(result.status).toBe('merged')
  })

  it('an empty first batch of a change feed is not refused: a feed may hold no events yet', async () => {
    const h = await setup({
      validFrom: { kind: 'column', column: 'changed_at' },
      changes: { operation: { column: 'op', insert: ['I'], update: ['U'], delete: ['D'] } },
      deletes: 'invalidate',
    })
    const feed = [{ name: 'op', type: 'VARCHAR' }, ...COLUMNS]
    const result = await h.merge(await h.stage([], { extractedAt: JAN, mode: 'full', columns: feed }))
    expect(result.status).toBe('merged')
  })
})
