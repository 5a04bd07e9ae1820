import fc from 'fast-check'
import type { DeletePolicy, TableSpec } from '../../lib/core/table-spec.ts'
import { iso } from './history-checks.ts'
import type { FeedEvent, ModelEvent } from './history-model.ts'
import type { Value } from './staged-batches.ts'
import { tableSpec } from './table-spec-builder.ts'

/**
 * The inputs of the history property tests (on DuckDB, and a few runs on the BigQuery emulator), built only from
 * fast-check's generators so that a failing seed replays: dim_customer keyed on customer_id, tracked region and
 * tier, times in whole hours (`iso`).
 */

/**
 * `items` split into at most `parts` non-empty batches (each item in exactly one, keeping their order inside a
 * batch), the batches in any order.
 */
export function batchesArb<T>(items: readonly T[], parts = 4): fc.Arbitrary<T[][]> {
  return fc
    .array(fc.integer({ min: 0, max: parts - 1 }), { minLength: items.length, maxLength: items.length })
    .chain((assignment) => {
      const batches = Array.from({ length: parts }, (): T[] => [])
      items.forEach((item, i) => batches[assignment[i]!]!.push(item))
      const nonEmpty = batches.filter((b) => b.length > 0)
      return fc.shuffledSubarray(nonEmpty, { minLength: nonEmpty.length, maxLength: nonEmpty.length })
    })
}

// ---- captures of a table whose valid_from is a change-time column (deltas, soft deletes) ----

export const CAPTURE_COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'tier', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'deleted', type: 'BOOLEAN' },
]

export interface Capture {
  readonly key: number
  readonly t: number
  readonly deleted: boolean
  readonly region: string | null
  readonly tier: string | null
}

/** Captures of a few keys: distinct times per key, values from a tiny domain so equal states recur. */
export const capturesArb: fc.Arbitrary<Capture[]> = fc
  .array(
    fc.record({
      key: fc.integer({ min: 1, max: 4 }),
      t: fc.integer({ min: 0, max: 40 }),
      deleted: fc.integer({ min: 0, max: 9 }).map((n) => n < 3),
      region: fc.constantFrom('South', 'North', '', null),
      tier: fc.constantFrom('gold', 'NULL', null),
    }),
    { minLength: 1, maxLength: 24 },
  )
  .map((raw) => {
    const seen = new Set<string>()
    return raw.filter((e) => !seen.has(`${e.key}@${e.t}`) && seen.add(`${e.key}@${e.t}`))
  })

/** Captures split into batches (each in exactly one), the batches in any order; one batch merged again. */
export const captureScenarioArb = capturesArb.chain((events) =>
  fc
    .tuple(batchesArb(events), fc.nat())
    .map(([order, pick]) => ({ events, batches: [...order, order[pick % order.length]!] })),
)

export function captureTable(deletes: DeletePolicy, openEnd: string | null): TableSpec {
  return tableSpec({
    extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
    validFrom: { kind: 'column', column: 'changed_at' },
    softDeleteColumn: 'deleted',
    deletes,
    openEnd,
  })
}

export const captureRow = (e: Capture): Record<string, Value> => ({
  customer_id: e.key,
  region: e.region,
  tier: e.tier,
  changed_at: iso(e.t),
  deleted: e.deleted,
})

export function captureModel(events: readonly Capture[]): ModelEvent[] {
  return events.map((e) => ({
    key: e.key,
    t: e.t,
    attrs: e.deleted ? undefined : { region: e.region, tier: e.tier },
  }))
}

// ---- change feeds ----

export const FEED_COLUMNS = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'tier', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'seq', type: 'INTEGER' },
]

/**
 * Change feeds of a few keys: several events per key, deletes, values from a tiny domain so equal states recur;
 * with a sequence, several events of a key share a time. Each (key, time[, sequence]) occurs once.
 */
export function feedArb(sequenced: boolean): fc.Arbitrary<FeedEvent[]> {
  return fc
    .array(
      fc.record({
        key: fc.integer({ min: 1, max: 3 }),
        t: fc.integer({ min: 0, max: 12 }),
        seq: fc.integer({ min: 0, max: sequenced ? 2 : 0 }),
        op: fc.constantFrom<FeedEvent['op']>('I', 'U', 'U', 'D'),
        region: fc.constantFrom('South', 'North', null),
        tier: fc.constantFrom('gold', null),
      }),
      { minLength: 1, maxLength: 20 },
    )
    .map((raw) => {
      const seen = new Set<string>()
      return raw
        .filter((e) => !seen.has(`${e.key}@${e.t}@${e.seq}`) && seen.add(`${e.key}@${e.t}@${e.seq}`))
        .map((e): FeedEvent => ({
          key: e.key,
          t: e.t,
          ...(sequenced ? { seq: e.seq } : {}),
          op: e.op,
          attrs: { region: e.region, tier: e.tier },
        }))
    })
}

/**
 * The feed split into batches (several events of a key may share one), the batches in any order; then one
 * batch merged again under its id, and the events of the first two batches re-delivered as a new batch.
 */
export function feedScenarioArb(sequenced: boolean) {
  return feedArb(sequenced).chain((events) =>
    fc.tuple(batchesArb(events), fc.nat()).map(([order, pick]) => {
      const redelivered = [...order[0]!, ...(order[1] ?? [])]
      return { events, batches: [...order, order[pick % order.length]!, redelivered] }
    }),
  )
}

export function feedTable(deletes: DeletePolicy, sequenced: boolean, openEnd: string | null): TableSpec {
  return tableSpec({
    extract: { mode: 'full' },
    validFrom: { kind: 'column', column: 'changed_at' },
    changes: {
      operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] },
      ...(sequenced ? { sequence: 'seq' } : {}),
    },
    deletes,
    openEnd,
  })
}

export const feedRow = (e: FeedEvent): Record<string, Value> => ({
  Op: e.op,
  customer_id: e.key,
  region: e.attrs.region ?? null,
  tier: e.attrs.tier ?? null,
  changed_at: iso(e.t),
  seq: e.seq ?? 0,
})
