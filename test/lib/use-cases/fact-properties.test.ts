import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import type { FactSpec } from '../../../lib/core/fact-spec.ts'
import type { DeletePolicy, TableSpec } from '../../../lib/core/table-spec.ts'
import {
  CAPTURE_COLUMNS,
  captureModel,
  captureRow,
  captureScenarioArb,
  captureTable,
} from '../../support/history-arbitraries.ts'
import { assertInvariants, hourOf, iso, SENTINEL, withOpenEndAsNull } from '../../support/history-checks.ts'
import type { VersionRow } from '../../support/scd-harness.ts'
import { expectedHistory } from '../../support/history-model.ts'
import { repointFacts } from '../../../lib/use-cases/repoint-facts.ts'
import { FactHarness } from '../../support/fact-harness.ts'
import { customerReference, ordersFact } from '../../support/fact-specs.ts'

const ORDER: StagedColumn[] = [
  { name: 'order_id', type: 'BIGINT' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'ordered_at', type: 'TIMESTAMP' },
  { name: 'amount', type: 'BIGINT' },
]
const UNKNOWN = -1

const orders = ordersFact({
  references: [customerReference({ unknownMemberKey: UNKNOWN, keepNaturalKey: true })],
})

interface Order {
  readonly key: number | null
  /** Hours after the base time, in half hours: whole hours fall exactly on version boundaries. */
  readonly t: number
}

/** Orders of known keys (1-4), a key never seen (5) and no key, at times before, inside and after history. */
const ordersArb: fc.Arbitrary<Order[]> = fc.array(
  fc.record({
    key: fc.constantFrom(1, 2, 3, 4, 5, null),
    t: fc.integer({ min: -2, max: 90 }).map((n) => n / 2),
  }),
  { minLength: 1, maxLength: 30 },
)

/** Every fact points at the sk of the live model version of its key valid at its time, else at the unknown member. */
async function expectFactsAtTheirVersions(
  h: FactHarness,
  events: Parameters<typeof captureModel>[0],
  facts: readonly Order[],
  policy: DeletePolicy,
): Promise<void> {
  const versions = await h.query(
    `SELECT dimsync_sk, customer_id, CAST(valid_from AS VARCHAR) AS valid_from FROM ${h.t('dim_customer')} WHERE customer_id IS NOT NULL`,
  )
  const skOf = new Map(
    versions.map((v) => [`${v.customer_id}@${Date.parse(`${v.valid_from}Z`)}`, v.dimsync_sk]),
  )
  const model = expectedHistory(captureModel(events), policy)
  const expected = facts.map((f, i) => {
    const v = model.find(
      (m) => m.key === f.key && !m.deleted && m.from <= f.t && (m.to === null || f.t < m.to),
    )
    const sk = v === undefined ? UNKNOWN : skOf.get(`${v.key}@${Date.parse(iso(v.from))}`)
    return [i + 1, sk]
  })
  const stored = await h.query(`SELECT order_id, customer_sk FROM ${h.t('fact_orders')} ORDER BY order_id`)
  expect(stored.map((r) => [r.order_id, r.customer_sk])).toEqual(expected)
  expect(expected.every(([, sk]) => sk !== undefined)).toBe(true)
}

const orderRows = (facts: readonly Order[]) =>
  facts.map((f, i) => ({ order_id: i + 1, customer_id: f.key, ordered_at: iso(f.t), amount: i }))

const WAREHOUSES: readonly [string, (dimensions: TableSpec[]) => Promise<FactHarness>][] = [
  ['real DuckDB', (dimensions) => FactHarness.duckdb(dimensions)],
  ['real PostgreSQL', (dimensions) => FactHarness.postgres(dimensions)],
]

