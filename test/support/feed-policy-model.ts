import fc from 'fast-check'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { DeletePolicy, TableSpec } from '../../lib/core/table-spec.ts'
import { batchesArb } from './history-arbitraries.ts'
import { hourOf, iso } from './history-checks.ts'
import { expectedHistory, type FeedEvent, type ModelEvent } from './history-model.ts'
import type { Value } from './staged-batches.ts'
import { tableSpec } from './table-spec-builder.ts'

/**
 * The column and table policies on change feeds, as the documentation states them, for the property tests: a
 * feed of dim_customer (key customer_id) with attributes region and n, where region is tracked and n is type 1
 * (history), both are folded as partial updates (`ignore_null_updates`), or both are a mirror's values.
 *
 * - Versions: the history of the feed's captures over the tracked columns (history-model.ts): per key and change
 *   time the last event in sequence order; a mirror keeps only each live key's current row.
 * - Type 1 values (every value of a mirror): on every version of a key, those of the key's newest event that is
 *   not a delete, by change time, the sequence breaking ties only within one change time.
 * - Partial updates: each event is first folded, in change time then sequence order, into its key's state (a
 *   NULL keeps the state's value); a delete ends the state, except under `deletes: ignore`, where deletes mean
 *   nothing.
 */

export type FeedPolicyKind = 'type1' | 'partial' | 'mirror'

export interface FeedPolicyCase {
  readonly kind: FeedPolicyKind
  readonly deletes: DeletePolicy
  readonly sequenced: boolean
}

export const FEED_POLICY_COLUMNS: StagedColumn[] = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'n', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'seq', type: 'INTEGER' },
]

export function feedPolicyTable({ kind, deletes, sequenced }: FeedPolicyCase): TableSpec {
  return tableSpec({
    extract: { mode: 'full' },
    validFrom: { kind: 'column', column: 'changed_at' },
    changes: {
      operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] },
      ...(sequenced ? { sequence: 'seq' } : {}),
    },
    deletes,
    ...(kind === 'mirror'
      ? { mode: 'mirror', tracked: { kind: 'list', columns: [] } }
      : { tracked: { kind: 'list', columns: ['region'] } }),
    ...(kind === 'partial'
      ? { partialUpdates: { ignoreNulls: { kind: 'list', columns: ['region', 'n'] } } }
      : {}),
  })
}

export const feedPolicyRow = (e: FeedEvent): Record<string, Value> => ({
  Op: e.op,
  customer_id: e.key,
  region: e.attrs.region ?? null,
  n: e.attrs.n ?? null,
  changed_at: iso(e.t),
  seq: e.seq ?? 0,
})

/**
 * Feeds of two keys: several events per key and per batch, deletes, values from a tiny domain (so equal states
 * recur, and partial rows hold NULLs); with a sequence, events of a key share a change time (corrections). Each
 * (key, time, sequence) occurs once.
 */
export function feedPolicyEventsArb(sequenced: boolean): fc.Arbitrary<FeedEvent[]> {
  return fc
    .array(
      fc.record({
        key: fc.integer({ min: 1, max: 2 }),
        t: fc.integer({ min: 0, max: 8 }),
        seq: fc.integer({ min: 0, max: sequenced ? 1 : 0 }),
        op: fc.constantFrom<FeedEvent['op']>('I', 'U', 'U', 'D'),
        region: fc.constantFrom('South', 'North', null),
        n: fc.constantFrom('1', '2', null),
      }),
      { minLength: 1, maxLength: 10 },
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
          attrs: { region: e.region, n: e.n },
        }))
    })
}

/**
 * The feed split into batches merged in any order (late events, corrections at merged times), the last batch
 * carrying the events of the first again beside its own (old deletes and updates re-delivered with new rows),
 * then one batch merged again under its id.
 */
export function feedPolicyScenarioArb(sequenced: boolean) {
  return feedPolicyEventsArb(sequenced).chain((events) =>
    fc.tuple(batchesArb(events, 3), fc.nat()).map(([order, pick]) => {
      const batches = order.length > 1 ? [...order.slice(0, -1), [...order.at(-1)!, ...order[0]!]] : order
      return { events, batches: [...batches, batches[pick % batches.length]!] }
    }),
  )
}

/** One stored row as the model writes it: key, region, n, valid_from and valid_to hours (null: open), deleted. */
export type ModelRow = readonly [number, string | null, string | null, number, number | null, boolean]

const byTime = (a: FeedEvent, b: FeedEvent) => a.t - b.t || (a.seq ?? 0) - (b.seq ?? 0)

/** What the dimension holds after `events` (the merged ones), by the documented rules. */
export function expectedFeedPolicyRows(c: FeedPolicyCase, events: readonly FeedEvent[]): ModelRow[] {
  const once = new Map(events.map((e) => [`${e.key}@${e.t}@${e.seq ?? 0}`, e]))
  const byKey = new Map<number, FeedEvent[]>()
  for (const e of once.values()) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e])
  const rows: ModelRow[] = []
  for (const [key, list] of [...byKey].sort((a, b) => a[0] - b[0])) {
    const ordered = [...list].sort(byTime).filter((e) => !(e.op === 'D' && c.deletes === 'ignore'))
    const folded = c.kind === 'partial' ? fold(ordered) : ordered
    const newest = folded.filter((e) => e.op !== 'D').at(-1)
    if (newest === undefined) continue
    // Per change time, the last event in sequence order is the key's state then.
    const atTime = new Map<number, FeedEvent>()
    for (const e of folded) atTime.set(e.t, e)
    const tracked = (e: FeedEvent): Record<string, string | null> =>
      c.kind === 'mirror' ? {} : { region: e.attrs.region ?? null }
    const captures: ModelEvent[] = [...atTime.values()].map((e) => ({
      key,
      t: e.t,
      ...(e.op === 'D' ? {} : { attrs: tracked(e) }),
    }))
    let versions = expectedHistory(captures, c.deletes)
    if (c.kind === 'mirror') versions = versions.filter((v) => v.to === null && !v.deleted)
    for (const v of versions) {
      const region = c.kind === 'mirror' ? (newest.attrs.region ?? null) : (v.attrs.region ?? null)
      rows.push([key, region, newest.attrs.n ?? null, v.from, v.to, v.deleted])
    }
  }
  return rows
}

/** Partial rows folded into their key's state, in order; a delete ends the state. */
function fold(ordered: readonly FeedEvent[]): FeedEvent[] {
  let state: Readonly<Record<string, string | null>> | undefined
  return ordered.map((e) => {
    if (e.op === 'D') {
      state = undefined
      return e
    }
    const attrs = Object.fromEntries(
      Object.entries(e.attrs).map(([column, value]) => [column, value ?? state?.[column] ?? null]),
    )
    state = attrs
    return { ...e, attrs }
  })
}

/** The rows a warehouse holds, as the model writes them (open ends as null). */
export function storedFeedPolicyRows(rows: readonly Record<string, unknown>[]): ModelRow[] {
  return rows.map((r) => [
    Number(r.customer_id),
    (r.region ?? null) as string | null,
    (r.n ?? null) as string | null,
    hourOf(String(r.valid_from)),
    r.valid_to === null || String(r.valid_to).startsWith('9999-12-31') ? null : hourOf(String(r.valid_to)),
    r.is_deleted === true || r.is_deleted === 'true',
  ])
}

/** The query of the rows `storedFeedPolicyRows` reads, in key then valid_from order. */
export const FEED_POLICY_ROWS_SQL =
  'SELECT customer_id, region, n, valid_from, valid_to, is_deleted FROM main.dim_customer ORDER BY customer_id, valid_from'
