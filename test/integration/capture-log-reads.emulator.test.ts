import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dimensionObjects } from '../../lib/sql/render-ddl.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import {
  BothWarehouses,
  type MergeOutcome,
  type Paired,
  type PairedDimension,
} from '../support/both-warehouses.ts'
import { CAPTURE_COLUMNS, captureTable } from '../support/history-arbitraries.ts'
import type { Value } from '../support/staged-batches.ts'

/*
 * Every merge reads the capture log only from its batch's earliest event time on (on BigQuery a
 * script variable, so the log's monthly partitions before it are pruned). Captures spread over several months: a
 * late event older than the key's newest capture is still slotted in, a re-delivered event next to a newer one is
 * still dropped, and an event that contradicts an old capture is still refused, with the same rows on DuckDB and
 * the BigQuery emulator.
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const row = (key: number, at: string, region: string): Record<string, Value> => ({
  customer_id: key,
  region,
  tier: 'gold',
  changed_at: `2030-${at}T00:00:00.000Z`,
  deleted: false,
})

function expectMerged(outcome: Paired<MergeOutcome>, what: string): void {
  for (const side of ['duckdb', 'bigquery'] as const)
    expect('error' in outcome[side] ? outcome[side] : undefined, `${what} on ${side}`).toBeUndefined()
}

/** Both warehouses hold these versions, as [key, region, valid_from's day]. */
async function expectVersions(
  dimension: PairedDimension,
  table: TableSpec,
  expected: readonly (readonly [number, string, string])[],
): Promise<void> {
  const versions = await dimension.read(
    (d, schema) =>
      `SELECT customer_id, region, ${d.castToString('valid_from')} AS valid_from FROM ${d.table(
        dimensionObjects(table, schema).dimension,
      )} ORDER BY customer_id, valid_from`,
  )
  for (const side of ['duckdb', 'bigquery'] as const)
    expect(
      versions[side].map((v) => [Number(v.customer_id), v.region, String(v.valid_from).slice(0, 10)]),
      side,
    ).toEqual(expected)
}

describe('the capture log read from the batch’s earliest event time on, on DuckDB and the BigQuery emulator', () => {
  it('late, re-delivered and conflicting events are still found when the log spans months', async () => {
    const table = captureTable('invalidate', null)
    const dimension = await both.open(table, CAPTURE_COLUMNS)
    try {
      const load = (rows: Record<string, Value>[], extractedAt: string) =>
        dimension.load(rows, { extractedAt: `2030-${extractedAt}T00:00:00.000Z`, mode: 'incremental' })
      // Key 1 captured in January, March and May: three monthly partitions of the log on BigQuery.
      expectMerged(
        await load([row(1, '01-10', 'north'), row(1, '03-10', 'south'), row(1, '05-10', 'east')], '05-11'),
        'the first batch',
      )
      // April is before key 1's newest capture (May) and after the batch's earliest event: key 1 is late.
      const late = await load([row(1, '04-10', 'west'), row(2, '06-01', 'north')], '06-02')
      expectMerged(late, 'the late batch')
      // The March capture again, next to a newer event: the re-delivered one is dropped, the new one kept.
      expectMerged(await load([row(1, '03-10', 'south'), row(2, '07-01', 'south')], '07-02'), 're-delivery')
      // No events: the earliest event time is NULL, and the reads bounded by it find nothing.
      const empty = await load([], '07-03')
      for (const side of ['duckdb', 'bigquery'] as const)
        expect(empty[side], side).toMatchObject({ status: 'merged', counts: { events: 0, lateKeys: 0 } })
      await expectVersions(dimension, table, [
        [1, 'north', '2030-01-10'],
        [1, 'south', '2030-03-10'],
        [1, 'west', '2030-04-10'],
        [1, 'east', '2030-05-10'],
        [2, 'north', '2030-06-01'],
        [2, 'south', '2030-07-01'],
      ])
      expect((await dimension.holdings()).bigquery).toEqual((await dimension.holdings()).duckdb)

      // January said north: saying west now, next to a newer event, contradicts the oldest capture.
      const conflict = await load([row(1, '01-10', 'west'), row(2, '08-01', 'east')], '08-02')
      for (const side of ['duckdb', 'bigquery'] as const) {
        const outcome = conflict[side]
        expect('error' in outcome ? outcome.message : outcome, side).toMatch(
          /key customer_id=1 already has a different state captured at 2030-01-10 .*nothing was written/,
        )
      }
    } finally {
      await dimension.close()
    }
  }, 120_000)

  it('a source column named like a script variable of the merge changes nothing', async () => {
    // BigQuery resolves a bare name to a column before a script variable: a column named like the variable that
    // holds the batch's earliest event time would take its place, and the late event below would be dropped.
    const shadowing = 'dimsync_events_from'
    const table = captureTable('invalidate', null)
    const dimension = await both.open(table, [...CAPTURE_COLUMNS, { name: shadowing, type: 'TIMESTAMPTZ' }])
    try {
      // Later than every event: read as the batch's earliest event time, it would hide every capture.
      const shadowed = (key: number, at: string, region: string) => ({
        ...row(key, at, region),
        [shadowing]: '2099-01-01T00:00:00.000Z',
      })
      const load = (rows: Record<string, Value>[], extractedAt: string) =>
        dimension.load(rows, { extractedAt: `2030-${extractedAt}T00:00:00.000Z`, mode: 'incremental' })
      expectMerged(await load([shadowed(1, '01-10', 'north'), shadowed(1, '05-10', 'east')], '05-11'), 'load')
      const late = await load([shadowed(1, '03-10', 'west'), shadowed(2, '06-01', 'north')], '06-02')
      for (const side of ['duckdb', 'bigquery'] as const)
        expect(late[side], side).toMatchObject({ status: 'merged', counts: { lateKeys: 1 } })
      await expectVersions(dimension, table, [
        [1, 'north', '2030-01-10'],
        [1, 'west', '2030-03-10'],
        [1, 'east', '2030-05-10'],
        [2, 'north', '2030-06-01'],
      ])
    } finally {
      await dimension.close()
    }
  }, 120_000)

  it('a new capture log on BigQuery is partitioned by month of captured_at', async () => {
    const table = captureTable('invalidate', null)
    const dimension = await both.open(table, CAPTURE_COLUMNS)
    try {
      expectMerged(
        await dimension.load([row(1, '01-10', 'north')], { extractedAt: '2030-01-11T00:00:00.000Z' }),
        'load',
      )
      const log = dimensionObjects(table, dimension.schemaOf('bigquery')).captures!
      const { apiEndpoint } = dimension.emulator.clientOptions()
      const response = await fetch(
        `${apiEndpoint}/bigquery/v2/projects/acme-dw/datasets/${log.schema}/tables/${log.name}`,
      )
      expect(((await response.json()) as { timePartitioning?: unknown }).timePartitioning).toEqual({
        type: 'MONTH',
        field: 'captured_at',
      })
    } finally {
      await dimension.close()
    }
  }, 120_000)
})
