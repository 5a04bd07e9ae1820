import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { latestAttempt } from '../../../../lib/adapters/warehouse/bigquery-job-attempts.ts'
import { propertySeed } from '../../../support/property-seed.ts'

describe('latestAttempt (the last of the attempts 1..n that exist)', () => {
  it('finds n in about 2·log2(n) lookups, and undefined when no attempt exists', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 5000 }), async (existing) => {
        const looked: number[] = []
        const found = await latestAttempt(async (attempt) => {
          looked.push(attempt)
          return attempt <= existing ? `job ${attempt}` : undefined
        })
        if (existing === 0) expect(found).toBeUndefined()
        else expect(found).toEqual({ attempt: existing, job: `job ${existing}` })
        expect(looked.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(existing + 2)) + 1)
      }),
      { seed: propertySeed(11), numRuns: 300 },
    )
  })
})
