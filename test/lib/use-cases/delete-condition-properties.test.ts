import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import type { DeleteLiteral, DeletePolicy, TableSpec } from '../../../lib/core/table-spec.ts'
import { actual, assertInvariants, iso } from '../../support/history-checks.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import type { Value } from '../../support/staged-batches.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/**
 * `deletes: { when: "<column> = <value>" }` against what it is documented to mean, on real DuckDB, for random
 * batches: in a full extract a row meeting the condition is a delete of its key, as its absence would be; in a
 * delta it is a delete of its key, as a soft delete flag set on it would be. Each batch goes to two dimensions, one
 * with the condition and one given the same meaning the older way (the row left out of the snapshot, or the flag
 * set), and both hold the same history after every batch. The condition's column is read, never stored, so it may
 * carry a metadata column's name.
 */

interface SourceRow {
  readonly key: number
  readonly region: string | null
  /** The soft-delete column's value: the condition is `is_deleted = 'yes'`, so only 'yes' deletes. */
  readonly status: 'yes' | 'no' | 'YES' | null
}

const CONDITION: DeleteLiteral = { kind: 'text', value: 'yes' }
const meetsCondition = (r: SourceRow) => r.status === 'yes'

const rowsArb = fc.uniqueArray(
  fc.record({
    key: fc.integer({ min: 1, max: 5 }),
    region: fc.constantFrom('South', 'North', null),
    status: fc.constantFrom<SourceRow['status']>('yes', 'no', 'YES', null),
  }),
  { selector: (r) => r.key, maxLength: 5 },
)

const CONDITION_COLUMNS: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  // Named like the dimension's own metadata column: read for the condition, not stored.
  { name: 'is_deleted', type: 'VARCHAR' },
]

function conditionTable(mode: 'full' | 'incremental', deletes: DeletePolicy): TableSpec {
  return tableSpec({
    extract:
      mode === 'full' ? { mode: 'full' } : { mode: 'incremental', cursor: 'customer_id', lookbackMinutes: 0 },
    deletes,
    softDeleteColumn: 'is_deleted',
    softDeleteEquals: CONDITION,
  })
}

describe.each<['full' | 'incremental', DeletePolicy]>([
  ['full', 'invalidate'],
  ['full', 'new_record'],
  ['incremental', 'invalidate'],
  ['incremental', 'new_record'],
])('deletes: { when } on %s extracts, policy %s (real DuckDB)', (mode, deletes) => {
  it('a row meeting the condition is a delete of its key, as the older way of saying it is', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(rowsArb, { minLength: 1, maxLength: 6 }), async (batches) => {
        const withCondition = await ScdHarness.create(conditionTable(mode, deletes), CONDITION_COLUMNS)
        const reference =
          mode === 'full'
            ? await ScdHarness.create(
                tableSpec({ extract: { mode: 'full' }, deletes }),
                CONDITION_COLUMNS.slice(0, 2),
              )
            : await ScdHarness.create(
                tableSpec({
                  extract: { mode: 'incremental', cursor: 'customer_id', lookbackMinutes: 0 },
                  deletes,
                  softDeleteColumn: 'flag',
                }),
                [...CONDITION_COLUMNS.slice(0, 2), { name: 'flag', type: 'BOOLEAN' }],
              )
        try {
          for (const [i, rows] of batches.entries()) {
            const extractedAt = iso(i + 1)
            const conditionRows = rows.map((r): Record<string, Value> => ({
              customer_id: r.key,
              region: r.region,
              is_deleted: r.status,
            }))
            const referenceRows =
              mode === 'full'
                ? rows
                    .filter((r) => !meetsCondition(r))
                    .map((r) => ({ customer_id: r.key, region: r.region }))
                : rows.map((r) => ({ customer_id: r.key, region: r.region, flag: meetsCondition(r) }))
            const options = { extractedAt, allowMassDelete: true }
            const a = await withCondition.load(conditionRows, options)
            const b = await reference.load(referenceRows, options)
            // A flagged row is read (an event) where an absent one is not: the versions and deletes agree.
            const effect = (c: typeof a.counts) => [c?.insertedVersions, c?.closedVersions, c?.deletedKeys]
            expect(effect(a.counts), `the counts of batch ${i + 1}`).toEqual(effect(b.counts))
            const stored = await withCondition.history()
            assertInvariants(stored)
            expect(actual(stored), `after batch ${i + 1}`).toEqual(actual(await reference.history()))
            for (const version of stored)
              expect(typeof version.is_deleted, 'is_deleted is the metadata flag, not the source text').toBe(
                'boolean',
              )
          }
        } finally {
          await withCondition.dispose()
          await reference.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 10) },
    )
  }, 300_000)
})
