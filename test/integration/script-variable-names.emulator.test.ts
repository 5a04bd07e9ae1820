import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dimensionObjects } from '../../lib/sql/render-ddl.ts'
import { BothWarehouses } from '../support/both-warehouses.ts'
import { CAPTURE_COLUMNS, captureTable } from '../support/history-arbitraries.ts'
import type { Value } from '../support/staged-batches.ts'

/*
 * A BigQuery merge script holds its batch's earliest event time in a script variable, and BigQuery resolves a bare
 * name to a column before a variable of the same name. A source column named like dimsync's variable must not take
 * its place: the capture log would be read from the column's values, and a late event would be slotted against
 * the wrong captures or none, silently.
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const SHADOWING_COLUMN = 'dimsync_events_from'

const row = (key: number, at: string, region: string): Record<string, Value> => ({
  customer_id: key,
  region,
  tier: 'gold',
  changed_at: `2030-${at}T00:00:00.000Z`,
  deleted: false,
  // Later than every event: read as the batch's earliest event time, it would hide every capture.
  [SHADOWING_COLUMN]: '2099-01-01T00:00:00.000Z',
})

describe('a source column named like a script variable of the merge', () => {
  it(`a column "${SHADOWING_COLUMN}" changes nothing: the late event is slotted in as on DuckDB`, async () => {
    const table = captureTable('invalidate', null)
    const dimension = await both.open(table, [
      ...CAPTURE_COLUMNS,
      { name: SHADOWING_COLUMN, type: 'TIMESTAMPTZ' },
    ])
    try {
      const load = (rows: Record<string, Value>[], extractedAt: string) =>
        dimension.load(rows, { extractedAt: `2030-${extractedAt}T00:00:00.000Z`, mode: 'incremental' })
      await load([row(1, '01-10', 'north'), row(1, '05-10', 'east')], '05-11')
      const late = await load([row(1, '03-10', 'west'), row(2, '06-01', 'north')], '06-02')
      for (const side of ['duckdb', 'bigquery'] as const)
        expect(late[side], side).toMatchObject({ status: 'merged', counts: { lateKeys: 1 } })
      const versions = await dimension.read(
        (d, schema) =>
          `SELECT customer_id, region, ${d.castToString('valid_from')} AS valid_from FROM ${d.table(
            dimensionObjects(table, schema).dimension,
          )} ORDER BY customer_id, valid_from`,
      )
      const expected = [
        [1, 'north', '2030-01-10'],
        [1, 'west', '2030-03-10'],
        [1, 'east', '2030-05-10'],
        [2, 'north', '2030-06-01'],
      ]
      for (const side of ['duckdb', 'bigquery'] as const)
        expect(
          versions[side].map((v) => [Number(v.customer_id), v.region, String(v.valid_from).slice(0, 10)]),
          side,
        ).toEqual(expected)
    } finally {
      await dimension.close()
    }
  }, 120_000)
})
