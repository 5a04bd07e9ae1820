import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DeletePolicy, PartialUpdateSpec } from '../../../lib/core/table-spec.ts'
import { DuckDbAndPostgres, type PostgresPairedDimension } from '../../support/duckdb-and-postgres.ts'
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

/**
 * The merge and change-feed properties on DuckDB and PostgreSQL, both real: every batch merged into both, the
 * same outcome for every merge, the same rows at the end (dimension, current view, as-of function, capture log,
 * retired versions, key record), and DuckDB's history is the model's, so PostgreSQL's is too.
 */
const RUNS = Number(process.env.DIMSYNC_POSTGRES_PROPERTY_RUNS ?? 15)

let pair: DuckDbAndPostgres
beforeAll(async () => {
  pair = await DuckDbAndPostgres.start()
})
afterAll(async () => {
  await pair?.stop()
})

/** Merges the batches in order on both warehouses (a batch met again is merged again under its id). */
async function mergeAll<E>(
  dimension: PostgresPairedDimension,
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
    expect(outcome.postgres, `batch ${i + 1}: the same outcome on PostgreSQL`).toEqual(outcome.duckdb)
  }
}

/** DuckDB's history against the model, then PostgreSQL's rows (as-of reads included) against DuckDB's. */
async function expectModelOnBoth(
  dimension: PostgresPairedDimension,
  expected: ModelVersion[],
): Promise<void> {
  const stored = (await dimension.warehouses.duckdb.query(
    `SELECT * FROM main.dim_customer ORDER BY customer_id, valid_from`,
  )) as VersionRow[]
  const rows = withOpenEndAsNull(stored)
  assertInvariants(rows)
  expect(actual(rows)).toEqual(expected)
  const held = await dimension.holdings([iso(3), iso(7), iso(20)])
  expect(held.postgres, 'the same rows on PostgreSQL').toEqual(held.duckdb)
}

// The configurations run side by side: each property run has its own DuckDB and PostgreSQL schema.
describe.concurrent.each<[DeletePolicy, string | null]>([
  ['invalidate', null],
  ['new_record', SENTINEL],
])('merge properties on DuckDB and PostgreSQL, deletes=%s, open end %s', (policy, openEnd) => {
  it('any split and order of batches gives the model history on both', async () => {
    await fc.assert(
      fc.asyncProperty(captureScenarioArb, async ({ events, batches }) => {
        const dimension = await pair.open(captureTable(policy, openEnd), CAPTURE_COLUMNS)
        try {
          await mergeAll(dimension, batches, captureRow)
          await expectModelOnBoth(dimension, expectedHistory(captureModel(events), policy))
        } finally {
          await dimension.close()
        }
      }),
      { numRuns: RUNS },
    )
  }, 600_000)
})

describe.concurrent.each<[DeletePolicy, boolean, string | null]>([
  ['new_record', true, SENTINEL],
  ['invalidate', false, null],
])(
  'change feed properties on DuckDB and PostgreSQL, deletes=%s, sequenced %s, open end %s',
  (policy, sequenced, openEnd) => {
    it('any split and order of batches, re-deliveries included, gives the history of the events in time order on both', async () => {
      await fc.assert(
        fc.asyncProperty(feedScenarioArb(sequenced), async ({ events, batches }) => {
          const dimension = await pair.open(feedTable(policy, sequenced, openEnd), FEED_COLUMNS)
          try {
            await mergeAll(dimension, batches, feedRow)
            await expectModelOnBoth(dimension, expectedHistory(feedCaptures(events, policy), policy))
          } finally {
            await dimension.close()
          }
        }),
        { numRuns: RUNS },
      )
    }, 600_000)
  },
)

describe.concurrent.each<[string, PartialUpdateSpec, DeletePolicy, boolean]>([
  ['ignore_null_updates: all', { ignoreNulls: { kind: 'all' } }, 'invalidate', false],
  [
    'ignore_null_updates: all, columns_to_update: [tier], sequenced',
    { ignoreNulls: { kind: 'all' }, columnsToUpdate: ['tier'] },
    'invalidate',
    true,
  ],
  ['ignore_null_updates: all, deletes: ignore', { ignoreNulls: { kind: 'all' } }, 'ignore', false],
])('partial updates on DuckDB and PostgreSQL, %s', (_name, partialUpdates, policy, sequenced) => {
  it('any split and order of batches, late rows and re-deliveries included, fold to the same rows on both', async () => {
    await fc.assert(
      fc.asyncProperty(feedScenarioArb(sequenced), async ({ batches }) => {
        const table = { ...feedTable(policy, sequenced, null), partialUpdates }
        const dimension = await pair.open(table, FEED_COLUMNS)
        try {
          await mergeAll(dimension, batches, feedRow)
          const held = await dimension.holdings([iso(3), iso(7), iso(20)])
          expect(held.postgres, 'the same rows on PostgreSQL').toEqual(held.duckdb)
        } finally {
          await dimension.close()
        }
      }),
      { numRuns: RUNS },
    )
  }, 600_000)
})
