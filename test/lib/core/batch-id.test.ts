import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { instantOfBatchId, makeBatchId, runIdOfBatch } from '../../../lib/core/batch-id.ts'

describe('batch ids', () => {
  it('carry their extraction instant: instantOfBatchId gives back what makeBatchId encoded', () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('1970-01-01T00:00:00Z'),
          max: new Date('9999-12-31T23:59:59.999Z'),
          noInvalidDate: true,
        }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (at, random) => {
          expect(instantOfBatchId(makeBatchId(at, () => random))).toBe(at.toISOString())
        },
      ),
    )
  })

  it('an id not made by makeBatchId has no instant, nor has an impossible date', () => {
    expect(instantOfBatchId('manual-batch-1')).toBeUndefined()
    expect(instantOfBatchId('20241399T000000.000Z-abcdef')).toBeUndefined()
    expect(instantOfBatchId('20240310T143000.000Z')).toBeUndefined()
  })

  it('the run of a batch is named after it', () => {
    expect(runIdOfBatch('20240310T143000.000Z-3f9a1c')).toBe('run-20240310T143000.000Z-3f9a1c')
  })
})
