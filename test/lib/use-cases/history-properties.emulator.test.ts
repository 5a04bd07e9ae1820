import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DeletePolicy } from '../../../lib/core/table-spec.ts'
import { BothWarehouses, type PairedDimension } from '../../support/both-warehouses.ts'
import {
  CAPTURE_COLUMNS,
  captureModel,
  captureRow,
  captureScenarioArb,
  captureTable,
  FEED_COLUMNS,
  feedRow,
  feedScenarioArb,
  feedTable,
} from '../../support/history-arbitraries.ts'
import { actual, assertInvariants, iso, SENTINEL, withOpenEndAsNull } from '../../support/history-checks.ts'
import { expectedHistory, feedCaptures, type ModelVersion } from '../../support/history-model.ts'
import type { VersionRow } from '../../support/scd-harness.ts'
import type { Value } from '../../support/staged-batches.ts'
import { propertySeed } from '../../support/property-seed.ts'

/**
 * The merge and change-feed properties on both warehouses: a few runs with a fixed seed (the reference
 * implementation behind the emulator is slow; the DuckDB property tests run many more), each batch merged into
 * DuckDB and the BigQuery emulator. Both must report the same outcome for every merge and hold the same rows
 * at the end, and DuckDB's history must be the model's, so BigQuery's is too.
 */
const RUNS = Number(process.env.DIMSYNC_EMULATOR_PROPERTY_RUNS ?? 4)
const SEED = propertySeed(20_261_130)

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  if (both === undefined) return
  const { duckdb, bigquery } = both.tally
  const engine = await both.engineCpuMs()
  console.info(
    `history properties on both warehouses: ${bigquery.calls} merges; DuckDB ${(duckdb.ms / Math.max(duckdb.calls, 1)).toFixed(0)} ms a merge, ` +
      `BigQuery emulator ${(bigquery.ms / Math.max(bigquery.calls, 1)).toFixed(0)} ms a merge, ` +
      `${(bigquery.statements / Math.max(bigquery.merged, 1)).toFixed(1)} script statements a merge, reference engine CPU ` +
      `(reads included) ${engine === undefined ? '?' : (engine / Math.max(bigquery.calls, 1)).toFixed(0)} ms a merge`,
  )
  await both.stop()
})

/** Merges the batches in order on both warehouses (a batch met again is merged again under its id). */
async function mergeAll<E>(
  dimension: PairedDimension,
  batches: readonly (readonly E[])[],
  row: (event: E) => Record<string, Value>,
): Promise<void> {
  const staged = new Map<readonly E[], string>()
  for (const [i, batch] of batches.entries()) {
    let batchId = staged.get(batch)
    if (batchId === undefined) {
      batchId = await dimension.stage(batch.map(row), { extractedAt: iso(100 + i) })
      staged.set(batch, batchId)
    }
    const outcome = await dimension.merge(batchId)
    expect('error' in outcome.duckdb ? outcome.duckdb : undefined, `batch ${i + 1}`).toBeUndefined()
    expect(outcome.bigquery, `batch ${i + 1}: the same outcome on BigQuery`).toEqual(outcome.duckdb)
  }
}

/** DuckDB's history against the model, then BigQuery's rows (as-of reads included) against DuckDB's. */
async function expectModelOnBoth(dimension: PairedDimension, expected: ModelVersion[]): Promise<void> {
  const stored = (await dimension.warehouses.duckdb.query(
    `SELECT * FROM main.dim_customer ORDER BY customer_id, valid_from`,
  )) as VersionRow[]
  const rows = withOpenEndAsNull(stored)
  assertInvariants(rows)
  expect(actual(rows)).toEqual(expected)
  const held = await dimension.holdings([iso(3), iso(7), iso(20)])
  expect(held.bigquery, 'the same rows on BigQuery').toEqual(held.duckdb)
}

describe.each<[DeletePolicy, string | null]>([
  ['invalidate', null],
  ['new_record', SENTINEL],
])('merge properties on DuckDB and the BigQuery emulator, deletes=%s, open end %s', (policy, openEnd) => {
  it('any split and order of batches gives the model history on both', async () => {
    await fc.assert(
      fc.asyncProperty(captureScenarioArb, async ({ events, batches }) => {
        const dimension = await both.open(captureTable(policy, openEnd), CAPTURE_COLUMNS)
        try {
          await mergeAll(dimension, batches, captureRow)
          await expectModelOnBoth(dimension, expectedHistory(captureModel(events), policy))
        } finally {
          await dimension.close()
        }
      }),
      { numRuns: RUNS, seed: SEED },
    )
  }, 600_000)
})

describe.each<[DeletePolicy, boolean, string | null]>([
  ['new_record', true, SENTINEL],
  ['invalidate', false, null],
])(
  'change feed properties on DuckDB and the BigQuery emulator, deletes=%s, sequenced %s, open end %s',
  (policy, sequenced, openEnd) => {
    it('any split and order of batches, re-deliveries included, gives the history of the events in time order on both', async () => {
      await fc.assert(
        fc.asyncProperty(feedScenarioArb(sequenced), async ({ events, batches }) => {
          const dimension = await both.open(feedTable(policy, sequenced, openEnd), FEED_COLUMNS)
          try {
            await mergeAll(dimension, batches, feedRow)
            await expectModelOnBoth(dimension, expectedHistory(feedCaptures(events, policy), policy))
          } finally {
            await dimension.close()
          }
        }),
        { numRuns: RUNS, seed: SEED },
      )
    }, 600_000)
  },
)
