import { createReadStream } from 'node:fs'
import { BigQuery, type BigQueryOptions } from '@google-cloud/bigquery'
import type { StagedColumn } from '../../core/batch.ts'
import type { DimensionColumn } from '../../core/dimension-layout.ts'
import { DimsyncError, WarehouseError } from '../../core/errors.ts'
import type {
  LoadBatchRequest,
  MergeScriptRequest,
  MergeScriptResult,
  Row,
  ScriptWarehouse,
  WarehouseTransaction,
} from '../../ports/warehouse.ts'
import { createBigQueryDialect } from '../../sql/bigquery/bigquery-dialect.ts'
import {
  bigQueryColumnType,
  SOURCE_TYPE_PREFIX,
  stagedTypeOfBigQueryField,
} from '../../sql/bigquery/bigquery-types.ts'
import type { CompiledStatement, SqlDialect, TableRef } from '../../sql/dialect.ts'
import { jobFailure, type JobError } from './bigquery-errors.ts'
import { backoffDelayMs, latestAttempt } from './bigquery-job-attempts.ts'
import { jobId, jobLabels } from './bigquery-job-ids.ts'
import { INTEGER_VALUES, toRow } from './bigquery-rows.ts'

export interface BigQueryWarehouseOptions {
  readonly project: string
  /** Location of the dataset (`EU`, `US`, `europe-west1`); sent with every job call. */
  readonly location: string
  /** Test seam and advanced use: an API endpoint (a local fake in tests). */
  readonly apiEndpoint?: string
  /** An injected auth client (tests: PassThroughClient); else credentials, else Application Default Credentials. */
  readonly authClient?: BigQueryOptions['authClient']
  /** Service-account key (from Secrets Manager on Lambda): `client_email` and `private_key`. */
  readonly credentials?: { readonly client_email: string; readonly private_key: string }
  /** Days before BigQuery deletes a per-batch staging table that a failed run left behind (default 7). */
  readonly stagingExpirationDays?: number
  /** Milliseconds between job status polls (default 1000). */
  readonly pollIntervalMs?: number
  /** Attempts of a job that fails transiently, within one call, before its error is thrown (default 5). */
  readonly maxAttempts?: number
  /** Wait before the second attempt of a job that failed transiently; doubles per attempt, up to 32× (default 1000). */
  readonly retryDelayMs?: number
  /** Test seam: how a wait between attempts is done (default a timer). */
  readonly sleep?: (ms: number) => Promise<void>
}

interface JobResource {
  readonly jobReference?: { readonly jobId?: string; readonly location?: string }
  readonly status?: { readonly state?: string; readonly errorResult?: JobError; readonly errors?: JobError[] }
  readonly statistics?: {
    readonly totalBytesProcessed?: string
    readonly query?: { totalBytesProcessed?: string }
  }
}

interface ApiError {
  readonly code?: number
  readonly message?: string
  readonly errors?: readonly { readonly reason?: string }[]
}

const DAY_MS = 86_400_000

/**
 * BigQuery as the warehouse. Building it makes no network call (the client authenticates lazily on the first
 * request). Every job gets a deterministic id, labels naming the table and batch, and the dataset's location.
 * A merge is one multi-statement script job (see renderMergeScript); a staged batch is loaded from the
 * local Parquet parts (BigQuery cannot read S3) with one load job per part into a per-batch staging table.
 */
export class BigQueryWarehouse implements ScriptWarehouse<SqlDialect> {
  readonly mergeMode = 'script' as const
  readonly dialect: SqlDialect
  readonly #client: BigQuery
  readonly #options: BigQueryWarehouseOptions

