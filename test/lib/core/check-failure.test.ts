import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  CHECK_KINDS,
  checkFailureMarkers,
  parseCheckFailure,
  rejectedBatchError,
  type CheckKind,
} from '../../../lib/core/check-failure.ts'
import { BatchRejectedError, MassDeleteRefusedError } from '../../../lib/core/errors.ts'

/** The text a warehouse reports for a check raised with `message`, with the warehouse's own words around it. */
function raised(kind: CheckKind, table: string, batchId: string, message: string, before = '', after = '') {
  const { open, close } = checkFailureMarkers({ kind, table, batchId })
  return `${before}${open}${message}${close}${after}`
}

describe('check failures travel from the warehouse as a marker, not as English text', () => {
  it('finds the check inside what DuckDB and a BigQuery script add around a raised error', () => {
    const message =
      'table customers: batch b0001 has 1 rows with a NULL key (customer_id); nothing was written'
    for (const [before, after] of [
      ['Invalid Input Error: ', ''],
      ['dimsync step check NULL keys: ', ' at [12:3]'],
      ['', '; (while evaluating ERROR)'],
    ] as const) {
      expect(parseCheckFailure(raised('null-key', 'customers', 'b0001', message, before, after))).toEqual({
        kind: 'null-key',
        table: 'customers',
        batchId: 'b0001',
        message,
      })
    }
  })

  it('the mass-delete guard becomes MassDeleteRefusedError, every other check BatchRejectedError, naming table and batch', () => {
    for (const kind of CHECK_KINDS) {
      const error = rejectedBatchError(raised(kind, 'orders', '20240310T143000.000Z-3f9a1c', 'text'))
      expect(error).toBeInstanceOf(BatchRejectedError)
      expect(error instanceof MassDeleteRefusedError).toBe(kind === 'mass-delete')
      expect(error).toMatchObject({
        table: 'orders',
        batchId: '20240310T143000.000Z-3f9a1c',
        message: 'text',
      })
    }
  })

  it('a message that only reads like a check is not one (the English text decides nothing)', () => {
    expect(
      rejectedBatchError(
        'Binder Error: table customers: batch b1 would delete 3 of 4 current keys; nothing was written',
      ),
    ).toBeUndefined()
    expect(
      parseCheckFailure('[dimsync-check kind=no-such-check table=t batch=b] x [/dimsync-check]'),
    ).toBeUndefined()
  })

  it('any table name, batch id and message round-trip, whatever text surrounds them', () => {
    const noMarker = (s: string) => !s.includes('[dimsync-check') && !s.includes('[/dimsync-check]')
    fc.assert(
      fc.property(
        fc.constantFrom(...CHECK_KINDS),
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        fc.string().filter(noMarker),
        fc.string().filter(noMarker),
        fc.string(),
        (kind, table, batchId, message, before, after) => {
          expect(parseCheckFailure(raised(kind, table, batchId, message, before, after))).toEqual({
            kind,
            table,
            batchId,
            message,
          })
        },
      ),
      { numRuns: 500 },
    )
  })
})
