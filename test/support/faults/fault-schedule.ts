/**
 * The seeded schedule of a chaos test: for each call to a service, whether it passes or which fault it meets.
 * The decision for the n-th call of a kind (`s3 PutObject`, `dynamodb UpdateItem`) depends only on the seed, the
 * call and n, so the same seed replays the same faults even when calls of different kinds interleave in another
 * order (parallel uploads, two load jobs at once).
 */

/** What a call meets. */
export type FaultKind =
  /** An HTTP 500 or 503 in the service's error format (a transient server error the SDKs retry). */
  | 'error'
  /** The service's throttling answer (S3 SlowDown, DynamoDB ProvisionedThroughputExceededException, BigQuery rateLimitExceeded). */
  | 'throttle'
  /** Held, then the connection is cut: the request never reaches the service and gets no answer. */
  | 'timeout'
  /** Forwarded and applied, then the connection is cut: the write happened, its answer is lost. */
  | 'drop'
  /** Forwarded after a wait. */
  | 'delay'

export const FAULT_KINDS: readonly FaultKind[] = ['error', 'throttle', 'timeout', 'drop', 'delay']

export type Decision = { readonly kind: 'pass' } | { readonly kind: FaultKind; readonly waitMs: number }

/**
 * Which faults the n-th call (from 1) of a kind may meet: the chaos test narrows them per call where a fault is
 * not survived yet; a regression test scripts one fault at one call.
 */
export type FaultPolicy = (call: string, n: number) => readonly FaultKind[]

export interface ScheduleOptions {
  readonly seed: number
  /** Share of calls that meet a fault (0..1). */
  readonly rate: number
  readonly policy: FaultPolicy
  /** Longest wait of a delay or a timeout, in ms (default 400). */
  readonly maxWaitMs?: number
}

/** Faults met so far, per kind and per call. */
export interface FaultTally {
  readonly calls: number
  readonly byKind: Readonly<Record<FaultKind, number>>
  readonly byCall: Readonly<Record<string, Readonly<Partial<Record<FaultKind | 'pass', number>>>>>
}

export class FaultSchedule {
  readonly #options: ScheduleOptions
  readonly #seen = new Map<string, number>()
  readonly #byCall = new Map<string, Partial<Record<FaultKind | 'pass', number>>>()
  #enabled = true
  #calls = 0

  constructor(options: ScheduleOptions) {
    if (!(options.rate >= 0 && options.rate <= 1))
      throw new Error(`fault rate must be within 0..1, got ${options.rate}`)
    this.#options = options
  }

  /** Off: every call passes and nothing is counted (set-up and assertions run fault free). */
  set enabled(on: boolean) {
    this.#enabled = on
  }

  get enabled(): boolean {
    return this.#enabled
  }

  /** The decision for the next call of `call` (`service Operation`). */
  next(call: string): Decision {
    if (!this.#enabled) return { kind: 'pass' }
    const n = (this.#seen.get(call) ?? 0) + 1
    this.#seen.set(call, n)
    this.#calls++
    const random = xorshift32(seedOf(this.#options.seed, call, n))
    const allowed = this.#options.policy(call, n)
    const decision: Decision =
      allowed.length === 0 || random() >= this.#options.rate
        ? { kind: 'pass' }
        : {
            kind: allowed[Math.floor(random() * allowed.length)]!,
            waitMs: Math.floor(random() * (this.#options.maxWaitMs ?? 400)),
          }
    const counts = this.#byCall.get(call) ?? {}
    counts[decision.kind] = (counts[decision.kind] ?? 0) + 1
    this.#byCall.set(call, counts)
    return decision
  }

  tally(): FaultTally {
    const byKind = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>
    for (const counts of this.#byCall.values())
      for (const kind of FAULT_KINDS) byKind[kind] += counts[kind] ?? 0
    return {
      calls: this.#calls,
      byKind,
      byCall: Object.fromEntries([...this.#byCall].sort(([a], [b]) => a.localeCompare(b))),
    }
  }
}

/** Adds tallies (of several schedules, or several seeds). */
export function addTallies(tallies: readonly FaultTally[]): FaultTally {
  const byKind = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>
  const byCall: Record<string, Partial<Record<FaultKind | 'pass', number>>> = {}
  let calls = 0
  for (const tally of tallies) {
    calls += tally.calls
    for (const kind of FAULT_KINDS) byKind[kind] += tally.byKind[kind]
    for (const [call, counts] of Object.entries(tally.byCall)) {
      const sum = (byCall[call] ??= {})
      for (const [kind, count] of Object.entries(counts) as [FaultKind | 'pass', number][])
        sum[kind] = (sum[kind] ?? 0) + count
    }
  }
  return {
    calls,
    byKind,
    byCall: Object.fromEntries(Object.entries(byCall).sort(([a], [b]) => a.localeCompare(b))),
  }
}

/** A table of a tally for the test's output: one line per call that met a fault. */
export function formatTally(title: string, tally: FaultTally): string {
  const faulted = Object.entries(tally.byCall).filter(([, counts]) =>
    FAULT_KINDS.some((k) => (counts[k] ?? 0) > 0),
  )
  const kinds = FAULT_KINDS.map((k) => `${k} ${tally.byKind[k]}`).join(', ')
  const lines = faulted.map(
    ([call, counts]) =>
      `  ${call.padEnd(40)} ${[...FAULT_KINDS, 'pass' as const]
        .filter((k) => (counts[k] ?? 0) > 0)
        .map((k) => `${k} ${counts[k]}`)
        .join(', ')}`,
  )
  return [`${title}: ${tally.calls} calls; faults: ${kinds}`, ...lines].join('\n')
}

/** FNV-1a of the seed, the call and its number: a 32-bit state for xorshift, never 0. */
function seedOf(seed: number, call: string, n: number): number {
  let hash = 0x811c9dc5
  for (const char of `${seed}\u0000${call}\u0000${n}`) {
    hash ^= char.charCodeAt(0)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash === 0 ? 0x9e3779b9 : hash
}

/** Marsaglia's xorshift32: numbers in [0, 1). */
export function xorshift32(state: number): () => number {
  let x = state >>> 0 || 1
  const step = () => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x / 0x1_0000_0000
  }
  // Neighbouring states (call n and n + 1) give related first numbers; a few steps apart them.
  for (let i = 0; i < 4; i++) step()
  return step
}
