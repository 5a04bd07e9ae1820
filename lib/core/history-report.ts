/**
 * What `dimsync report` shows, as data: per dimension and per fact the aggregates the warehouse computed (never
 * their rows), the last runs from the state store, and one key's versions. Pure: the use case fills it from the
 * warehouse and the state store, the page renders it.
 */
import type { RunRecord } from './run-record.ts'
import type { DeletePolicy, TableMode } from './table-spec.ts'

/** What happened on one day (UTC, `YYYY-MM-DD`) to a dimension; absent counts are 0. */
export interface DimensionDay {
  readonly day: string
  /** Versions whose window starts that day (business time). */
  readonly opened: number
  /** Versions whose window ends that day. */
  readonly closed: number
  /** Versions that bring a key back after a delete (they start that day). */
  readonly restored: number
  /**
   * Versions a batch of that extraction day corrected: rows it superseded in system time (bitemporal tables), or
   * versions it retired (change feeds whose states can be corrected).
   */
  readonly corrected: number
  /** Batches merged with that extraction day, and what the ledger says they did. */
  readonly batches: number
  readonly deletedKeys: number
  readonly lateKeys: number
}

/** How many keys have how many versions. */
export interface DepthBucket {
  readonly versions: number
  readonly keys: number
}

export interface DepthStats {
  readonly keys: number
  readonly versions: number
  /** Versions per key, nearest rank. */
  readonly median: number
  readonly p99: number
  readonly max: number
}

/** One row of the batch ledger (`_dimsync_batches`). */
export interface LedgerBatch {
  readonly batchId: string
  readonly extractedAt: string
  readonly appliedAt: string
  readonly mode: string
  readonly events: number
  readonly insertedVersions: number
  readonly closedVersions: number
  readonly deletedKeys: number
  readonly unchangedEvents: number
  readonly lateKeys: number
}

export interface DimensionReport {
  readonly kind: 'dimension'
  readonly name: string
  readonly target: string
  readonly mode: TableMode
  readonly deletes: DeletePolicy
  readonly bitemporal: boolean
  /** How keys that come back after a delete are counted, or why none can. */
  readonly restoredCounting: 'gaps' | 'deletion-versions' | 'none'
  /** False when the dimension does not exist yet (no run merged a batch). */
  readonly loaded: boolean
  /** Every version known now (bitemporal tables: not superseded in system time). */
  readonly rows: number
  /** Keys whose current version is live (not a deletion). */
  readonly liveKeys: number
  readonly depth: DepthStats
  /** Days with activity, oldest first. */
  readonly days: readonly DimensionDay[]
  /** The latest batches of the ledger, newest first. */
  readonly recentBatches: readonly LedgerBatch[]
  /** The latest run records, newest first. */
  readonly runs: readonly RunRecord[]
}

/** A fact's pointer at a dimension, as the report counts it. */
export interface FactReferenceReport {
  readonly dimension: string
  readonly surrogateKeyColumn: string
  readonly unknownMemberKey: number
  /** Whether inferred members can exist (the reference infers them and the dimension has the flag column). */
  readonly countsInferred: boolean
}

/** Facts of one event day (UTC); per reference, in the order of `references`. */
export interface FactDay {
  readonly day: string
  readonly rows: number
  readonly unknown: readonly number[]
  readonly inferred: readonly number[]
}

export interface FactReport {
  readonly kind: 'fact'
  readonly name: string
  readonly target: string
  readonly loaded: boolean
  readonly references: readonly FactReferenceReport[]
  readonly days: readonly FactDay[]
  readonly recentBatches: readonly LedgerBatch[]
  readonly runs: readonly RunRecord[]
}

/** One version of a key, for its timeline. Instants are the warehouse's text (`YYYY-MM-DD HH:MM:SS+00`). */
export interface TimelineVersion {
  readonly surrogateKey: string
  readonly validFrom: string
  /** Undefined: open (current). */
  readonly validTo?: string
  readonly deleted: boolean
  readonly current: boolean
  /** Bitemporal tables: when dimsync learned the row, and when a later merge superseded it (undefined: not yet). */
  readonly systemFrom?: string
  readonly systemTo?: string
  /** Attribute values as text (null: NULL), in the order of `attributes`. */
  readonly values: readonly (string | null)[]
}

