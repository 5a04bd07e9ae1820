import { describe, expect, it } from 'vitest'
import type { Watermark } from '../../../lib/core/batch.ts'
import { ledgerDisagreement, type LedgerView } from '../../../lib/core/watermark-ledger.ts'

const at = (cursor: string, batchId?: string, column?: string): Watermark => ({
  cursor,
  key: [1],
  ...(column !== undefined ? { column } : {}),
  ...(batchId !== undefined ? { batchId } : {}),
})
const view = (overrides: Partial<LedgerView> = {}): LedgerView => ({
  holdsWatermarkBatch: true,
  anyBatch: true,
  staged: new Set(),
  ...overrides,
})

describe('the watermark against the batch ledger', () => {
  it('agree: the watermark committed by the ledger last batch; or a first run (neither has anything)', () => {
    const stored = at('2024-02-01T00:00:00Z', 'b2')
    expect(
      ledgerDisagreement(stored, view({ last: { batchId: 'b2', watermark: at('2024-02-01T00:00:00Z') } })),
    ).toBeUndefined()
    expect(
      ledgerDisagreement(undefined, view({ holdsWatermarkBatch: false, anyBatch: false })),
    ).toBeUndefined()
    // Full batches (no watermark) in the ledger of a table now incremental: nothing to compare.
    expect(ledgerDisagreement(undefined, view())).toBeUndefined()
  })

  it('the watermark batch missing from the ledger: the warehouse is behind', () => {
    const stored = at('2024-02-01T00:00:00Z', 'b2')
    expect(ledgerDisagreement(stored, view({ holdsWatermarkBatch: false }))).toEqual({
      kind: 'warehouse-behind',
      stored,
    })
  })

  it('a watermark that names no batch (committed before batches were named): only an empty ledger shows a loss', () => {
    const legacy = at('2024-02-01T00:00:00Z')
    expect(ledgerDisagreement(legacy, view({ holdsWatermarkBatch: false }))).toBeUndefined()
    expect(ledgerDisagreement(legacy, view({ holdsWatermarkBatch: false, anyBatch: false }))).toEqual({
      kind: 'warehouse-behind',
      stored: legacy,
    })
  })

  it('the ledger holding a later watermark: the state is behind, unless that batch is still staged', () => {
    const stored = at('2024-01-01T00:00:00Z', 'b1')
    const last = { batchId: 'b2', watermark: at('2024-02-01T00:00:00Z') }
    expect(ledgerDisagreement(stored, view({ last }))).toEqual({ kind: 'state-behind', stored })
    expect(ledgerDisagreement(undefined, view({ last }))).toEqual({ kind: 'state-behind' })
    expect(ledgerDisagreement(stored, view({ last, staged: new Set(['b2']) }))).toBeUndefined()
    expect(ledgerDisagreement(undefined, view({ last, staged: new Set(['b2']) }))).toBeUndefined()
  })

  it('a later batch at the same position (an empty delta), or a watermark of another cursor column, is no mismatch', () => {
    const stored = at('2024-02-01T00:00:00Z', 'b1', 'updated_at')
    expect(
      ledgerDisagreement(
        stored,
        view({ last: { batchId: 'b2', watermark: at('2024-02-01T00:00:00Z', undefined, 'updated_at') } }),
      ),
    ).toBeUndefined()
    expect(
      ledgerDisagreement(
        stored,
        view({ last: { batchId: 'b2', watermark: at('2024-03-01T00:00:00Z', undefined, 'seq') } }),
      ),
    ).toBeUndefined()
  })
})