describe.each(
  WAREHOUSES.flatMap(([warehouse, open]) =>
    (
      [
        ['invalidate', null],
        ['new_record', SENTINEL],
      ] as const
    ).map(([policy, openEnd]) => ({ warehouse, open, policy: policy as DeletePolicy, openEnd })),
  ),
)('fact properties, deletes=$policy, open end $openEnd ($warehouse)', ({ open, policy, openEnd }) => {
  it('every fact points at the live version of its key whose window contains its event time, else at the unknown member', async () => {
    await fc.assert(
      fc.asyncProperty(captureScenarioArb, ordersArb, async ({ events, batches }, facts) => {
        const customers = captureTable(policy, openEnd)
        const h = await open([customers])
        try {
          // Dimension batches in any order (late events included), one merged twice.
          for (const [i, batch] of batches.entries())
            await h.mergeDimension(customers, CAPTURE_COLUMNS, batch.map(captureRow), {
              extractedAt: iso(100 + i),
              mode: 'incremental',
            })
          const rows = facts.map((f, i) => ({
            order_id: i + 1,
            customer_id: f.key,
            ordered_at: iso(f.t),
            amount: i,
          }))
          await h.loadFacts(orders, await h.stageFacts(orders, ORDER, rows, { extractedAt: iso(200) }))

          await expectFactsAtTheirVersions(h, events, facts, policy)
        } finally {
          await h.dispose()
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 5), endOnFailure: true },
    )
    // Each run merges several batches into a fresh DuckDB: about a second each on a quiet machine.
  }, 240_000)

  it('facts loaded between dimension batches (late events after them) point right once re-pointed', async () => {
    let repointed = 0
    await fc.assert(
      fc.asyncProperty(captureScenarioArb, ordersArb, async ({ events, batches }, facts) => {
        const customers = captureTable(policy, openEnd)
        const h = await open([customers])
        try {
          // Facts in slices, each loaded after one dimension batch: later (late) batches change what they meet.
          const rows = orderRows(facts)
          const slice = Math.ceil(rows.length / batches.length)
          for (const [i, batch] of batches.entries()) {
            await h.mergeDimension(customers, CAPTURE_COLUMNS, batch.map(captureRow), {
              extractedAt: iso(100 + i),
              mode: 'incremental',
            })
            const part = rows.slice(i * slice, (i + 1) * slice)
            if (part.length > 0)
              await h.loadFacts(
                orders,
                await h.stageFacts(orders, ORDER, part, { extractedAt: iso(150 + i) }),
              )
          }
          const moved = await repointFacts(
            { warehouse: h.warehouse },
            { fact: orders, dimensions: [customers], schema: h.schema },
          )
          repointed += moved[0]!.facts
          await expectFactsAtTheirVersions(h, events, facts, policy)
        } finally {
          await h.dispose()
        }
      }),
      {
        numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 5),
        endOnFailure: true,
        examples: [[SPLITTING.scenario, SPLITTING.facts]],
      },
    )
    // Re-pointing must actually have been needed in some runs.
    expect(repointed).toBeGreaterThan(0)
  }, 240_000)

  it("with inferred members: a fact points at its key's version containing its time, an inferred member or the unknown member", async () => {
    let completed = 0
    await fc.assert(
      fc.asyncProperty(captureScenarioArb, ordersArb, async ({ events, batches }, facts) => {
        const customers = captureTable(policy, openEnd)
        const h = await open([customers])
        const placeholders = new Set<number>()
        // Invariant 5 (docs/invariants.md) with inferred members: the keys merges and fact loads give out are unique, each above every
        // key given out before, and covered by the dimension's key record (the unknown member's key is ≤ 0).
        const given = new Set<number>()
        const expectKeysGivenOutOnce = async (what: string) => {
          const sks = (
            await h.query(`SELECT dimsync_sk FROM ${h.t('dim_customer')} WHERE dimsync_sk > 0`)
          ).map((r) => Number(r.dimsync_sk))
          expect(new Set(sks).size, `${what}: unique keys`).toBe(sks.length)
          const highest = Math.max(0, ...given)
          expect(
            sks.filter((sk) => !given.has(sk) && sk <= highest),
            `${what}: new keys above every earlier key`,
          ).toEqual([])
          const [record] = await h.query(
            `SELECT highest_surrogate_key AS k FROM ${h.t('dim_customer_dimsync_keys')}`,
          )
          expect(Number(record?.k), `${what}: the key record`).toBeGreaterThanOrEqual(Math.max(0, ...sks))
          for (const sk of sks) given.add(sk)
        }
        try {
          // Half the facts after the first dimension batch, the rest in slices after the others: keys not
          // extracted yet get placeholders, which later batches complete (or late events move around).
          const rows = orderRows(facts)
          const half = Math.ceil(rows.length / 2)
          const slice = Math.ceil((rows.length - half) / Math.max(1, batches.length - 1))
          const partAfter = (i: number) =>
            i === 0 ? rows.slice(0, half) : rows.slice(half + (i - 1) * slice, half + i * slice)
          for (const [i, batch] of batches.entries()) {
            await h.mergeDimension(customers, CAPTURE_COLUMNS, batch.map(captureRow), {
              extractedAt: iso(100 + i),
              mode: 'incremental',
            })
            await expectKeysGivenOutOnce(`dimension batch ${i + 1}`)
            const part = partAfter(i)
            if (part.length > 0) {
              await h.loadFacts(
                inferring,
                await h.stageFacts(inferring, ORDER, part, { extractedAt: iso(150 + i) }),
              )
              for (const r of await h.query(
                `SELECT dimsync_sk FROM ${h.t('dim_customer')} WHERE is_inferred`,
              ))
                placeholders.add(Number(r.dimsync_sk))
              await expectKeysGivenOutOnce(`facts after dimension batch ${i + 1}`)
            }
          }
          await repointFacts(
            { warehouse: h.warehouse },
            { fact: inferring, dimensions: [customers], schema: h.schema },
          )
          completed += await expectFactsAtVersionsOrInferred(h, events, facts, policy, placeholders)
        } finally {
          await h.dispose()
        }
      }),
      {
        numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 5),
        endOnFailure: true,
        examples: [[COMPLETING.scenario, COMPLETING.facts]],
      },
    )
    // Placeholders must actually have been completed in some runs.
    expect(completed).toBeGreaterThan(0)
  }, 240_000)
})

