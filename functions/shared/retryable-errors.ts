import type middy from '@middy/core'

import { reportedErrorName } from '../../lib/core/retry-policy.ts'

/**
 * Lambda reports a thrown error's `name` as its errorType, which is what the state machine's Retry matches.
 * dimsync marks transient failures `retryable` on many error classes (a dropped connection, AWS throttling); this
 * renames them to the one errorType the orchestration retries (lib/core/retry-policy.ts); everything else keeps
 * its name.
 */
export function retryableErrorsAsOneType(): middy.MiddlewareObj<unknown, unknown> {
  return {
    onError: async (request) => {
      const error = request.error as (Error & { retryable?: boolean }) | null
      if (!error) return
      const name = reportedErrorName(error)
      if (name === error.name) return
      const renamed = new Error(error.message, { cause: error })
      renamed.name = name
      request.error = renamed
    },
  }
}
