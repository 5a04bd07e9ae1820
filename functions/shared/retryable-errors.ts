import type middy from '@middy/core'

/**
 * Lambda reports a thrown error's `name` as its errorType, which is what the state machine's Retry matches.
 * dimsync marks transient failures `retryable` on many error classes (a dropped connection, AWS throttling); this
 * renames them to one errorType, `RetryableError`, so the orchestration retries exactly those and nothing else.
 * `LockHeldError` keeps its name (retried on its own schedule); everything else is left as is.
 */
export function retryableErrorsAsOneType(): middy.MiddlewareObj<unknown, unknown> {
  return {
    onError: async (request) => {
      const error = request.error as (Error & { retryable?: boolean }) | null
      if (error && error.retryable === true && error.name !== 'LockHeldError') {
        const renamed = new Error(error.message, { cause: error })
        renamed.name = 'RetryableError'
        request.error = renamed
      }
    },
  }
}