  constructor(options: BigQueryWarehouseOptions) {
    this.#options = options
    this.dialect = createBigQueryDialect({ project: options.project })
    this.#client = new BigQuery({
      projectId: options.project,
      location: options.location,
      ...(options.apiEndpoint ? { apiEndpoint: options.apiEndpoint } : {}),
      ...(options.authClient ? { authClient: options.authClient } : {}),
      ...(options.credentials ? { credentials: { ...options.credentials } } : {}),
    })
  }

  /** Columns of a table (staged types, read back from the descriptions dimsync wrote), or undefined if absent. */
  async describeTable(ref: TableRef): Promise<DimensionColumn[] | undefined> {
    const table = this.#client
      .dataset(this.#dataset(ref), { location: this.#options.location })
      .table(ref.name)
    try {
      const [metadata] = await table.getMetadata()
      const fields = (metadata.schema?.fields ?? []) as Parameters<typeof stagedTypeOfBigQueryField>[0][]
      return fields.map((f) => ({
        name: String((f as { name?: string }).name),
        type: stagedTypeOfBigQueryField(f),
      }))
    } catch (error) {
      if ((error as ApiError).code === 404) return undefined
      throw this.#apiError(`read the schema of ${this.#name(ref)}`, error)
    }
  }

  /** Not available: BigQuery loads a batch with `loadBatch` into a per-batch table (see mergeBatch). */
  async loadStaging(): Promise<StagedColumn[]> {
    throw new DimsyncError(
      'BigQuery loads staged batches with loadBatch into a per-batch staging table; use mergeBatch, which does',
    )
  }

  async loadBatch(request: LoadBatchRequest): Promise<void> {
    const { table, batchId, stage } = request
    const dataset = this.#client.dataset(this.#dataset(stage), { location: this.#options.location })
    const fields = request.columns.map((c) => ({
      name: c.name,
      type: bigQueryColumnType(c.type, { table: table.name, column: c.name }).replace(/\(.*\)$/, ''),
      description: `${SOURCE_TYPE_PREFIX}${c.type}`,
    }))
    const days = this.#options.stagingExpirationDays ?? 7
    try {
      await dataset.table(stage.name).create({
        schema: { fields },
        expirationTime: String(Date.now() + days * DAY_MS),
        labels: jobLabels(table.name, batchId),
        description: `dimsync: staged batch ${batchId} of table ${table.name}; dropped after the merge`,
      })
    } catch (error) {
      // 409: an earlier attempt created it; its loaded parts are skipped below by their job ids.
      if ((error as ApiError).code !== 409)
        throw this.#apiError(`create staging table ${this.#name(stage)}`, error)
    }
    for (const [part, path] of request.partPaths.entries()) {
      await this.#runOnce(
        (attempt) => jobId('load', table.target, batchId, { part, attempt }),
        (id) => this.#startLoad(id, request, path),
        [{ label: `load part ${part} (${path})`, sql: '' }],
      )
    }
  }

  async runMergeScript(request: MergeScriptRequest): Promise<MergeScriptResult> {
    const { table, batchId, script } = request
    const statements = [...script.ddl, ...script.merge, ...script.after]
    const configuration = {
      query: { query: script.text, useLegacySql: false },
      labels: jobLabels(table.name, batchId),
    }
    if (request.dryRun) {
      const [job] = await this.#client
        .createJob({ location: this.#options.location, configuration: { ...configuration, dryRun: true } })
        .catch((error: unknown) => {
          throw this.#scriptError('dry run', error, statements)
        })
      const metadata = job.metadata as JobResource
      return { bytesProcessed: Number(metadata.statistics?.totalBytesProcessed ?? 0) }
    }
    const { id, metadata } = await this.#runOnce(
      (attempt) => jobId('merge', table.target, batchId, { attempt }),
      async (jobIdentifier) => {
        await this.#client.createJob({
          jobId: jobIdentifier,
          location: this.#options.location,
          configuration,
        })
      },
      statements,
    )
    const [rows] = await this.#client
      .job(id, { location: this.#options.location })
      .getQueryResults({ location: this.#options.location, maxResults: 10, wrapIntegers: INTEGER_VALUES })
    return {
      row: rows[0] === undefined ? undefined : toRow(rows[0] as Record<string, unknown>),
      bytesProcessed: Number(metadata.statistics?.totalBytesProcessed ?? 0),
    }
  }

  /**
   * Runs `work` as one script: the statements it executes, between BEGIN TRANSACTION and COMMIT (or ROLLBACK
   * when `commit` is false). BigQuery runs a script as one job, so results are not available inside it:
   * `tx.query` throws.
   */
  async transaction<T>(
    work: (tx: WarehouseTransaction) => Promise<T>,
    options: { commit: boolean },
  ): Promise<T> {
    const statements: CompiledStatement[] = []
    const result = await work({
      execute: async (statement) => {
        statements.push(statement)
      },
      query: async () => {
        throw new DimsyncError(
          'BigQuery runs a transaction as one script: queries inside it cannot return rows',
        )
      },
    })
    const text = [
      'BEGIN TRANSACTION;',
      ...statements.map((s) => `${s.sql};`),
      options.commit ? 'COMMIT TRANSACTION;' : 'ROLLBACK TRANSACTION;',
    ].join('\n')
    const [job] = await this.#client
      .createJob({
        location: this.#options.location,
        configuration: { query: { query: text, useLegacySql: false } },
      })
      .catch((error: unknown) => {
        throw this.#scriptError('transaction', error, statements)
      })
    const id = (job.metadata as JobResource).jobReference?.jobId ?? job.id!
    const done = await this.#waitForJob(id)
    const failure = done.status?.errorResult
    if (failure) throw jobFailure(id, failure, statements)
    return result
  }

  async query(sql: string): Promise<Row[]> {
    try {
      const [rows] = await this.#client.query({
        query: sql,
        location: this.#options.location,
        useLegacySql: false,
        wrapIntegers: INTEGER_VALUES,
      })
      return (rows as Record<string, unknown>[]).map(toRow)
    } catch (error) {
      throw new WarehouseError('query', sql, { cause: error })
    }
  }

  async close(): Promise<void> {
    // The client holds no connections of its own (HTTP keep-alive sockets close when idle).
  }

  /**
   * Runs the job `makeId(attempt)` once. The latest attempt an earlier call made is looked up first: one that is
   * running or succeeded is that call's answer, lost on the way (a retried Lambda), and is awaited instead of
   * being repeated; one that failed wrote nothing (a failed load loads nothing, a failed merge rolled back), so
   * this call submits the next attempt: a batch refused before is not refused again by replaying the old job
   * once the cause is fixed (`--allow-mass-delete`, a permission granted). A job of this call that fails
   * transiently is retried under the next attempt's id.
   */
  async #runOnce(
    makeId: (attempt: number) => string,
    start: (id: string) => Promise<void>,
    statements: readonly CompiledStatement[],
  ): Promise<{ id: string; metadata: JobResource }> {
    const maxAttempts = this.#options.maxAttempts ?? 5
    const latest = await latestAttempt((attempt) => this.#getJob(makeId(attempt)))
    let attempt = latest?.attempt ?? 1
    let adopted = latest?.job
    if (adopted?.status?.errorResult !== undefined) {
      attempt++
      adopted = undefined
    }
    for (let tries = 1; ; tries++) {
      const id = makeId(attempt)
      const done =
        adopted === undefined ? await this.#submit(id, start, statements) : await this.#finished(id, adopted)
      const failure = done.status?.errorResult
      if (failure === undefined) return { id, metadata: done }
      const error = jobFailure(id, failure, statements)
      // A rejected batch fails the same way every time; only transient failures deserve a new attempt now.
      if (!error.retryable || tries >= maxAttempts) throw error
      await this.#sleep(backoffDelayMs(tries, this.#options.retryDelayMs ?? 1000, Math.random()))
      attempt++
      adopted = undefined
    }
  }

  /** Creates job `id` and waits for it; a 409 means a concurrent attempt created it first: that job is awaited. */
  async #submit(
    id: string,
    start: (id: string) => Promise<void>,
    statements: readonly CompiledStatement[],
  ): Promise<JobResource> {
    try {
      await start(id)
    } catch (error) {
      if ((error as ApiError).code !== 409)
        throw this.#scriptError(statements[0]?.label ?? id, error, statements)
    }
    return this.#waitForJob(id)
  }

  async #finished(id: string, job: JobResource): Promise<JobResource> {
    return job.status?.state === 'DONE' ? job : this.#waitForJob(id)
  }

  async #getJob(id: string): Promise<JobResource | undefined> {
    try {
      const [metadata] = await this.#client.job(id, { location: this.#options.location }).getMetadata()
      return metadata as JobResource
    } catch (error) {
      if ((error as ApiError).code === 404) return undefined
      throw this.#apiError(`read job ${id}`, error)
    }
  }

  async #waitForJob(id: string): Promise<JobResource> {
    const interval = this.#options.pollIntervalMs ?? 1000
    for (;;) {
      const metadata = await this.#getJob(id)
      if (metadata === undefined)
        throw new WarehouseError(`job ${id}`, '', { cause: new Error('job not found') })
      if (metadata.status?.state === 'DONE') return metadata
      await new Promise((resolve) => setTimeout(resolve, interval))
    }
  }

  /** One multipart upload (`/upload/bigquery/v2/projects/P/jobs?uploadType=multipart`): job resource + the Parquet file. */
  async #startLoad(id: string, request: LoadBatchRequest, path: string): Promise<void> {
    const { stage, table, batchId } = request
    const resource = {
      jobReference: { projectId: this.#options.project, jobId: id, location: this.#options.location },
      configuration: {
        labels: jobLabels(table.name, batchId),
        load: {
          destinationTable: {
            projectId: this.#options.project,
            datasetId: this.#dataset(stage),
            tableId: stage.name,
          },
          sourceFormat: 'PARQUET',
          writeDisposition: 'WRITE_APPEND',
          createDisposition: 'CREATE_NEVER',
          parquetOptions: { enableListInference: true },
          decimalTargetTypes: ['NUMERIC', 'BIGNUMERIC'],
        },
      },
    }
    const client = this.#client as unknown as {
      apiEndpoint: string
      makeAuthenticatedRequest(options: object, callback: (error: Error | null, body?: unknown) => void): void
    }
    await new Promise<void>((resolve, reject) => {
      client.makeAuthenticatedRequest(
        {
          method: 'POST',
          uri: `${client.apiEndpoint}/upload/bigquery/v2/projects/${encodeURIComponent(this.#options.project)}/jobs`,
          qs: { uploadType: 'multipart' },
          multipart: [
            { 'Content-Type': 'application/json', body: JSON.stringify(resource) },
            { 'Content-Type': 'application/octet-stream', body: createReadStream(path) },
          ],
          timeout: 0,
        },
        (error) => (error ? reject(error) : resolve()),
      )
    })
  }

  async #sleep(ms: number): Promise<void> {
    if (this.#options.sleep) return this.#options.sleep(ms)
    await new Promise((resolve) => setTimeout(resolve, ms))
  }

  #dataset(ref: TableRef): string {
    if (ref.schema === undefined) throw new DimsyncError(`BigQuery table ${ref.name} needs a dataset`)
    return ref.schema
  }

  #name(ref: TableRef): string {
    return `${this.#options.project}.${ref.schema ?? ''}.${ref.name}`
  }

  #apiError(what: string, error: unknown): WarehouseError {
    return new WarehouseError(what, '', { cause: error })
  }

  /** A failed API call about a job (its insertion): BigQuery's reason and status decide whether it is transient. */
  #scriptError(label: string, error: unknown, statements: readonly CompiledStatement[]): DimsyncError {
    const api = error as ApiError
    const message = api.message ?? String(error)
    return jobFailure(label, { reason: api.errors?.[0]?.reason ?? 'invalid', message }, statements, api.code)
  }
}