/**
 * Always run first: orders of hours 15 and 16 are loaded while key 1 has one version from hour 0; the late
 * event of hour 10 (last batch) splits that window, so both must be re-pointed.
 */
const SPLITTING = (() => {
  const first = { key: 1, t: 0, deleted: false, region: 'South', tier: 'gold' }
  const next = { key: 1, t: 20, deleted: false, region: 'North', tier: 'gold' }
  const late = { key: 1, t: 10, deleted: false, region: '', tier: null }
  return {
    scenario: { events: [first, next, late], batches: [[first], [next], [late], [next]] },
    facts: [
      { key: 1, t: 15 },
      { key: 1, t: 16 },
      { key: 1, t: 17 },
      { key: 1, t: 18 },
    ],
  }
})()

/** Always run first: key 2's order (hour 15) comes before key 2 is extracted (hour 20), so a placeholder is completed. */
const COMPLETING = (() => {
  const first = { key: 1, t: 10, deleted: false, region: 'South', tier: 'gold' }
  const late = { key: 2, t: 20, deleted: false, region: 'North', tier: null }
  return {
    scenario: { events: [first, late], batches: [[first], [late], [first]] },
    facts: [
      { key: 2, t: 15 },
      { key: 2, t: 25 },
    ],
  }
})()

const inferring: FactSpec = {
  ...orders,
  references: [{ ...orders.references[0]!, inferred: true }],
}

/**
 * With inferred members (`placeholders`: the surrogate keys fact loads created as placeholders): every fact
 * points at the live version of its key valid at its time (as stored), else at the unknown member, and a key
 * never extracted has a placeholder holding all its facts. The history keeps invariants 1-5 (docs/invariants.md) and,
 * outside placeholders still inferred, reads at every half hour as its capture log says: the events, plus for a
 * completed placeholder the state it was completed with, from the start it kept (so the facts loaded early stay
 * in it); for keys that never had a placeholder logged, exactly the model. Returns how many placeholders were
 * completed.
 */
