import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { dimensionObjects } from '../../lib/sql/render-ddl.ts'
import { mergeBatch } from '../../lib/use-cases/merge-batch.ts'
import { BothWarehouses, type Paired, type PairedDimension } from '../support/both-warehouses.ts'
import { FEED_COLUMNS, feedRow, feedScenarioArb, feedTable } from '../support/history-arbitraries.ts'
import { iso } from '../support/history-checks.ts'
import type { Value } from '../support/staged-batches.ts'
import { propertySeed } from '../support/property-seed.ts'

/**
 * Bitemporal history on both warehouses: the same batches merged with the same clock into DuckDB and the
 * BigQuery emulator (ZetaSQL's reference implementation runs every statement) give the same rows, and the
 * as-of table function answers "valid at B as known at S" the same way on both.
 */
const SYSTEM_TIME = { systemFrom: 'system_from', systemTo: 'system_to' }
const SIDES = ['duckdb', 'bigquery'] as const

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

/** Stages `rows` once and merges them into both warehouses with the clock at `at` (the system time). */
async function mergeAt(dimension: PairedDimension, rows: Record<string, Value>[], at: string) {
  const batchId = await dimension.stage(rows, { extractedAt: at })
  for (const side of SIDES)
    await mergeBatch(
      { warehouse: dimension.warehouses[side], staging: both.batches },
      { table: dimension.table, schema: dimension.schemaOf(side), batchId, now: new Date(at) },
    )
}

/** `<target>_as_of(ts, known_at)` on each warehouse (known_at undefined: as known now), as [key, city]. */
async function asOf(
  dimension: PairedDimension,
  attribute: string,
  business: string,
  known?: string,
): Promise<Paired<unknown[][]>> {
  const rows = await dimension.read((d: SqlDialect, schema: string) => {
    const fn = d.table(dimensionObjects(dimension.table, schema).asOfFunction)
    const knownAt = known === undefined ? `CAST(NULL AS ${d.type('timestamp')})` : d.timestampLiteral(known)
    return `SELECT customer_id, ${d.quoteIdentifier(attribute)} AS v FROM ${fn}(${d.timestampLiteral(business)}, ${knownAt}) ORDER BY customer_id`
  })
  const shape = (list: readonly Record<string, unknown>[]) => list.map((r) => [Number(r.customer_id), r.v])
  return { duckdb: shape(rows.duckdb), bigquery: shape(rows.bigquery) }
}

describe('bitemporal history on DuckDB and the BigQuery emulator', () => {
  it('the worked example: a change effective 1 January arrives on 5 January and is corrected on 8 January', async () => {
    const table: TableSpec = {
      ...feedTable('invalidate', true, null),
      systemTime: SYSTEM_TIME,
    }
    const dimension = await both.open(table, FEED_COLUMNS)
    try {
      const event = (region: string, changedAt: string, seq: number) => ({
        Op: seq === 0 ? 'I' : 'U',
        customer_id: 1,
        region,
        tier: 'gold',
        changed_at: changedAt,
        seq,
      })
      await mergeAt(dimension, [event('Paris', '2023-12-01 00:00:00', 0)], '2023-12-01T00:00:00Z')
      await mergeAt(dimension, [event('Lyon', '2024-01-01 00:00:00', 1)], '2024-01-05T00:00:00Z')
      await mergeAt(dimension, [event('Lille', '2024-01-01 00:00:00', 2)], '2024-01-08T00:00:00Z')
      const onBoth = (value: unknown[][]) => ({ duckdb: value, bigquery: value })
      const jan3 = '2024-01-03T00:00:00Z'
      expect(await asOf(dimension, 'region', jan3, jan3)).toEqual(onBoth([[1, 'Paris']]))
      expect(await asOf(dimension, 'region', jan3, '2024-01-06T00:00:00Z')).toEqual(onBoth([[1, 'Lyon']]))
      expect(await asOf(dimension, 'region', jan3)).toEqual(onBoth([[1, 'Lille']]))
      const held = await dimension.holdings()
      expect(held.duckdb.dimension).toHaveLength(4)
      expect(held.bigquery).toEqual(held.duckdb)
    } finally {
      await dimension.close()
    }
  }, 300_000)

  it('random change feeds (late events, deletes, re-deliveries): the same rows and the same answers as known at each merge', async () => {
    await fc.assert(
      fc.asyncProperty(feedScenarioArb(true), async ({ batches }) => {
        const table: TableSpec = { ...feedTable('new_record', true, null), systemTime: SYSTEM_TIME }
        const dimension = await both.open(table, FEED_COLUMNS)
        try {
          const merges: string[] = []
          for (const [i, batch] of batches.entries()) {
            const at = new Date(Date.UTC(2030, 0, 1) + (i + 1) * 60_000).toISOString()
            await mergeAt(dimension, batch.map(feedRow), at)
            merges.push(at)
          }
          const held = await dimension.holdings()
          expect(held.bigquery, 'the same rows on BigQuery').toEqual(held.duckdb)
          for (const known of [merges[0], merges[Math.floor(merges.length / 2)], undefined])
            for (const business of [iso(2), iso(9)]) {
              const answer = await asOf(dimension, 'region', business, known)
              expect(answer.bigquery, `as of ${business} known at ${known ?? 'now'}`).toEqual(answer.duckdb)
            }
        } finally {
          await dimension.close()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_EMULATOR_PROPERTY_RUNS ?? 2), seed: propertySeed(20_261_130) },
    )
  }, 600_000)
})
