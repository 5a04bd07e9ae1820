import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DuckDbAndPostgres } from '../support/duckdb-and-postgres.ts'
import { iso } from '../support/history-checks.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * The mass-delete guard of a snapshot counts the live current keys only up to the most that could still refuse
 * the batch (render-merge.ts, #guardMassDelete): it refuses exactly when the keys a batch deletes by absence exceed
 * `max_delete_share` of the live current keys, and its message names the exact count of both, on DuckDB and on
 * PostgreSQL (real, both), whatever the history before: closed versions and deleted keys (not live) included.
 */
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
]
const SHARES = [0.1, 0.25, 1 / 3, 0.5, 0.75, 1]

let pair: DuckDbAndPostgres
beforeAll(async () => {
  pair = await DuckDbAndPostgres.start()
})
afterAll(async () => {
  await pair?.stop()
})

const scenarioArb = fc
  .record({
    live: fc.integer({ min: 1, max: 12 }),
    deletedBefore: fc.integer({ min: 0, max: 4 }),
    changedBefore: fc.integer({ min: 0, max: 12 }),
    share: fc.constantFrom(...SHARES),
  })
  .chain((s) => fc.record({ scenario: fc.constant(s), gone: fc.integer({ min: 0, max: s.live }) }))

describe('the mass-delete guard on DuckDB and PostgreSQL', () => {
  it('refuses a snapshot exactly when its deletes exceed the share of live current keys, naming both counts', async () => {
    await fc.assert(
      fc.asyncProperty(
        scenarioArb,
        async ({ scenario: { live, deletedBefore, changedBefore, share }, gone }) => {
          const table = tableSpec({ name: 'customers', deletes: 'new_record', maxDeleteShare: share })
          await pair.withDimension(table, COLUMNS, async (dimension) => {
            const keys = Array.from({ length: live + deletedBefore }, (_, i) => i + 1)
            const row = (id: number, region: string) => ({ customer_id: id, region })
            const merged = async (
              rows: { customer_id: number; region: string }[],
              t: number,
              allow = false,
            ) => {
              const outcome = await dimension.merge(await dimension.stage(rows, { extractedAt: iso(t) }), {
                allowMassDelete: allow,
              })
              expect(outcome.postgres, 'the same outcome on PostgreSQL').toEqual(outcome.duckdb)
              return outcome.duckdb
            }
            expect(
              await merged(
                keys.map((k) => row(k, 'South')),
                1,
              ),
            ).toMatchObject({ status: 'merged' })
            // History before: some keys changed (closed versions), the last ones deleted (current but not live).
            const kept = keys.slice(0, live)
            const second = await merged(
              kept.map((k) => row(k, k <= changedBefore ? 'North' : 'South')),
              2,
              true,
            )
            expect(second).toMatchObject({ status: 'merged' })
            const outcome = await merged(
              kept.slice(gone).map((k) => row(k, 'South')),
              3,
            )
            if (gone > share * live) {
              expect(outcome).toMatchObject({
                error: 'MassDeleteRefusedError',
                message: expect.stringContaining(
                  `would delete ${gone} of ${live} current keys (more than the allowed share ${share})`,
                ),
              })
            } else {
              expect(outcome).toMatchObject({ status: 'merged', counts: { deletedKeys: gone } })
            }
          })
        },
      ),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 20) },
    )
  })
})
