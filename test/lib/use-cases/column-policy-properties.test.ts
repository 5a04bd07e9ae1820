import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { DeletePolicy, TableSpec } from '../../../lib/core/table-spec.ts'
import { iso } from '../../support/history-checks.ts'
import {
  CAPTURE_COLUMNS,
  captureRow,
  captureScenarioArb,
  captureTable,
} from '../../support/history-arbitraries.ts'
import { ScdHarness, type VersionRow } from '../../support/scd-harness.ts'

/*
 * Types 0, 3 and 6 and `removed_columns: keep_last` give a batch's new versions their values from the key's
 * current version before the batch, and read the key's history only under a guard (render-carried-values.ts):
 * on BigQuery only then. The harness fails a merge whose guarded statement changes a row while its guard is
 * false (test/support/guard-check.ts), so every random scenario below checks that the values set without reading
 * history are the ones history gives; the policies' definitions are then checked on the whole history.
 */

const POLICIES = { keepFirst: ['tier'], previousValue: ['region'], currentValue: ['region'] }

/** Per key, versions in valid_from order: the values each policy defines for all of them. */
function expectPoliciesHold(rows: readonly VersionRow[]): void {
  const byKey = new Map<unknown, VersionRow[]>()
  for (const r of rows) byKey.set(r.customer_id, [...(byKey.get(r.customer_id) ?? []), r])
  for (const versions of byKey.values()) {
    const newest = versions.at(-1)!
    const before = versions.findLast((v) => v.region !== newest.region)
    for (const v of versions)
      expect([v.tier, v.current_region, v.previous_region], `version ${v.dimsync_sk}`).toEqual([
        versions[0]!.tier,
        newest.region,
        before?.region ?? null,
      ])
  }
}

describe.each<DeletePolicy>(['invalidate', 'new_record', 'ignore'])(
  'column policies and removed columns, deletes=%s (real DuckDB, guards checked)',
  (deletes) => {
    it('late, re-delivered and several events per key: values without history equal those from history', async () => {
      let guardedSkipped = 0
      await fc.assert(
        fc.asyncProperty(captureScenarioArb, async ({ batches }) => {
          const table: TableSpec = { ...captureTable(deletes, null), policies: POLICIES }
          const h = await ScdHarness.create(table, CAPTURE_COLUMNS)
          try {
            const ids = new Map<(typeof batches)[number], string>()
            for (const [i, batch] of batches.entries()) {
              const id =
                ids.get(batch) ?? (await h.stage(batch.map(captureRow), { extractedAt: iso(100 + i) }))
              ids.set(batch, id)
              const result = await h.merge(id)
              if ((result.counts?.lateKeys ?? 0) === 0) guardedSkipped++
              expectPoliciesHold(await h.history())
            }
          } finally {
            await h.dispose()
          }
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 15) },
      )
      expect(guardedSkipped).toBeGreaterThan(0)
    }, 300_000)

    it('a removed column keeps its last value on new versions, late events included', async () => {
      const legacy = [...CAPTURE_COLUMNS, { name: 'legacy', type: 'VARCHAR' }]
      await fc.assert(
        fc.asyncProperty(captureScenarioArb, async ({ batches }) => {
          const table: TableSpec = { ...captureTable(deletes, null), removedColumns: 'keep_last' }
          const h = await ScdHarness.create(table, legacy)
          try {
            // The first batch still sends the column; the source drops it afterwards.
            const [first, ...rest] = batches
            const withLegacy = first!.map((e) => ({ ...captureRow(e), legacy: `L${e.key}@${e.t}` }))
            await h.merge(await h.stage(withLegacy, { extractedAt: iso(100) }))
            // (Events of the first batch sent again without the column would be refused as a changed capture.)
            for (const [i, batch] of rest.filter((b) => b !== first).entries()) {
              const id = await h.stage(batch.map(captureRow), {
                extractedAt: iso(101 + i),
                columns: CAPTURE_COLUMNS,
              })
              await h.merge(id)
              const rows = await h.history()
              // A version written after the column was removed carries a value the first batch sent, if any.
              const sent = new Set(withLegacy.map((r) => r.legacy))
              for (const r of rows) if (r.legacy !== null) expect(sent).toContain(r.legacy)
            }
          } finally {
            await h.dispose()
          }
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 15) },
      )
    }, 300_000)
  },
)
