import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { FactSpec } from '../../lib/core/fact-spec.ts'
import { ZetaSqlService } from '../support/bigquery-emulator/zetasql-service.ts'
import { FactHarness } from '../support/fact-harness.ts'
import { ordersFact } from '../support/fact-specs.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const CUSTOMER: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
]
const CHANGE: StagedColumn[] = [
  { name: 'op', type: 'VARCHAR' },
  { name: 'seq', type: 'BIGINT' },
  { name: 'order_id', type: 'BIGINT' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'ordered_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'amount', type: 'BIGINT' },
]
const customers = tableSpec()

function ordersFeed(overrides: Partial<FactSpec> = {}): FactSpec {
  return ordersFact({
    source: { type: 'postgres', urlEnv: 'ORDERS_URL', table: 'orders_changes' },
    extract: { mode: 'incremental', cursor: 'seq', lookbackMinutes: 0 },
    changes: { operation: { column: 'op', insert: ['I'], update: ['U'], delete: ['D'] }, sequence: 'seq' },
    ...overrides,
  })
}

const FEB = '2024-02-01T00:00:00Z'
const change = (
  op: string,
  seq: number,
  order_id: number,
  amount: number,
  ordered_at: string | null = FEB,
) => ({
  op,
  seq,
  order_id,
  customer_id: 101,
  ordered_at,
  amount,
})

async function scenario(h: FactHarness) {
  const fact = ordersFeed()
  const stored = async () =>
    (await h.query(`SELECT order_id, amount, customer_sk FROM ${h.t('fact_orders')} ORDER BY order_id`)).map(
      (r) => [Number(r.order_id), Number(r.amount), Number(r.customer_sk)],
    )
  await h.mergeDimension(customers, CUSTOMER, [{ customer_id: 101, name: 'Ana' }], {
    extractedAt: '2024-01-01T00:00:00Z',
  })
  // Changes in any row order: the sequence orders them.
  const first = await h.stageFacts(
    fact,
    CHANGE,
    [
      change('U', 4, 2, 25),
      change('I', 1, 1, 10),
      change('D', 5, 3, 30, null),
      change('I', 2, 2, 20),
      change('I', 3, 3, 30),
    ],
    { extractedAt: '2024-03-01T00:00:00Z' },
  )
  const loaded = await h.loadFacts(fact, first)
  const afterFirst = await stored()
  const again = await h.loadFacts(fact, first)
  const second = await h.stageFacts(
    fact,
    CHANGE,
    [change('D', 6, 1, 10), change('U', 7, 2, 30), change('I', 8, 4, 40), change('D', 9, 9, 0)],
    { extractedAt: '2024-03-02T00:00:00Z' },
  )
  await h.loadFacts(fact, second)
  const afterSecond = await stored()
  const refusal = async (rows: Record<string, unknown>[], spec = fact) => {
    const batch = await h.stageFacts(spec, CHANGE, rows as never, { extractedAt: '2024-03-03T00:00:00Z' })
    try {
      await h.loadFacts(spec, batch)
      return 'loaded'
    } catch (error) {
      return (error as Error).message.replace(batch, '<batch>')
    }
  }
  return {
    reports: [loaded, again].map((r) => [r.status, r.facts]),
    afterFirst,
    afterSecond,
    unknownOperation: await refusal([change('I', 10, 5, 1), change('X', 11, 6, 1)]),
    sameSequence: await refusal([change('I', 12, 7, 1), change('U', 12, 7, 2)]),
    unsequenced: await refusal(
      [change('I', 13, 8, 1), change('U', 14, 8, 2)],
      ordersFeed({
        source: { type: 'file', path: 'orders.csv', format: 'csv', csv: { delimiter: ',', header: true } },
        extract: { mode: 'full' },
        changes: { operation: { column: 'op', insert: ['I'], update: ['U'], delete: ['D'] } },
      }),
    ),
    untouched: await stored(),
  }
}

/**
 * Changes that arrive after a later change of their fact was loaded (a late file of a feed read with
 * `files: new_only`, a re-read): the fact keeps what its latest change said.
 */
async function lateScenario(h: FactHarness) {
  const fact = ordersFeed()
  const stored = async () =>
    (await h.query(`SELECT order_id, amount FROM ${h.t('fact_orders')} ORDER BY order_id`)).map((r) => [
      Number(r.order_id),
      Number(r.amount),
    ])
  await h.mergeDimension(customers, CUSTOMER, [{ customer_id: 101, name: 'Ana' }], {
    extractedAt: '2024-01-01T00:00:00Z',
  })
  let day = 0
  const load = async (rows: ReturnType<typeof change>[]) => {
    day++
    const batch = await h.stageFacts(fact, CHANGE, rows, { extractedAt: `2024-03-0${day}T00:00:00Z` })
    const report = await h.loadFacts(fact, batch)
    return [report.status, report.facts, report.feed]
  }
  const reports = [
    await load([change('I', 1, 1, 10), change('I', 2, 2, 20), change('U', 5, 2, 50), change('I', 3, 3, 30)]),
    await load([change('D', 6, 3, 0, null)]),
    // Late: 2's update at 4 (5 is loaded), 3's update at 4 (deleted at 6), 1's insert at 1 again (re-delivered).
    await load([change('U', 4, 2, 40), change('U', 4, 3, 35), change('I', 1, 1, 10), change('I', 7, 4, 70)]),
  ]
  const loaded = await stored()
  // At the sequence of 1's loaded insert, another amount: one sequence value, two changes.
  const conflicting = await load([change('U', 1, 1, 11), change('I', 8, 5, 80)]).catch(
    (e: unknown) => (e as Error).message,
  )
  return { reports, facts: loaded, conflicting, untouched: await stored() }
}

async function observe<T>(open: () => Promise<FactHarness>, run: (h: FactHarness) => Promise<T>): Promise<T> {
  const h = await open()
  try {
    return await run(h)
  } finally {
    await h.dispose()
  }
}

function expectLateChanges(o: Awaited<ReturnType<typeof lateScenario>>): void {
  // Only 4's insert is newer than what was loaded; the late changes change nothing.
  expect(o.facts).toEqual([
    [1, 10],
    [2, 50],
    [4, 70],
  ])
  // What each batch did: facts stored; changes applied as deletes; changes not newer than their fact's latest
  // (in the batch: 2's insert before its update; loaded: the late updates of 2 and 3, 1's insert again).
  expect(o.reports).toEqual([
    ['loaded', 3, { deletes: 0, superseded: 1 }],
    ['loaded', 0, { deletes: 1, superseded: 0 }],
    ['loaded', 1, { deletes: 0, superseded: 3 }],
  ])
  expect(o.conflicting).toContain(
    'fact orders: batch b0005 has 1 changes at the seq of a change already loaded for their fact that say something else (another operation or other values: one seq, two changes), for example order_id=1 (loaded by batch b0002); nothing was written',
  )
  expect(o.untouched).toEqual(o.facts)
}

function expectChangeFeed(o: Awaited<ReturnType<typeof scenario>>): void {
  expect(o.reports).toEqual([
    ['loaded', 2],
    ['already-applied', undefined],
  ])
  // Inserted 1, 2, 3; 2 updated; 3 deleted (a delete needs no event time).
  expect(o.afterFirst).toEqual([
    [1, 10, 1],
    [2, 25, 1],
  ])
  // 1 deleted, 2 updated again, 4 inserted; the delete of 9, never stored, changes nothing.
  expect(o.afterSecond).toEqual([
    [2, 30, 1],
    [4, 40, 1],
  ])
  expect(o.unknownOperation).toContain(
    'fact orders: batch <batch> has 1 changes whose operation (op) is none of I, U, D, for example X; nothing was written',
  )
  expect(o.sameSequence).toContain(
    'has 1 grain values with two changes at one seq (grain order_id), for example: order_id=7 (2 facts); nothing was written',
  )
  expect(o.unsequenced).toContain(
    'has 1 grain values held by more than one change (give the feed a sequence to order them) (grain order_id)',
  )
  expect(o.untouched).toEqual(o.afterSecond)
}

interface Change {
  readonly op: 'I' | 'U' | 'D'
  readonly seq: number
  readonly orderId: number
  readonly amount: number
}

/** Changes of four facts, each with its own sequence value, in the order a feed's files may arrive. */
const arrivalsArb = fc
  .array(fc.record({ op: fc.constantFrom('I', 'U', 'D'), orderId: fc.integer({ min: 1, max: 4 }) }), {
    minLength: 1,
    maxLength: 14,
  })
  .chain((drawn) =>
    fc.record({
      changes: fc.constant(drawn.map((c, i): Change => ({ ...c, seq: i + 1, amount: 10 * (i + 1) }))),
      order: fc.shuffledSubarray(
        drawn.map((_, i) => i),
        { minLength: drawn.length, maxLength: drawn.length },
      ),
      cuts: fc.array(fc.integer({ min: 1, max: 13 }), { maxLength: 4 }),
    }),
  )

/** The model: each fact as its change of the highest sequence says, gone when that change deleted it. */
function lastChanges(changes: readonly Change[]): number[][] {
  const last = new Map<number, Change>()
  for (const c of changes) if ((last.get(c.orderId)?.seq ?? 0) < c.seq) last.set(c.orderId, c)
  return [...last.values()]
    .filter((c) => c.op !== 'D')
    .map((c) => [c.orderId, c.amount])
    .sort((a, b) => a[0]! - b[0]!)
}

describe('facts from a change feed', () => {
  it('on DuckDB: whatever batches the changes arrive in and in whatever order, the facts are what each one’s last change says (invariant 7)', async () => {
    await fc.assert(
      fc.asyncProperty(arrivalsArb, async ({ changes, order, cuts }) => {
        const h = await FactHarness.duckdb([customers])
        try {
          const fact = ordersFeed()
          await h.mergeDimension(customers, CUSTOMER, [{ customer_id: 101, name: 'Ana' }], {
            extractedAt: '2024-01-01T00:00:00Z',
          })
          const arrived = order.map((i) => changes[i]!)
          const bounds = [...new Set([0, ...cuts.filter((c) => c < arrived.length), arrived.length])].sort(
            (a, b) => a - b,
          )
          for (let b = 1; b < bounds.length; b++) {
            const rows = arrived
              .slice(bounds[b - 1], bounds[b])
              .map((c) => change(c.op, c.seq, c.orderId, c.amount, c.op === 'D' ? null : FEB))
            const batch = await h.stageFacts(fact, CHANGE, rows, {
              extractedAt: `2024-03-01T00:00:0${b}Z`,
            })
            await h.loadFacts(fact, batch)
          }
          const facts = (
            await h.query(`SELECT order_id, amount FROM ${h.t('fact_orders')} ORDER BY order_id`)
          ).map((r) => [Number(r.order_id), Number(r.amount)])
          expect(facts).toEqual(lastChanges(changes))
        } finally {
          await h.dispose()
        }
      }),
      { numRuns: 25 },
    )
  }, 120_000)

  it('on DuckDB: inserts add facts, updates replace them, deletes remove them; bad feeds are refused', async () => {
    expectChangeFeed(await observe(() => FactHarness.duckdb([customers]), scenario))
  })

  it('on DuckDB: a change older than one loaded in an earlier batch (or than a delete) changes nothing', async () => {
    expectLateChanges(await observe(() => FactHarness.duckdb([customers]), lateScenario))
  })

  describe('on the BigQuery emulator', () => {
    let zeta: ZetaSqlService
    beforeAll(async () => {
      zeta = await ZetaSqlService.start()
    })
    afterAll(async () => {
      await zeta?.stop()
    })

    it('gives the same facts and refusals as DuckDB', async () => {
      expectChangeFeed(await observe(() => FactHarness.bigquery(zeta, [customers]), scenario))
    })

    it('keeps a fact’s latest change when an older one arrives late, as DuckDB does', async () => {
      expectLateChanges(await observe(() => FactHarness.bigquery(zeta, [customers]), lateScenario))
    })
  })
})