export interface KeyTimeline {
  readonly table: string
  readonly target: string
  /** The key as asked (`101`, or `tenant=a,customer_id=1`). */
  readonly key: string
  readonly attributes: readonly string[]
  readonly bitemporal: boolean
  /** Ordered by valid_from, then system_from. */
  readonly versions: readonly TimelineVersion[]
}

export interface ProjectReport {
  /** The config file the report is of. */
  readonly config: string
  readonly warehouse: string
  /** ISO instant. */
  readonly generatedAt: string
  readonly dimensions: readonly DimensionReport[]
  readonly facts: readonly FactReport[]
  readonly timeline?: KeyTimeline
}

/** Versions per key from the histogram: the count of keys and versions, nearest-rank median and p99, and max. */
export function depthStats(histogram: readonly DepthBucket[]): DepthStats {
  const buckets = histogram.filter((b) => b.keys > 0).toSorted((a, b) => a.versions - b.versions)
  const keys = buckets.reduce((sum, b) => sum + b.keys, 0)
  const versions = buckets.reduce((sum, b) => sum + b.keys * b.versions, 0)
  const rank = (share: number) => {
    const wanted = Math.max(1, Math.ceil(share * keys))
    let seen = 0
    for (const b of buckets) {
      seen += b.keys
      if (seen >= wanted) return b.versions
    }
    return 0
  }
  return { keys, versions, median: rank(0.5), p99: rank(0.99), max: buckets.at(-1)?.versions ?? 0 }
}

const NO_DIMENSION_DAY: Omit<DimensionDay, 'day'> = Object.freeze({
  opened: 0,
  closed: 0,
  restored: 0,
  corrected: 0,
  batches: 0,
  deletedKeys: 0,
  lateKeys: 0,
})

/** Per-day counts from several sources merged into one row per day, oldest first. */
export function mergeDimensionDays(
  ...sources: readonly (readonly (Partial<DimensionDay> & { readonly day: string })[])[]
): DimensionDay[] {
  const byDay = new Map<string, DimensionDay>()
  for (const source of sources) {
    for (const counts of source) {
      const sum: Record<string, number | string> = { ...(byDay.get(counts.day) ?? NO_DIMENSION_DAY) }
      for (const [field, value] of Object.entries(counts))
        if (field !== 'day' && typeof value === 'number') sum[field] = Number(sum[field] ?? 0) + value
      byDay.set(counts.day, { ...(sum as Omit<DimensionDay, 'day'>), day: counts.day })
    }
  }
  return [...byDay.values()].toSorted((a, b) => a.day.localeCompare(b.day))
}

/** The days a chart shows: those within `span` days up to the last one (counts of earlier days stay in totals). */
export function recentDays<T extends { readonly day: string }>(days: readonly T[], span: number): T[] {
  const last = days.at(-1)
  if (last === undefined) return []
  const first = new Date(Date.parse(`${last.day}T00:00:00Z`) - (span - 1) * 86_400_000)
    .toISOString()
    .slice(0, 10)
  return days.filter((d) => d.day >= first)
}

/** Totals of every numeric field of `days`. */
export function sumDays<T extends { readonly day: string }>(days: readonly T[]): Record<string, number> {
  const totals: Record<string, number> = {}
  for (const d of days)
    for (const [field, value] of Object.entries(d))
      if (typeof value === 'number') totals[field] = (totals[field] ?? 0) + value
  return totals
}

/** A run's duration in seconds, when it finished. */
export function runSeconds(run: RunRecord): number | undefined {
  if (run.finishedAt === undefined) return undefined
  const ms = Date.parse(run.finishedAt) - Date.parse(run.startedAt)
  return Number.isFinite(ms) ? ms / 1000 : undefined
}

/** Milliseconds of the warehouse's instant text (`YYYY-MM-DD HH:MM:SS[.ffffff]+00`, or ISO); NaN if not one. */
export function instantMs(text: string): number {
  const m =
    /^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}(?::\d{2})?)(\.\d{1,3})?\d*)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/.exec(
      text.trim(),
    )
  if (m === null) return Number.NaN
  const zone = m[4] === undefined || m[4] === 'Z' ? 'Z' : m[4].length === 3 ? `${m[4]}:00` : m[4]
  return Date.parse(`${m[1]}T${m[2] ?? '00:00:00'}${m[3] ?? ''}${zone}`)
}
