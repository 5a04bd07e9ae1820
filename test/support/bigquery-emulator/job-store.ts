import { BigQueryError, duplicate, invalid } from './api-errors.ts'
import type { QueryResult } from './statement-executor.ts'
import type { Proto } from './zetasql-service.ts'

export type JobState = 'PENDING' | 'RUNNING' | 'DONE'

/** What a finished job reports besides its state: statistics, and a query's result. */
export interface JobOutcome {
  readonly statistics: Record<string, unknown>
  readonly result?: QueryResult
}

export interface JobRecord {
  readonly projectId: string
  readonly jobId: string
  readonly location: string
  readonly configuration: Proto
  readonly creationMs: number
  state: JobState
  startMs?: number
  endMs?: number
  error?: BigQueryError
  outcome?: JobOutcome
  /** Settles when the job is DONE (successfully or not). */
  readonly done: Promise<void>
}

const JOB_ID = /^[A-Za-z0-9_-]{1,1024}$/

/**
 * Jobs by project and id. A job id is unique within its project: inserting an existing id answers BigQuery's
 * 409 `duplicate` whatever the existing job's state (a failed job keeps its id). Jobs run one at a time, in
 * insertion order, each at least `minimumRunMs` (so a client sees PENDING/RUNNING and polls); a job keeps the
 * minimum in force when it was inserted.
 */
export class JobStore {
  readonly #jobs = new Map<string, JobRecord>()
  readonly #clock: () => number
  #minimumRunMs: number
  #queue: Promise<void> = Promise.resolve()

  constructor(clock: () => number, minimumRunMs = 0) {
    this.#clock = clock
    this.#minimumRunMs = minimumRunMs
  }

  /** The minimum run of the jobs inserted from now on (those inserted before keep theirs). */
  set minimumRunMs(ms: number) {
    this.#minimumRunMs = ms
  }

  get(projectId: string, jobId: string, location?: string): JobRecord | undefined {
    const job = this.#jobs.get(`${projectId}/${jobId}`)
    if (job === undefined) return undefined
    if (location !== undefined && location !== '' && job.location.toLowerCase() !== location.toLowerCase())
      return undefined
    return job
  }

  list(projectId: string): JobRecord[] {
    return [...this.#jobs.values()].filter((j) => j.projectId === projectId)
  }

  /**
   * Records a job and queues `run`; a failure `run` throws is the job's error (a BigQueryError keeps its
   * reason; anything else is reported as an internalError, an emulator defect).
   */
  insert(
    reference: { projectId: string; jobId: string; location: string },
    configuration: Proto,
    run: (job: JobRecord) => Promise<JobOutcome>,
  ): JobRecord {
    if (!JOB_ID.test(reference.jobId))
      throw invalid(
        `Invalid job ID "${reference.jobId}": use letters, numbers, dashes and underscores (at most 1024)`,
      )
    const key = `${reference.projectId}/${reference.jobId}`
    if (this.#jobs.has(key))
      throw duplicate(`Already Exists: Job ${reference.projectId}:${reference.location}.${reference.jobId}`)
    let settle!: () => void
    const done = new Promise<void>((resolve) => (settle = resolve))
    const job: JobRecord = { ...reference, configuration, creationMs: this.#clock(), state: 'PENDING', done }
    this.#jobs.set(key, job)
    const minimumRunMs = this.#minimumRunMs
    this.#queue = this.#queue.then(async () => {
      job.state = 'RUNNING'
      job.startMs = this.#clock()
      const ran = Date.now()
      try {
        job.outcome = await run(job)
      } catch (error) {
        job.error =
          error instanceof BigQueryError
            ? error
            : new BigQueryError(
                'internalError',
                `BigQuery emulator defect: ${(error as Error).stack ?? String(error)}`,
              )
      }
      const left = minimumRunMs - (Date.now() - ran)
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left))
      job.endMs = this.#clock()
      job.state = 'DONE'
      settle()
    })
    return job
  }

  /** Records a job that failed before it could run (an invalid query is refused at insertion, yet exists). */
  insertFailed(
    reference: { projectId: string; jobId: string; location: string },
    configuration: Proto,
    error: BigQueryError,
  ): JobRecord {
    const key = `${reference.projectId}/${reference.jobId}`
    if (this.#jobs.has(key))
      throw duplicate(`Already Exists: Job ${reference.projectId}:${reference.location}.${reference.jobId}`)
    const now = this.#clock()
    const job: JobRecord = {
      ...reference,
      configuration,
      creationMs: now,
      startMs: now,
      endMs: now,
      state: 'DONE',
      error,
      done: Promise.resolve(),
    }
    this.#jobs.set(key, job)
    return job
  }

  /** Waits until every queued job has finished. */
  async idle(): Promise<void> {
    await this.#queue
  }
}
