import { afterEach, describe, expect, it } from 'vitest'
import type { DuckDbWarehouse } from '../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { TEMP, WORK } from '../../../lib/sql/merge-sql.ts'
import { probeBefore } from '../../support/guard-check.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/**
 * A change-time table loaded by full extracts stages every key with its last change time, most of them long
 * unchanged. Every read of the capture log is bounded below by the batch's earliest event (on BigQuery: the
 * partitions of that month on), so that bound must be the earliest event that changes something, not the oldest
 * change time in the snapshot, or the reads grow with the depth of history (docs/bigquery.md, what a merge costs).
 * Real DuckDB: the bound is read when the first statement that uses it runs.
 */

const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP WITH TIME ZONE' },
]
const day = (n: number) => new Date(Date.UTC(2024, 0, n)).toISOString()

/** The earliest event time of each merge, when its statement `label` (the first to read the log) runs. */
function recordEarliestEvent(warehouse: DuckDbWarehouse, label: string): (string | null)[] {
  const seen: (string | null)[] = []
  probeBefore(warehouse, label, async (tx) => {
    const [row] = await tx.query(`SELECT CAST(MIN("${WORK.t}") AS VARCHAR) AS earliest FROM "${TEMP.events}"`)
    seen.push(row?.earliest === null || row?.earliest === undefined ? null : String(row.earliest))
  })
  return seen
}

let h: ScdHarness | undefined
afterEach(async () => {
  await h?.dispose()
  h = undefined
})

describe('change times, full extracts: the capture log is read from the earliest changed event', () => {
  it('unchanged keys with old change times do not lower the bound; the history is as before', async () => {
    const table = tableSpec({
      deletes: 'invalidate',
      validFrom: { kind: 'column', column: 'changed_at' },
      extract: { mode: 'full' },
    })
    h = await ScdHarness.create(table, COLUMNS)
    const earliest = recordEarliestEvent(h.warehouse, 'check conflicting captures')
    const row = (customer_id: number, region: string, changed: number) => ({
      customer_id,
      region,
      changed_at: day(changed),
    })
    const load = async (rows: ReturnType<typeof row>[], at: number) =>
      expect((await h!.load(rows, { extractedAt: day(at), allowMassDelete: true })).status).toBe('merged')
    await load([row(101, 'South', 1), row(102, 'North', 5), row(103, 'East', 6)], 10)
    // Ana unchanged since day 1, Bruno moved on day 15, Chloé gone.
    await load([row(101, 'South', 1), row(102, 'West', 15)], 20)
    expect(earliest.at(-1), 'the bound is the earliest changed event').toBe('2024-01-15 00:00:00+00')
    // A snapshot that changes nothing reads nothing before its extraction.
    await load([row(101, 'South', 1), row(102, 'West', 15)], 21)
    expect(earliest.at(-1)).toBeNull()
    // Ana moved on day 8: a change after her last capture, read from day 8 on.
    await load([row(101, 'North', 8), row(102, 'West', 15)], 22)
    expect(earliest.at(-1)).toBe('2024-01-08 00:00:00+00')
    const history = await h.query(
      'SELECT customer_id, region, CAST(valid_from AS VARCHAR) AS f, CAST(valid_to AS VARCHAR) AS t FROM main.dim_customer ORDER BY customer_id, valid_from',
    )
    expect(
      history.map((r) => `${String(r.customer_id)} ${String(r.region)} ${String(r.f)} ${String(r.t)}`),
    ).toEqual([
      '101 South 2024-01-01 00:00:00+00 2024-01-08 00:00:00+00',
      '101 North 2024-01-08 00:00:00+00 null',
      '102 North 2024-01-05 00:00:00+00 2024-01-15 00:00:00+00',
      '102 West 2024-01-15 00:00:00+00 null',
      '103 East 2024-01-06 00:00:00+00 2024-01-20 00:00:00+00',
    ])
  })
})
