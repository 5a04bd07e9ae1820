import { afterEach, describe, expect, it } from 'vitest'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { currentVersion, liveCurrentVersion, liveVersionAt } from '../../../lib/sql/version-predicates.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

const bigQuery = createBigQueryDialect({ project: 'acme-dw' })
const SENTINEL = '9999-12-31T23:59:59Z'

describe('the current and as-of predicates, side by side', () => {
  it.each([
    [
      'NULL open end',
      null,
      {
        duckdb: ['d."is_current"', 'd."valid_from" <= t AND (d."valid_to" IS NULL OR d."valid_to" > t)'],
        bigquery: [
          'd.`is_current` AND d.`valid_to` IS NULL',
          'd.`valid_from` <= t AND (d.`valid_to` IS NULL OR d.`valid_to` > t)',
        ],
      },
    ],
    [
      'sentinel open end',
      SENTINEL,
      {
        duckdb: ['d."is_current"', 'd."valid_from" <= t AND d."valid_to" > t'],
        bigquery: [
          "d.`is_current` AND d.`valid_to` = TIMESTAMP '9999-12-31 23:59:59+00:00'",
          'd.`valid_from` <= t AND d.`valid_to` > t',
        ],
      },
    ],
  ])(
    '%s: BigQuery adds the open end to the current filter (its partition), DuckDB reads the flag',
    (_n, openEnd, expected) => {
      const table = tableSpec({ openEnd })
      for (const [d, [current, at]] of [
        [duckDbDialect, expected.duckdb],
        [bigQuery, expected.bigquery],
      ] as const) {
        expect(currentVersion(d, table, 'd')).toBe(current)
        const notDeleted = d === duckDbDialect ? 'NOT d."is_deleted"' : 'NOT d.`is_deleted`'
        expect(liveCurrentVersion(d, table, 'd')).toBe(`${current} AND ${notDeleted}`)
        expect(liveVersionAt(d, table, 't', 'd')).toBe(`${at} AND ${notDeleted}`)
      }
    },
  )
})

const CUSTOMER = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
]
const JAN = '2024-01-01T00:00:00Z'
const MAR = '2024-03-01T00:00:00Z'
const MAY = '2024-05-01T00:00:00Z'

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

describe.each([null, SENTINEL])(
  'history --as-of, the as-of function and the current view agree (open end %s, real DuckDB)',
  (openEnd) => {
    async function history(): Promise<{ h: ScdHarness; table: TableSpec }> {
      const table = tableSpec({ openEnd, deletes: 'new_record' })
      const h = await ScdHarness.create(table, CUSTOMER)
      harness = h
      await h.load(
        [
          { customer_id: 1, region: 'South' },
          { customer_id: 2, region: 'North' },
          { customer_id: 3, region: 'West' },
        ],
        { extractedAt: JAN },
      )
      await h.load(
        [
          { customer_id: 1, region: 'North' },
          { customer_id: 2, region: 'North' },
        ],
        { extractedAt: MAR },
      )
      await h.load([{ customer_id: 1, region: 'East' }], { extractedAt: MAY, allowMassDelete: true })
      return { h, table }
    }

    it.each([
      ['before the first version', '2023-12-31T23:59:59Z', []],
      [
        'at the first extraction',
        JAN,
        [
          [1, 'South'],
          [2, 'North'],
          [3, 'West'],
        ],
      ],
      [
        'at a change: the new version, not the closed one; a key deleted then is gone',
        MAR,
        [
          [1, 'North'],
          [2, 'North'],
        ],
      ],
      [
        'between changes',
        '2024-04-15T12:00:00Z',
        [
          [1, 'North'],
          [2, 'North'],
        ],
      ],
      ['after the last change', '2030-01-01T00:00:00Z', [[1, 'East']]],
    ])('%s', async (_when, at, expected) => {
      const { h, table } = await history()
      const read = await readHistory(h.warehouse, { table, schema: 'main', asOf: at })
      const fromFunction = await h.query(
        `SELECT * FROM main.dim_customer_as_of(TIMESTAMPTZ '${at}') ORDER BY customer_id, valid_from`,
      )
      expect(read.map((r) => [r.customer_id, r.region])).toEqual(expected)
      expect(fromFunction).toEqual(read)
      if (at.startsWith('2030')) {
        expect(await h.query('SELECT * FROM main.dim_customer_current ORDER BY customer_id')).toEqual(read)
      }
    })
  },
)
