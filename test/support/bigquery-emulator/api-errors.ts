/**
 * An error as BigQuery reports it: a reason (`invalidQuery`, `notFound`, `duplicate`, `backendError`, ...), a
 * location (`query`, a field name) and a message. The same object is a job's `status.errorResult` and, for
 * calls that fail at once, the body of an HTTP error.
 */
export class BigQueryError extends Error {
  override readonly name = 'BigQueryError'
  readonly reason: string
  readonly location?: string

  constructor(reason: string, message: string, location?: string) {
    super(message)
    this.reason = reason
    if (location !== undefined) this.location = location
  }

  /** `status.errorResult` / an element of `status.errors`. */
  toJSON(): { reason: string; message: string; location?: string } {
    return {
      reason: this.reason,
      message: this.message,
      ...(this.location ? { location: this.location } : {}),
    }
  }

  get httpStatus(): number {
    return HTTP_STATUS_OF_REASON[this.reason] ?? 400
  }
}

const HTTP_STATUS_OF_REASON: Readonly<Record<string, number>> = Object.freeze({
  invalid: 400,
  invalidQuery: 400,
  jobBackendError: 400,
  resourcesExceeded: 400,
  notFound: 404,
  duplicate: 409,
  accessDenied: 403,
  quotaExceeded: 403,
  rateLimitExceeded: 403,
  backendError: 500,
  internalError: 500,
  notImplemented: 501,
})

const STATUS_NAMES: Readonly<Record<number, string>> = Object.freeze({
  400: 'INVALID_ARGUMENT',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  503: 'UNAVAILABLE',
})

/** The JSON body of an HTTP error response (what the client turns into an ApiError with `code` and `errors`). */
export function errorResponseBody(status: number, errors: readonly BigQueryError[]): unknown {
  const first = errors[0]
  return {
    error: {
      code: status,
      message: first?.message ?? 'error',
      errors: errors.map((e) => ({
        message: e.message,
        domain: 'global',
        reason: e.reason,
        ...(e.location ? { location: e.location, locationType: 'other' } : {}),
      })),
      status: STATUS_NAMES[status] ?? 'UNKNOWN',
    },
  }
}

export const notFound = (message: string) => new BigQueryError('notFound', message)
export const invalid = (message: string) => new BigQueryError('invalid', message)
export const invalidQuery = (message: string) => new BigQueryError('invalidQuery', message, 'query')
export const duplicate = (message: string) => new BigQueryError('duplicate', message)
