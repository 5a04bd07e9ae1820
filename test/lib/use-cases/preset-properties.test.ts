import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { DeletePolicy } from '../../../lib/core/table-spec.ts'
import { iso } from '../../support/history-checks.ts'
import {
  CAPTURE_COLUMNS,
  captureRow,
  captureScenarioArb,
  captureTable,
} from '../../support/history-arbitraries.ts'
import { PresetTrio } from '../../support/preset-trio.ts'

const AS_OF = [0, 7, 20, 33, 41].map(iso)

describe.each<DeletePolicy>(['invalidate', 'new_record'])(
  'the dbt and fivetran presets write the same versions as dimsync, their tools way (deletes=%s, real DuckDB)',
  (policy) => {
    it('after every merge of any split and order of late and deleting events', async () => {
      let lateMerges = 0
      await fc.assert(
        fc.asyncProperty(captureScenarioArb, async ({ batches }) => {
          const trio = await PresetTrio.create(captureTable(policy, null), CAPTURE_COLUMNS)
          try {
            const staged = new Map<unknown, string[]>()
            for (const [i, batch] of batches.entries()) {
              let ids = staged.get(batch)
              if (ids === undefined) {
                ids = await trio.stage(batch.map(captureRow), { extractedAt: iso(100 + i) })
                staged.set(batch, ids)
              }
              const results = await trio.merge(ids)
              if ((results[0]!.counts?.lateKeys ?? 0) > 0) lateMerges++
              await trio.expectPresetsAgree(AS_OF)
            }
          } finally {
            await trio.dispose()
          }
        }),
        // Three dimensions per run make shrinking slow: report the first counterexample as found.
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 8), endOnFailure: true },
      )
      expect(lateMerges, 'the late path ran').toBeGreaterThan(0)
    }, 300_000)
  },
)
