/**
 * How the state machine retries the extract and merge functions, and how long its retries can keep the next
 * extract pass waiting: the lease one pass hands to the next must last that long, or another run could take
 * the table in between.
 */
import { Duration } from 'aws-cdk-lib'
import * as sfn from 'aws-cdk-lib/aws-stepfunctions'
import { LockHeldError } from '../lib/core/errors.ts'
import { RETRY_ERROR_NAMES } from '../lib/runtime/aws-env.ts'
import { LAMBDA_SERVICE_ERRORS, LAMBDA_THROTTLED } from './defaults.ts'

/** The service did not run the function: the retries of these errors wait one after the other. */
const BEFORE_THE_FUNCTION_RUNS = [LAMBDA_THROTTLED, ...LAMBDA_SERVICE_ERRORS]

/** Retriers shared by the extract and merge tasks; the order matters (the first matching retrier wins). */
export const RETRIERS: readonly sfn.RetryProps[] = [
  { errors: [...RETRY_ERROR_NAMES.neverRetried], maxAttempts: 0 },
  {
    errors: [...RETRY_ERROR_NAMES.retriedWithBackoff],
    interval: Duration.seconds(30),
    backoffRate: 2,
    maxAttempts: 6,
    maxDelay: Duration.minutes(5),
    jitterStrategy: sfn.JitterType.FULL,
  },
  // A throttle waits for another run of the size class to finish (an extract may take 15 minutes): about 40
  // minutes of backoff, where a service hiccup gets seconds.
  {
    errors: [LAMBDA_THROTTLED],
    interval: Duration.seconds(10),
    backoffRate: 2,
    maxAttempts: 12,
    maxDelay: Duration.minutes(5),
    jitterStrategy: sfn.JitterType.FULL,
  },
  {
    errors: [...LAMBDA_SERVICE_ERRORS],
    interval: Duration.seconds(2),
    backoffRate: 2,
    maxAttempts: 6,
    jitterStrategy: sfn.JitterType.FULL,
  },
]

/**
 * The extract's retriers: a first pass that finds the table busy is not retried (a schedule skips it, a
 * person is told at once); a later pass never meets another run's lease while its own is handed over.
 */
export const EXTRACT_RETRIERS: readonly sfn.RetryProps[] = [
  { errors: [LockHeldError.name], maxAttempts: 0 },
  ...RETRIERS,
]

/** The longest wait of each retry of `retry`, in seconds (full jitter waits at most the computed delay). */
export function retryWaitsSeconds(retry: sfn.RetryProps): number[] {
  const interval = (retry.interval ?? Duration.seconds(1)).toSeconds()
  const rate = retry.backoffRate ?? 2
  const cap = retry.maxDelay?.toSeconds() ?? Number.POSITIVE_INFINITY
  const attempts = retry.maxAttempts ?? 3
  return Array.from({ length: attempts }, (_, n) => Math.min(interval * rate ** n, cap))
}

/** Margin for what happens around the waits: state transitions, a cold start, reading the lease. */
const MARGIN_SECONDS = 60

/**
 * The longest time, in seconds, between a step handing its lease over and the next step of its run taking it
 * (the next extract pass, the merge after the extract, a merge's retry): every
 * retry of an error raised before the function runs (they follow one another), plus the longest single wait
 * of the others (a pass that fails hands the lease over again as it fails), plus a margin.
 */
export function longestWaitBetweenPassesSeconds(retriers: readonly sfn.RetryProps[]): number {
  const errorsOf = (retry: sfn.RetryProps) => retry.errors ?? []
  const before = retriers.filter((r) => errorsOf(r).some((e) => BEFORE_THE_FUNCTION_RUNS.includes(e)))
  const after = retriers.filter((r) => !before.includes(r))
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
  return Math.ceil(
    sum(before.flatMap(retryWaitsSeconds)) +
      Math.max(0, ...after.flatMap(retryWaitsSeconds)) +
      MARGIN_SECONDS,
  )
}
