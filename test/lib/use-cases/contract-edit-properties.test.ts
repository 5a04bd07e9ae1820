import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { mergeBatch } from '../../../lib/use-cases/merge-batch.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/*
 * Random sequences of config edits between random batches (real DuckDB): what is tracked (a list or all but
 * some), keep_first, previous_value and current_value, a source column added and removed, the extract (full, or
 * incremental on one cursor or another), and now and then an unsafe edit (the key, the mode). After every merge:
 * at most one current version per key, no overlapping windows, no version the merge inserted equal in its tracked columns
 * to the version before it, and a batch holding the same rows as the last one merged opens no version whatever
 * the safe edits in between (but a column leaving keep_first: the dimension held the key's first value). Every refused merge leaves the dimension, its ledger and its key record exactly as
 * they were, and only unsafe edits are refused.
 */

const ATTRIBUTES = ['a', 'b'] as const
type Attribute = (typeof ATTRIBUTES)[number]

interface Config {
  readonly key: 'id' | 'id_and_a'
  readonly mode: 'history' | 'mirror'
  readonly tracked: { readonly kind: 'list' | 'all_except'; readonly columns: readonly Attribute[] }
  readonly keepFirst: readonly Attribute[]
  readonly previousValue: readonly Attribute[]
  readonly currentValue: readonly Attribute[]
  readonly extract: 'full' | 'upd' | 'seq'
}

interface Row {
  readonly id: number
  readonly a: string
  readonly b: number
  readonly c: string | null
  readonly upd: number
  readonly seq: number
}

/** A batch: its rows, and whether the source still sends column c. */
interface Batch {
  readonly rows: readonly Row[]
  readonly withC: boolean
}

type Step = { readonly edit: Partial<Config> } | { readonly batch: Batch | 'same' }

const subset = fc.subarray([...ATTRIBUTES])
const editArb: fc.Arbitrary<Partial<Config>> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      tracked: fc.record({ kind: fc.constantFrom('list' as const, 'all_except' as const), columns: subset }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ keepFirst: fc.subarray(['b'] as Attribute[]) }) },
  { weight: 2, arbitrary: fc.record({ previousValue: subset, currentValue: subset }) },
  {
    weight: 3,
    arbitrary: fc.record({ extract: fc.constantFrom('full' as const, 'upd' as const, 'seq' as const) }),
  },
  { weight: 1, arbitrary: fc.record({ key: fc.constantFrom('id' as const, 'id_and_a' as const) }) },
  { weight: 1, arbitrary: fc.record({ mode: fc.constantFrom('history' as const, 'mirror' as const) }) },
)
const rowArb = (id: number): fc.Arbitrary<Row> =>
  fc.record({
    id: fc.constant(id),
    a: fc.constantFrom('x', 'y'),
    b: fc.constantFrom(1, 2),
    c: fc.constantFrom('p', 'q', null),
    upd: fc.constantFrom(1, 2),
    seq: fc.constantFrom(1, 2),
  })
const batchArb: fc.Arbitrary<Batch> = fc.record({
  rows: fc.subarray([1, 2, 3], { minLength: 1 }).chain((ids) => fc.tuple(...ids.map(rowArb))),
  withC: fc.boolean(),
})
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: editArb.map((edit) => ({ edit })) },
  { weight: 3, arbitrary: batchArb.map((batch) => ({ batch })) },
  { weight: 2, arbitrary: fc.constant({ batch: 'same' as const }) },
)
const scenarioArb = fc.record({ first: batchArb, steps: fc.array(stepArb, { minLength: 4, maxLength: 12 }) })

const START: Config = {
  key: 'id',
  mode: 'history',
  tracked: { kind: 'all_except', columns: [] },
  keepFirst: [],
  previousValue: [],
  currentValue: [],
  extract: 'full',
}

function specOf(config: Config): TableSpec {
  return tableSpec({
    name: 'items',
    target: 'dim_item',
    key: config.key === 'id' ? ['id'] : ['id', 'a'],
    mode: config.mode,
    tracked: { kind: config.tracked.kind, columns: [...config.tracked.columns] },
    policies: {
      keepFirst: [...config.keepFirst],
      previousValue: [...config.previousValue],
      currentValue: [...config.currentValue],
    },
    extract:
      config.extract === 'full'
        ? { mode: 'full' }
        : { mode: 'incremental', cursor: config.extract, lookbackMinutes: 0 },
    deletes: config.extract === 'full' ? 'invalidate' : 'ignore',
    maxDeleteShare: 1,
  })
}

/**
 * Edits a merge may apply (safe), against ones it must refuse: a tracked or keep_first column that is the key,
 * and the key or the mode changed from what the dimension was built with.
 */
function mustRefuse(config: Config, built: Config): boolean {
  const keyColumns = config.key === 'id' ? [] : ['a']
  const trackedKey =
    config.tracked.kind === 'list' && config.tracked.columns.some((c) => keyColumns.includes(c))
  const policyKey = [...config.keepFirst, ...config.previousValue, ...config.currentValue].some((c) =>
    keyColumns.includes(c),
  )
  return config.key !== built.key || config.mode !== built.mode || trackedKey || policyKey
}

