/**
 * How long dimsync waits for BigQuery, and the bounds that follow (docs/bigquery.md, "How long a merge can wait").
 * Every API call is abandoned after `requestTimeoutMs` without an answer and tried again, `maxAttempts` times in
 * all, with the backoff of backoffDelayMs between attempts; a job is awaited `jobTimeoutMs`, then left running for
 * the retry to adopt.
 */
export interface BigQueryDeadlines {
  /** Milliseconds one API call may take before it is abandoned and tried again (default 30,000). */
  readonly requestTimeoutMs?: number
  /** Attempts of a call or a job that fails transiently (default 5). */
  readonly maxAttempts?: number
  /** Wait before the second attempt; doubles per attempt, up to 32× (default 1,000). */
  readonly retryDelayMs?: number
  /** Milliseconds a job is awaited before the call gives up, leaving it running (default 600,000). */
  readonly jobTimeoutMs?: number
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000
export const DEFAULT_MAX_ATTEMPTS = 5
export const DEFAULT_RETRY_DELAY_MS = 1000
/** Below the merge Lambda's 15 minutes, so a long job is left running and adopted by the retry. */
export const DEFAULT_JOB_TIMEOUT_MS = 600_000

/** The longest wait before attempt `failures + 1` (backoffDelayMs without its jitter). */
export function longestBackoffMs(failures: number, baseMs: number): number {
  return baseMs * 2 ** Math.min(failures - 1, 5)
}

/**
 * The longest one API call can keep a merge waiting: every attempt unanswered until its deadline, and the longest
 * backoff between them. With the defaults 5 × 30 s + (1 + 2 + 4 + 8) s = 165 s.
 */
export function longestCallWaitMs(deadlines: BigQueryDeadlines): number {
  const attempts = deadlines.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
  const base = deadlines.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS
  let waits = 0
  for (let failures = 1; failures < attempts; failures++) waits += longestBackoffMs(failures, base)
  return attempts * (deadlines.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS) + waits
}

/**
 * The longest one job can keep a merge waiting: `jobTimeoutMs`, plus the last status poll, which may start just
 * before the deadline and take one call's bound.
 */
export function longestJobWaitMs(deadlines: BigQueryDeadlines): number {
  return (deadlines.jobTimeoutMs ?? DEFAULT_JOB_TIMEOUT_MS) + longestCallWaitMs(deadlines)
}

/** An error as the client gives one for a request that got no answer in time (see isNoResponse). */
export class NoAnswerError extends Error {
  readonly type = 'request-timeout'
}

/**
 * `work` within `ms`: else rejected with a NoAnswerError (the request itself is left to fail on its own socket
 * timeout; its late answer is ignored).
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswerError(`${what} got no answer within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

/** What a merge runs, for its bound (counted from a merge on the emulator: see docs/bigquery.md). */
export interface MergeCalls {
  /** Calls outside jobs: datasets.get, tables.get (ledger, staging table, dimension), tables.insert. */
  readonly calls: number
  /** Small query jobs (ledger, column types, contract, re-delivery reads) and transactions (the fence). */
  readonly queryJobs: number
  /** Load jobs of part groups, run `loadConcurrency` at a time. */
  readonly loadGroups: number
  readonly loadConcurrency: number
}

/** A merge of one part group as counted on the emulator: 5 calls, 7 query jobs and the fence's transaction. */
export const ONE_GROUP_MERGE: MergeCalls = { calls: 5, queryJobs: 8, loadGroups: 1, loadConcurrency: 2 }

/**
 * The longest a merge can wait on BigQuery, every wait at its bound in turn: each call (C = longestCallWaitMs),
 * each query job (its insertion, its wait J = longestJobWaitMs, its results), each round of load jobs (the lookup
 * of an earlier attempt, the upload, the wait; twice, as a staging table found short is reloaded) and the script
 * job (lookup, insertion, wait, results). In practice the Lambda's 15 minutes end it first, and the retry adopts
 * the jobs already submitted; what the bound guarantees is that no single wait is endless.
 */
export function longestMergeWaitMs(
  deadlines: BigQueryDeadlines & { readonly uploadTimeoutMs?: number },
  merge: MergeCalls = ONE_GROUP_MERGE,
): number {
  const call = longestCallWaitMs(deadlines)
  const job = longestJobWaitMs(deadlines)
  const upload = longestCallWaitMs({ ...deadlines, requestTimeoutMs: deadlines.uploadTimeoutMs ?? 300_000 })
  const loadRounds = Math.ceil(merge.loadGroups / Math.max(1, merge.loadConcurrency))
  return (
    merge.calls * call +
    merge.queryJobs * (call + job + call) +
    2 * loadRounds * (call + upload + job) +
    (call + call + job + call)
  )
}