async function expectFactsAtVersionsOrInferred(
  h: FactHarness,
  events: Parameters<typeof captureModel>[0],
  facts: readonly Order[],
  policy: DeletePolicy,
  placeholders: ReadonlySet<number>,
): Promise<number> {
  const rows = withOpenEndAsNull(
    (await h.query(
      `SELECT dimsync_sk, customer_id, region, tier, CAST(valid_from AS VARCHAR) AS valid_from, ` +
        `CAST(valid_to AS VARCHAR) AS valid_to, is_current, is_deleted, is_inferred ` +
        `FROM ${h.t('dim_customer')} WHERE customer_id IS NOT NULL ORDER BY customer_id, valid_from`,
    )) as VersionRow[],
  )
  assertInvariants(rows)
  const versions = rows.map((r) => ({
    sk: Number(r.dimsync_sk),
    key: Number(r.customer_id),
    from: hourOf(String(r.valid_from)),
    to: r.valid_to === null ? null : hourOf(String(r.valid_to)),
    deleted: Boolean(r.is_deleted),
    inferred: r.is_inferred === true,
    attrs: { region: r.region as string | null, tier: r.tier as string | null },
  }))
  const liveAt = <V extends { key: number; from: number; to: number | null; deleted: boolean }>(
    list: readonly V[],
    key: number | null,
    t: number,
  ) => list.find((v) => v.key === key && !v.deleted && v.from <= t && (v.to === null || t < v.to))
  const model = expectedHistory(captureModel(events), policy)
  const expected = facts.map((f, i) => {
    const v = liveAt(versions, f.key, f.t)
    if (f.key !== null && !events.some((e) => e.key === f.key))
      expect(v?.inferred, `order ${i + 1} of never-extracted key ${f.key} at its placeholder`).toBe(true)
    return [i + 1, v === undefined ? UNKNOWN : v.sk]
  })
  const stored = await h.query(`SELECT order_id, customer_sk FROM ${h.t('fact_orders')} ORDER BY order_id`)
  expect(stored.map((r) => [r.order_id, r.customer_sk])).toEqual(expected)

  // The capture log holds the events and, for placeholders, the state a completion gave them from their start
  // (or their own, while a placeholder): history must be what that log says, as for any captured state.
  const states = new Map(
    (await h.query(`SELECT DISTINCT dimsync_row_hash AS hash, region, tier FROM ${h.t('dim_customer')}`)).map(
      (r) => [String(r.hash), { region: r.region as string | null, tier: r.tier as string | null }],
    ),
  )
  const captured = new Set(events.map((e) => `${e.key}@${e.t}`))
  const synthetic = (
    await h.query(
      `SELECT customer_id, CAST(captured_at AS VARCHAR) AS t, state_hash FROM ${h.t('dim_customer_dimsync_captures')} WHERE NOT is_deleted`,
    )
  )
    .map((c) => ({ key: Number(c.customer_id), t: hourOf(String(c.t)), hash: String(c.state_hash) }))
    .filter((c) => !captured.has(`${c.key}@${c.t}`))
  for (const c of synthetic)
    expect(states.has(c.hash), `state of the logged placeholder of key ${c.key} at ${c.t}`).toBe(true)
  const logged = expectedHistory(
    [...captureModel(events), ...synthetic.map((c) => ({ key: c.key, t: c.t, attrs: states.get(c.hash)! }))],
    policy,
  )
  for (let t = -2; t <= 46; t += 0.5)
    for (const key of [1, 2, 3, 4, 5]) {
      const got = liveAt(versions, key, t)
      if (got?.inferred) continue
      expect(got?.attrs, `key ${key} at hour ${t}: as the capture log says`).toEqual(
        liveAt(logged, key, t)?.attrs,
      )
      // Without placeholders the log is the events: history is the model's.
      if (synthetic.every((c) => c.key !== key))
        expect(got?.attrs, `key ${key} at hour ${t}: as the model`).toEqual(liveAt(model, key, t)?.attrs)
    }
  return versions.filter((v) => placeholders.has(v.sk) && !v.inferred).length
}
