import { afterEach, describe, expect, it } from 'vitest'
import { BatchRejectedError, MassDeleteRefusedError } from '../../lib/core/errors.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * Every check of the merge, raised by real DuckDB, reaches the caller as the right error class with the table
 * and batch of the marker and the message people read, whatever the data in the message says.
 */
const JAN = '2024-01-01T09:00:00Z'
const MAR = '2024-03-10T14:30:00Z'
const CODES = [
  { name: 'code', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
]
const CHANGE_TIME: Partial<TableSpec> = {
  extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
  validFrom: { kind: 'column', column: 'changed_at' },
}

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})
async function setup(overrides: Partial<TableSpec> = {}): Promise<ScdHarness> {
  harness = await ScdHarness.create(tableSpec({ key: ['code'], ...overrides }), CODES)
  return harness
}
const row = (code: string | null, region: string, changedAt: string | null = '2024-01-01 00:00:00') => ({
  code,
  region,
  changed_at: changedAt,
})

async function refusal(load: Promise<unknown>): Promise<BatchRejectedError> {
  const error = await load.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(BatchRejectedError)
  return error as BatchRejectedError
}

describe('a refused batch is BatchRejectedError (MassDeleteRefusedError for the guard), never guessed from its text', () => {
  it('duplicate keys whose values read like a mass delete are a grain error, not a mass-delete refusal', async () => {
    const h = await setup()
    const code = 'x would delete y'
    const error = await refusal(h.load([row(code, 'a'), row(code, 'b')], { extractedAt: JAN }))
    expect(error).not.toBeInstanceOf(MassDeleteRefusedError)
    expect(error).toMatchObject({ table: 'customers', batchId: 'b0001' })
    expect(error.message).toBe(
      'table customers: batch b0001 has 1 duplicate keys (a full extract must hold one row per key), ' +
        'for example: code=x would delete y; nothing was written',
    )
  })

  it('the mass-delete guard', async () => {
    const h = await setup({ deletes: 'invalidate' })
    await h.load([row('a', '1'), row('b', '1'), row('c', '1')], { extractedAt: JAN })
    const error = await refusal(h.load([row('a', '1')], { extractedAt: MAR }))
    expect(error).toBeInstanceOf(MassDeleteRefusedError)
    expect(error).toMatchObject({ table: 'customers', batchId: 'b0002' })
    expect(error.message).toBe(
      'table customers: batch b0002 would delete 2 of 3 current keys (more than the allowed share 0.5); ' +
        'nothing was written. If the source really lost these rows, rerun with --allow-mass-delete',
    )
  })

  it.each([
    ['a NULL key', {}, [row(null, 'a')], 'has 1 rows with a NULL key (code)'],
    ['a NULL valid_from', CHANGE_TIME, [row('a', 'a', null)], 'has 1 rows with a NULL valid_from column'],
  ])('%s', async (_what, overrides, rows, text) => {
    const h = await setup(overrides)
    const error = await refusal(h.load(rows, { extractedAt: JAN }))
    expect(error).not.toBeInstanceOf(MassDeleteRefusedError)
    expect(error).toMatchObject({ table: 'customers', batchId: 'b0001' })
    expect(error.message).toContain(`table customers: batch b0001 ${text}`)
  })

  it('a NaN key (a float key that equals nothing on BigQuery), named with its column and count', async () => {
    harness = await ScdHarness.create(tableSpec({ key: ['score', 'code'] }), [
      { name: 'score', type: 'DOUBLE' },
      { name: 'code', type: 'VARCHAR' },
      { name: 'region', type: 'VARCHAR' },
    ])
    const nan = (code: string) => ({ score: Number.NaN, code, region: 'a' })
    const error = await refusal(
      harness.load([nan('a'), nan('b'), { score: 1.5, code: 'a', region: 'a' }], { extractedAt: JAN }),
    )
    expect(error).toMatchObject({ table: 'customers', batchId: 'b0001' })
    expect(error.message).toBe(
      'table customers: batch b0001 has 2 rows with a NaN key (score): NaN equals no value on BigQuery, ' +
        'so such a key could never be matched to its versions; nothing was written',
    )
    expect(await harness.history(), 'nothing written').toEqual([])
  })

  it('snapshots out of extraction order', async () => {
    const h = await setup()
    await h.load([row('a', '1')], { extractedAt: MAR })
    const error = await refusal(h.load([row('a', '2')], { extractedAt: JAN }))
    expect(error).toMatchObject({ table: 'customers', batchId: 'b0002' })
    expect(error.message).toMatch(/^table customers: batch b0002 was extracted at .* nothing was written/)
  })

  it('a different state captured at the same change time', async () => {
    const h = await setup(CHANGE_TIME)
    await h.load([row('a', '1')], { extractedAt: JAN })
    const error = await refusal(h.load([row('a', '2')], { extractedAt: MAR }))
    expect(error).toMatchObject({ table: 'customers', batchId: 'b0002' })
    expect(error.message).toMatch(/^table customers: batch b0002: key code=a already has a different state/)
  })
})
