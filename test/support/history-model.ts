import type { DeletePolicy } from '../../lib/core/table-spec.ts'

/** One captured state of a key (or its deletion) at a business time, as the in-memory model sees it. */
export interface ModelEvent {
  readonly key: number
  readonly t: number
  /** Tracked attribute values; undefined for a deletion. */
  readonly attrs?: Readonly<Record<string, string | null>>
}

export interface ModelVersion {
  readonly key: number
  readonly attrs: Readonly<Record<string, string | null>>
  readonly from: number
  /** null: open. */
  readonly to: number | null
  readonly deleted: boolean
}

/**
 * The specification of a history, written the simplest way: sort each key's captures by time, collapse runs of
 * equal states, and turn each run into a version (docs/invariants.md). The engine must produce exactly this, whatever
 * the batches and their order.
 */
export function expectedHistory(events: readonly ModelEvent[], policy: DeletePolicy): ModelVersion[] {
  const byKey = new Map<number, ModelEvent[]>()
  for (const e of events) {
    if (policy === 'ignore' && e.attrs === undefined) continue
    byKey.set(e.key, [...(byKey.get(e.key) ?? []), e])
  }
  const versions: ModelVersion[] = []
  for (const [key, list] of [...byKey].sort((a, b) => a[0] - b[0])) {
    list.sort((a, b) => a.t - b.t)
    const runs: { from: number; attrs?: Record<string, string | null> }[] = []
    for (const e of list) {
      const last = runs.at(-1)
      if (last !== undefined && sameState(last.attrs, e.attrs)) continue
      if (last === undefined && e.attrs === undefined) continue // deleted before it ever existed
      runs.push({ from: e.t, attrs: e.attrs })
    }
    runs.forEach((run, i) => {
      const to = runs[i + 1]?.from ?? null
      if (run.attrs !== undefined)
        versions.push({ key, attrs: run.attrs, from: run.from, to, deleted: false })
      else if (policy === 'new_record')
        versions.push({ key, attrs: runs[i - 1]!.attrs!, from: run.from, to, deleted: true })
    })
  }
  return versions
}

/** The state of every key at time t: the last capture at or before t (nothing for a deleted key). */
export function expectedAsOf(
  events: readonly ModelEvent[],
  policy: DeletePolicy,
  t: number,
): Map<number, ModelEvent> {
  const result = new Map<number, ModelEvent>()
  for (const v of expectedHistory(events, policy)) {
    if (v.from <= t && (v.to === null || t < v.to) && !v.deleted)
      result.set(v.key, { key: v.key, t: v.from, attrs: v.attrs })
  }
  return result
}

function sameState(
  a: Record<string, string | null> | undefined,
  b: Readonly<Record<string, string | null>> | undefined,
) {
  if (a === undefined || b === undefined) return a === b
  return JSON.stringify(a) === JSON.stringify(b)
}

/** One event of a change feed as the model sees it. */
export interface FeedEvent {
  readonly key: number
  readonly t: number
  /** Orders events of a key at the same t (absent: the feed has no sequence column). */
  readonly seq?: number
  readonly op: 'I' | 'U' | 'D'
  readonly attrs: Readonly<Record<string, string | null>>
}

/**
 * A change feed as captures: per key and time, the last event in sequence order is the key's state at that
 * time (under `ignore`, delete events do not exist); a delete is a deletion, an insert or update a state.
 */
export function feedCaptures(events: readonly FeedEvent[], policy: DeletePolicy): ModelEvent[] {
  const last = new Map<string, FeedEvent>()
  for (const e of events) {
    if (policy === 'ignore' && e.op === 'D') continue
    const id = `${e.key}@${e.t}`
    const before = last.get(id)
    if (before === undefined || (e.seq ?? 0) > (before.seq ?? 0)) last.set(id, e)
  }
  return [...last.values()].map((e) => ({ key: e.key, t: e.t, attrs: e.op === 'D' ? undefined : e.attrs }))
}
