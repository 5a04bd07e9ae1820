import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { ChangeDetectionSpec } from '../../../lib/core/table-spec.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/*
 * change_detection: { version_column } on random snapshot sequences (DuckDB): after every batch the dimension
 * holds what a model of the rule says. Per key, a row whose version grew opens a version (with the same content
 * too); one at the same version and the same content changes nothing; one at the same version with other content
 * is overwritten into the current version (overwrite) or refuses the batch (refuse); a smaller version refuses
 * the batch. A refused batch writes nothing and the next ones go on.
 */

const KEYS = [1, 2, 3]
type Row = { readonly id: number; readonly a: string; readonly rv: number }
/** Per key, its versions in order: [content, version]. */
type Model = Map<number, [string, number][]>

const snapshot = fc.uniqueArray(
  fc.record({
    id: fc.constantFrom(...KEYS),
    a: fc.constantFrom('x', 'y'),
    rv: fc.integer({ min: 1, max: 3 }),
  }),
  { selector: (r) => r.id, minLength: 1, maxLength: KEYS.length },
)

/** The model after `rows`, or undefined when the batch must be refused. */
function applied(
  model: Model,
  rows: readonly Row[],
  choice: ChangeDetectionSpec['onSameVersion'],
): Model | undefined {
  const next: Model = new Map([...model].map(([k, v]) => [k, v.map((x) => [...x] as [string, number])]))
  for (const { id, a, rv } of rows) {
    const versions = next.get(id) ?? []
    const last = versions.at(-1)
    if (last === undefined || rv > last[1]) versions.push([a, rv])
    else if (rv < last[1]) return undefined
    else if (a !== last[0]) {
      if (choice === 'refuse') return undefined
      last[0] = a
    }
    next.set(id, versions)
  }
  return next
}

describe('change_detection: version column properties (DuckDB)', () => {
  for (const choice of ['refuse', 'overwrite'] as const) {
    it(`on_same_version: ${choice}: every batch's outcome and the history follow the rule`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(snapshot, { minLength: 1, maxLength: 5 }), async (batches) => {
          const table = tableSpec({
            key: ['id'],
            changeDetection: { versionColumn: 'rv', onSameVersion: choice },
          })
          const harness = await ScdHarness.create(table, [
            { name: 'id', type: 'BIGINT' },
            { name: 'a', type: 'VARCHAR' },
            { name: 'rv', type: 'BIGINT' },
          ])
          try {
            let model: Model = new Map()
            for (const [i, rows] of batches.entries()) {
              const extractedAt = `2024-02-${String(i + 1).padStart(2, '0')}T00:00:00Z`
              const expected = applied(model, rows, choice)
              const outcome = await harness.load(rows, { extractedAt, mode: 'incremental' }).then(
                () => 'merged',
                (error: Error) => error.message,
              )
              if (expected === undefined) expect(outcome).toMatch(/version column rv/)
              else {
                expect(outcome).toBe('merged')
                model = expected
              }
              const history = await harness.history()
              const held: Model = new Map()
              for (const r of history) {
                const id = Number(r.id)
                held.set(id, [...(held.get(id) ?? []), [String(r.a), Number(r.rv)]])
              }
              expect(held).toEqual(model)
            }
          } finally {
            await harness.dispose()
          }
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 15) },
      )
    }, 120_000)
  }

  it('version column = valid_from, overwrite: the last row sent for a key and time wins, late rows included', async () => {
    const delta = fc.uniqueArray(
      fc.record({
        id: fc.constantFrom(1, 2),
        h: fc.integer({ min: 1, max: 5 }),
        a: fc.constantFrom('x', 'y', 'z'),
      }),
      { selector: (r) => `${r.id}@${r.h}`, minLength: 1, maxLength: 4 },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(delta, { minLength: 1, maxLength: 4 }), async (batches) => {
        const table = tableSpec({
          key: ['id'],
          extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
          validFrom: { kind: 'column', column: 'updated_at' },
          changeDetection: { versionColumn: 'updated_at', onSameVersion: 'overwrite' },
        })
        const harness = await ScdHarness.create(table, [
          { name: 'id', type: 'BIGINT' },
          { name: 'a', type: 'VARCHAR' },
          { name: 'updated_at', type: 'TIMESTAMP' },
        ])
        const at = (h: number) => `2024-01-01T0${h}:00:00Z`
        try {
          const said = new Map<number, Map<number, string>>()
          for (const [i, rows] of batches.entries()) {
            await harness.load(
              rows.map((r) => ({ id: r.id, a: r.a, updated_at: at(r.h) })),
              { extractedAt: `2024-02-0${i + 1}T00:00:00Z`, mode: 'incremental' },
            )
            for (const r of rows) said.set(r.id, new Map(said.get(r.id)).set(r.h, r.a))
          }
          // Per key: its states in time order, a version wherever the content changes.
          const expected: [number, string, number][] = []
          for (const id of [...said.keys()].sort()) {
            let last: string | undefined
            for (const [h, a] of [...said.get(id)!].sort(([x], [y]) => x - y)) {
              if (a !== last) expected.push([id, a, h])
              last = a
            }
          }
          const held = (await harness.history()).map((r) => [
            Number(r.id),
            String(r.a),
            Number(String(r[table.columns.validFrom]).slice(11, 13)),
          ])
          expect(held).toEqual(expected)
        } finally {
          await harness.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 15) },
    )
  }, 120_000)
})
