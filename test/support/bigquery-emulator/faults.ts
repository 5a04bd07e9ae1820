import { BigQueryError } from './api-errors.ts'
import type { StatementInfo } from './script-interpreter.ts'

export interface InjectedError {
  readonly reason: string
  readonly message: string
}

interface Rule<T> {
  readonly match: (subject: T) => boolean
  readonly error: InjectedError
  remaining: number
  /** HTTP faults: the status answered. */
  readonly status?: number
}

export interface RequestInfo {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  /** The request's JSON body, if any (e.g. a job resource, to stall the insertion of one job). */
  readonly json?: unknown
}

/**
 * Failures a test asks the emulator for, to see how a client copes with what BigQuery does under load: a
 * statement failing inside a script (its exception handler sees it, as a concurrent update or backendError),
 * a job failing before it runs, an HTTP call answered with an error status (a 503 on an upload) or never
 * answered (a hanging connection). Each rule
 * fires `times` times, then is spent.
 */
export class Faults {
  readonly #statements: Rule<StatementInfo>[] = []
  readonly #jobs: Rule<{ readonly jobId: string; readonly kind: 'query' | 'load' }>[] = []
  readonly #requests: Rule<RequestInfo>[] = []
  readonly #stalls: Rule<RequestInfo>[] = []

  /** Fails the next statement(s) of a query job that `match` selects, with `error` (catchable in the script). */
  failStatement(match: (statement: StatementInfo) => boolean, error: InjectedError, times = 1): void {
    this.#statements.push({ match, error, remaining: times })
  }

  /** Fails the next job(s) `match` selects before they run: the job ends DONE with `error`. */
  failJob(
    match: (job: { jobId: string; kind: 'query' | 'load' }) => boolean,
    error: InjectedError,
    times = 1,
  ): void {
    this.#jobs.push({ match, error, remaining: times })
  }

  /** Answers the next HTTP request(s) `match` selects with `status` and `error`, without serving them. */
  failRequest(
    match: (request: RequestInfo) => boolean,
    status: number,
    error: InjectedError,
    times = 1,
  ): void {
    this.#requests.push({ match, error, remaining: times, status })
  }

  /** Never answers the next HTTP request(s) `match` selects (a connection that hangs), until the emulator stops. */
  stallRequest(match: (request: RequestInfo) => boolean, times = 1): void {
    this.#stalls.push({ match, error: { reason: 'stalled', message: '' }, remaining: times })
  }

  beforeStatement(statement: StatementInfo): void {
    const rule = take(this.#statements, statement)
    if (rule) throw new BigQueryError(rule.error.reason, rule.error.message, 'query')
  }

  beforeJob(job: { jobId: string; kind: 'query' | 'load' }): void {
    const rule = take(this.#jobs, job)
    if (rule) throw new BigQueryError(rule.error.reason, rule.error.message)
  }

  /** The status and error to answer a request with, `stall` to never answer it, if a rule selects it. */
  forRequest(request: RequestInfo): { status: number; error: BigQueryError } | 'stall' | undefined {
    if (take(this.#stalls, request) !== undefined) return 'stall'
    const rule = take(this.#requests, request)
    return rule
      ? { status: rule.status!, error: new BigQueryError(rule.error.reason, rule.error.message) }
      : undefined
  }
}

function take<T>(rules: Rule<T>[], subject: T): Rule<T> | undefined {
  const rule = rules.find((r) => r.remaining > 0 && r.match(subject))
  if (rule) rule.remaining--
  return rule
}
