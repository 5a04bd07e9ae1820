/**
 * The latest attempt of a job whose ids are numbered 1, 2, 3…: attempts are made in order (attempt n+1 only after
 * attempt n exists), so the existing ids are always a prefix and a galloping search finds the last one in
 * about 2·log2(n) lookups, however many earlier attempts failed. Undefined when attempt 1 does not exist.
 */
export async function latestAttempt<Job>(
  lookup: (attempt: number) => Promise<Job | undefined>,
): Promise<{ readonly attempt: number; readonly job: Job } | undefined> {
  const first = await lookup(1)
  if (first === undefined) return undefined
  let found = { attempt: 1, job: first }
  let absent = 2
  for (;;) {
    const job = await lookup(absent)
    if (job === undefined) break
    found = { attempt: absent, job }
    absent *= 2
  }
  // found.attempt exists, absent does not: narrow the gap.
  while (absent - found.attempt > 1) {
    const middle = Math.floor((found.attempt + absent) / 2)
    const job = await lookup(middle)
    if (job === undefined) absent = middle
    else found = { attempt: middle, job }
  }
  return found
}

/**
 * How long to wait before attempt `failures + 1` after `failures` transient failures: exponential from `baseMs`
 * (BigQuery's SLA asks for at least 1 s, doubling up to 32 s), with full jitter over the upper half so that
 * retries of parallel merges spread out. `random` is in [0, 1).
 */
export function backoffDelayMs(failures: number, baseMs: number, random: number): number {
  const ceiling = baseMs * 2 ** Math.min(failures - 1, 5)
  return ceiling / 2 + (ceiling / 2) * random
}
