import { afterEach, describe, expect, it } from 'vitest'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

/**
 * A float's two zeros are one value (docs/limits.md): DuckDB stages and stores the zeros of a column chunk as the
 * first one written (duckdb#25781), so a row's zero follows the rows beside it. A change between them, in a float
 * column or inside a list of floats, opens no version; any other change does.
 */
describe('a float column and a list of floats holding 0 and -0 (real DuckDB)', () => {
  it('a change between the zeros opens no version', async () => {
    const h = (harness = await ScdHarness.create(tableSpec({}), [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'score', type: 'DOUBLE' },
      { name: 'scores', type: 'DOUBLE[]' },
      { name: 'weights', type: 'FLOAT[]' },
    ]))
    const first = await h.load(
      [
        { customer_id: 1, score: 0, scores: [0, 1.5], weights: [0, 0.25] },
        { customer_id: 2, score: -0, scores: [-0, 2], weights: [-0, null] },
      ],
      { extractedAt: '2024-01-01T00:00:00Z' },
    )
    expect(first.counts).toMatchObject({ insertedVersions: 2 })
    const flipped = await h.load(
      [
        { customer_id: 1, score: -0, scores: [-0, 1.5], weights: [-0, 0.25] },
        { customer_id: 2, score: 0, scores: [0, 2], weights: [0, null] },
      ],
      { extractedAt: '2024-02-01T00:00:00Z' },
    )
    expect(flipped.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0, unchangedEvents: 2 })
    const changed = await h.load(
      [
        { customer_id: 1, score: -0, scores: [-0, 1.5, 0], weights: [-0, 0.25] },
        { customer_id: 2, score: 0, scores: [0, 2], weights: [0, 0.5] },
      ],
      { extractedAt: '2024-03-01T00:00:00Z' },
    )
    expect(changed.counts).toMatchObject({ insertedVersions: 2, closedVersions: 2 })
  })
})