const COLUMNS = (withC: boolean): StagedColumn[] => [
  { name: 'id', type: 'BIGINT' },
  { name: 'a', type: 'VARCHAR' },
  { name: 'b', type: 'BIGINT' },
  ...(withC ? [{ name: 'c', type: 'VARCHAR' }] : []),
  { name: 'upd', type: 'BIGINT' },
  { name: 'seq', type: 'BIGINT' },
]

const stagedRows = (batch: Batch) =>
  batch.rows.map((r) => {
    const { c, ...rest } = r
    return batch.withC ? { ...rest, c } : rest
  })

describe('config edits between batches (real DuckDB)', () => {
  it('keep history straight: safe edits open no version of their own, refused ones change nothing', async () => {
    let refusals = 0
    let appliedEdits = 0
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ first, steps }) => {
        const h = await ScdHarness.create(specOf(START), COLUMNS(true))
        let clock = Date.parse('2030-01-01T00:00:00Z')
        let day = 0
        const merge = async (config: Config, batch: Batch) => {
          day++
          const id = await h.stage(stagedRows(batch), {
            extractedAt: new Date(Date.UTC(2024, 0, day)).toISOString(),
            columns: COLUMNS(batch.withC),
            mode: config.extract === 'full' ? 'full' : 'incremental',
          })
          clock += 1000
          return {
            id,
            result: await mergeBatch(
              { warehouse: h.warehouse, staging: h.batches },
              {
                table: specOf(config),
                schema: 'main',
                batchId: id,
                now: new Date(clock),
                allowMassDelete: true,
              },
            ),
          }
        }
        try {
          let accepted = START
          let config = START
          let last = first
          await merge(config, first)
          for (const step of steps) {
            if ('edit' in step) {
              config = { ...config, ...step.edit }
              continue
            }
            const batch = step.batch === 'same' ? last : step.batch
            const before = await everything(h)
            let outcome: Awaited<ReturnType<typeof merge>> | undefined
            let error: unknown
            try {
              outcome = await merge(config, batch)
            } catch (e) {
              error = e
            }
            if (outcome === undefined) {
              refusals++
              expect(mustRefuse(config, START), `refused: ${String(error)}`).toBe(true)
              expect(await everything(h)).toEqual(before)
              config = accepted
              continue
            }
            expect(mustRefuse(config, START), 'an unsafe edit was applied').toBe(false)
            if (JSON.stringify(config) !== JSON.stringify(accepted)) appliedEdits++
            // A column leaving keep_first holds the key's first value where the source sends its latest.
            const leftKeepFirst = accepted.keepFirst.some((c) => !config.keepFirst.includes(c))
            if (step.batch === 'same' && !leftKeepFirst)
              expect(outcome.result.counts?.insertedVersions, 'a version opened by the edit alone').toBe(0)
            await expectHistoryStraight(h, outcome.id)
            accepted = config
            last = batch
          }
        } finally {
          await h.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 25) },
    )
    expect(refusals).toBeGreaterThan(0)
    expect(appliedEdits).toBeGreaterThan(0)
  }, 120_000)
})

/** Every row of the dimension, its ledger and its key record, as text, in a fixed order. */
async function everything(h: ScdHarness): Promise<string[]> {
  const tables = ['dim_item', '_dimsync_batches', 'dim_item_dimsync_keys']
  const out: string[] = []
  for (const name of tables) {
    if ((await h.warehouse.describeTable({ schema: 'main', name })) === undefined) continue
    const rows = await h.query(`SELECT * FROM main."${name}"`)
    out.push(...rows.map((r) => `${name} ${JSON.stringify(r)}`).sort())
  }
  return out
}

/** The invariants after merge `batchId`, whose tracked columns are those of the contract recorded last. */
async function expectHistoryStraight(h: ScdHarness, batchId: string): Promise<void> {
  const [contract] = await h.query(
    `SELECT contract FROM main._dimsync_batches WHERE contract IS NOT NULL ORDER BY applied_at DESC LIMIT 1`,
  )
  const tracked = (JSON.parse(String(contract!.contract)) as { tracked: string[] }).tracked
  const rows = await h.query(`SELECT * FROM main.dim_item ORDER BY id, valid_from, dimsync_sk`)
  const byKey = new Map<unknown, typeof rows>()
  for (const r of rows) byKey.set(r.id, [...(byKey.get(r.id) ?? []), r])
  for (const [key, versions] of byKey) {
    expect(
      versions.filter((v) => v.is_current).length,
      `key ${String(key)}: current versions`,
    ).toBeLessThanOrEqual(1)
    for (const [i, v] of versions.entries()) {
      const next = versions[i + 1]
      if (next === undefined) continue
      expect(v.valid_to, `key ${String(key)}: version ${String(v.dimsync_sk)} is closed`).not.toBeNull()
      expect(String(v.valid_from) < String(v.valid_to)).toBe(true)
      expect(String(v.valid_to) <= String(next.valid_from), `key ${String(key)}: windows overlap`).toBe(true)
      if (next.dimsync_batch_id !== batchId || v.valid_to !== next.valid_from || v.is_deleted) continue
      expect(
        tracked.some((c) => JSON.stringify(v[c] ?? null) !== JSON.stringify(next[c] ?? null)),
        `key ${String(key)}: version ${String(next.dimsync_sk)} equals the one before it in ${tracked.join(', ')}`,
      ).toBe(true)
    }
  }
}
