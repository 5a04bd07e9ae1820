import { randomUUID } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { BigQuery, type BigQueryOptions } from '@google-cloud/bigquery'
import type { DimensionColumn } from '../../core/dimension-layout.ts'
import { BatchRejectedError, DimsyncError, WarehouseError } from '../../core/errors.ts'
import type { BatchWork, TransactionWork } from '../../core/batch-work.ts'
import type {
  AppliedWork,
  ApplyOptions,
  ApplyWorkRequest,
  LeaseFence,
  ReadEstimate,
  Row,
  StageBatchRequest,
  StagedBatch,
  StagedBatchName,
  TransactionOptions,
  Warehouse,
  WarehouseBatch,
  WarehouseTransaction,
} from '../../ports/warehouse.ts'
import type { LoadBatchRequest, MergeScriptRequest, MergeScriptResult } from './bigquery-script-job.ts'
import type { BatchParts, StagingStore } from '../../ports/staging-store.ts'
import { FENCE_TABLE, renderFenceAdvance, renderFenceDdl } from '../../sql/render-fence.ts'
import { stagingTableName } from '../../sql/render-merge-script.ts'
import { applyInTransaction, runAlone } from './session-batch-work.ts'
import { bigQueryUncomparableColumns } from '../../sql/bigquery/bigquery-compared-columns.ts'
import { createBigQueryDialect } from '../../sql/bigquery/bigquery-dialect.ts'
import {
  renderColumnTypesDdl,
  renderRecordColumnTypes,
  renderRecordedColumnTypesQuery,
} from '../../sql/bigquery/column-types.ts'
import {
  bigQueryKeyProblem,
  isJsonType,
  loadCasts,
  recordedTypeFits,
  SOURCE_TYPE_PREFIX,
  stagedTypeOfBigQueryField,
  stagingField,
} from '../../sql/bigquery/bigquery-types.ts'
import type { CompiledStatement, SessionScript, SqlDialect, TableRef } from '../../sql/dialect.ts'
import { MAX_QUERY_CHARACTERS, scriptLengthProblem } from '../../sql/bigquery/script-length.ts'
import { standaloneReads } from '../../sql/bigquery/standalone-reads.ts'
import {
  daysOfMs,
  partitionExpirationProblem,
  type PartitionExpiration,
} from '../../sql/bigquery/partition-expiration.ts'
import { dimensionObjects } from '../../sql/render-ddl.ts'
import { closedVersionReads, partitionFilterProblem } from '../../sql/bigquery/partition-filter-reads.ts'
import type { TableSpec } from '../../core/table-spec.ts'
import { assertNoNullArrayElements } from './bigquery-array-elements.ts'
import { jobFailure, NO_RESPONSE, transientReason, type JobError } from './bigquery-errors.ts'
import { backoffDelayMs, latestAttempt } from './bigquery-job-attempts.ts'
import {
  DEFAULT_JOB_TIMEOUT_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_RETRY_DELAY_MS,
  withDeadline,
} from './bigquery-deadlines.ts'
import { jobId, jobLabels } from './bigquery-job-ids.ts'
import {
  DEFAULT_LOAD_CONCURRENCY,
  DEFAULT_LOAD_GROUP_BYTES,
  groupFile,
  inParallel,
  partsOnDisk,
  planLoadGroups,
} from './bigquery-load-groups.ts'
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
  /** Milliseconds a job is awaited before the call gives up, leaving it running for the retry (default 600,000). */
  readonly jobTimeoutMs?: number
  /**
   * Milliseconds one API call (a job's insertion or status, a table's metadata, a page of results) may go
   * unanswered before it is abandoned and tried again, up to `maxAttempts` in all (default 30,000). See
   * bigquery-deadlines.ts for the longest wait that follows.
   */
  readonly requestTimeoutMs?: number
  /** Milliseconds an upload of one part may take before it is retried (default 300,000). */
  readonly uploadTimeoutMs?: number
  /** Parts are combined into one load job up to this many bytes (default 256 MiB; see bigquery-load-groups.ts). */
  readonly loadGroupBytes?: number
  /** Load jobs of one batch run at once (default 2). */
  readonly loadConcurrency?: number
  /**
   * Merge into a dimension whose partitions expire (its own setting, or the dataset's default): BigQuery then
   * deletes closed versions. Refused unless set (`warehouse.allow_partition_expiration`); a plan warns either way.
   */
  readonly allowPartitionExpiration?: boolean
  /** Test seam: how a wait between attempts is done (default a timer). */
  readonly sleep?: (ms: number) => Promise<void>
}

interface JobResource {
  readonly jobReference?: { readonly jobId?: string; readonly location?: string }
  readonly status?: { readonly state?: string; readonly errorResult?: JobError; readonly errors?: JobError[] }
  readonly statistics?: {
    readonly totalBytesProcessed?: string
    readonly query?: { totalBytesProcessed?: string }
    readonly sessionInfo?: { readonly sessionId?: string }
  }
}

interface ApiError {
  readonly code?: number
  readonly message?: string
  readonly errors?: readonly { readonly reason?: string }[]
}

const DAY_MS = 86_400_000
const DEFAULT_UPLOAD_TIMEOUT_MS = 300_000
/** First wait between status polls of a job; doubles up to pollIntervalMs (short jobs answer sooner). */
const FIRST_POLL_MS = 50

/** A request that got no answer: the connection failed or timed out (the client's errors carry a `type`). */
function isNoResponse(error: unknown): boolean {
  const type = (error as { type?: unknown }).type
  return type === 'request-timeout' || type === 'system'
}

/**
 * An API call worth trying again: no answer, a 5xx or 429, or one of BigQuery's transient reasons (a 403
 * rateLimitExceeded among them, which the client does not retry itself).
 */
function isTransientCall(error: unknown): boolean {
  if (isNoResponse(error)) return true
  const api = error as ApiError
  return transientReason(api.errors?.[0]?.reason, api.message ?? '', api.code) !== undefined
}

/** A query job that ended with an error, shaped as the client's API errors are (`errors[0].reason`). */
class QueryJobError extends Error {
  readonly errors: readonly JobError[]
  constructor(jobId: string, error: JobError) {
    super(`BigQuery job ${jobId} failed (${error.reason ?? 'unknown'}): ${error.message ?? ''}`)
    this.errors = [error]
  }
}

/**
 * BigQuery as the warehouse. Building it makes no network call (the client authenticates lazily on the first
 * request). Every job gets a deterministic id, labels naming the table and batch, and the dataset's location.
 * A merge is one multi-statement script job (see renderMergeScript); a staged batch is loaded from the
 * local Parquet parts (BigQuery cannot read S3) into a per-batch staging table, consecutive parts combined into
 * one load job of up to 256 MiB, two jobs at once.
 */
export class BigQueryWarehouse implements Warehouse<SqlDialect> {
  readonly dialect: SqlDialect
  readonly #client: BigQuery
  /**
   * The client that uploads parts, with its own retries off: it would send a request that got no answer again with
   * the part's stream already read, an upload that never ends (see #startLoad, which retries with the part reopened).
   */
  readonly #uploadClient: BigQuery
  readonly #options: BigQueryWarehouseOptions
  /** Datasets found or created by createSchemaIfMissing. */
  readonly #knownDatasets = new Set<string>()

  constructor(options: BigQueryWarehouseOptions) {
    this.#options = options
    this.dialect = createBigQueryDialect({ project: options.project })
    const clientOptions = {
      projectId: options.project,
      location: options.location,
      ...(options.apiEndpoint ? { apiEndpoint: options.apiEndpoint } : {}),
      ...(options.authClient ? { authClient: options.authClient } : {}),
      ...(options.credentials ? { credentials: { ...options.credentials } } : {}),
    }
    // `timeout` is the client's per-request socket timeout (ServiceOptions; BigQueryOptions does not name it).
    // Each request gives up after requestTimeoutMs; dimsync retries it (#call), the client does not.
    const requestTimeout = { timeout: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS }
    this.#client = new BigQuery({ ...clientOptions, ...requestTimeout, retryOptions: { autoRetry: false } })
    // An upload is bounded by uploadTimeoutMs instead (#upload), which a large part may need. (The client throws
    // when given both autoRetry and retryOptions.autoRetry: only the second is set.)
    this.#uploadClient = new BigQuery({
      ...clientOptions,
      retryOptions: { autoRetry: false },
    })
  }

  /**
   * Columns of a table, or undefined if absent. Their staged types are the ones recorded for the dimension (see
   * column-types.ts) where the column's BigQuery type still fits the record; a column with none recorded (a table
   * an earlier version wrote) or rewritten since takes the type from its description when an earlier version
   * wrote it there, else from its BigQuery type.
   */
  async describeTable(ref: TableRef): Promise<DimensionColumn[] | undefined> {
    const table = this.#client
      .dataset(this.#dataset(ref), { location: this.#options.location })
      .table(ref.name)
    let fields: Parameters<typeof stagedTypeOfBigQueryField>[0][]
    try {
      const [metadata] = await this.#call(`read the schema of ${this.#name(ref)}`, () => table.getMetadata())
      fields = (metadata.schema?.fields ?? []) as typeof fields
    } catch (error) {
      if ((error as ApiError).code === 404) return undefined
      throw this.#apiError(`read the schema of ${this.#name(ref)}`, error)
    }
    const recorded = await this.#recordedColumnTypes(ref)
    return fields.map((f) => {
      const name = String((f as { name?: string }).name)
      const type = recorded?.get(name)
      return {
        name,
        type: type !== undefined && recordedTypeFits(type, f) ? type : stagedTypeOfBigQueryField(f),
        ...((f as { mode?: string }).mode === 'REQUIRED' ? { notNull: true } : {}),
      }
    })
  }

  /**
   * Creates the dataset in the warehouse's location when it does not exist. Credentials that may not create
   * datasets (bigquery.datasets.create) get the statement to run instead; nothing was written.
   */
  async createSchemaIfMissing(schema: string): Promise<void> {
    if (this.#knownDatasets.has(schema)) return
    const { location, project } = this.#options
    const dataset = this.#client.dataset(schema, { location })
    let exists: boolean
    try {
      ;[exists] = await this.#call(`check that dataset ${project}.${schema} exists`, () => dataset.exists())
    } catch (error) {
      throw this.#apiError(`check that dataset ${project}.${schema} exists`, error)
    }
    if (!exists) {
      try {
        await this.#call(`create dataset ${project}.${schema}`, () =>
          this.#client.createDataset(schema, { location }),
        )
      } catch (error) {
        const code = (error as ApiError).code
        if (code === 403 || code === 401) {
          const d = this.dialect
          throw new DimsyncError(
            `dataset ${project}.${schema} (warehouse.schema) does not exist, and these credentials may not ` +
              `create it (${(error as ApiError).message ?? 'permission denied'}); nothing was written. Create it ` +
              `with: CREATE SCHEMA ${d.quoteIdentifier(project)}.${d.quoteIdentifier(schema)} OPTIONS (location = ` +
              `${d.stringLiteral(location)})`,
          )
        }
        // Created meanwhile by another run.
        if (code !== 409) throw this.#apiError(`create dataset ${project}.${schema}`, error)
      }
    }
    this.#knownDatasets.add(schema)
  }

  /** The staged types recorded for the columns of `dimension`; undefined when nothing was ever recorded. */
  async #recordedColumnTypes(dimension: TableRef): Promise<Map<string, string> | undefined> {
    try {
      const rows = await this.#runQuery(
        renderRecordedColumnTypesQuery(this.dialect, dimension),
        `read the column types recorded for ${this.#name(dimension)}`,
      )
      return new Map(
        (rows as Record<string, unknown>[]).map((r) => [String(r.column_name), String(r.source_type)]),
      )
    } catch (error) {
      const api = error as ApiError
      if (api.code === 404 || api.errors?.[0]?.reason === 'notFound') return undefined
      throw this.#apiError(`read the column types recorded for ${this.#name(dimension)}`, error)
    }
  }

  /** Records the staged types of the dimension's columns that are not recorded yet (or changed): usually none. */
  async #recordColumnTypes(dimension: TableRef, columns: readonly DimensionColumn[]): Promise<void> {
    const recorded = await this.#recordedColumnTypes(dimension)
    const changed = columns.filter((c) => recorded?.get(c.name) !== c.type)
    if (changed.length === 0) return
    const statements = [
      ...(recorded === undefined ? [renderColumnTypesDdl(this.dialect, dimension)] : []),
      renderRecordColumnTypes(this.dialect, dimension, changed),
    ]
    for (const sql of statements) {
      try {
        await this.#runQuery(sql, `record the column types of ${this.#name(dimension)}`)
      } catch (error) {
        throw new WarehouseError(`record the column types of ${this.#name(dimension)}`, sql, {
          cause: error,
          retryable: isTransientCall(error) || (error instanceof DimsyncError && error.retryable),
        })
      }
    }
  }

  /**
   * Loads the parts into the batch's staging table, then proves the load complete: the table must hold the
   * manifest's row count (the same proof the extract gives). The staging table is a copy of the staged batch
   * that expires (`stagingExpirationDays` after the last attempt touched it): a batch that waited longer (refused,
   * or its merge failed) finds it gone, or re-created empty while every part's load job is already done; it is
   * then reloaded from the parts under new job ids. A count that still differs fails retryably.
   */
  async loadBatch(request: LoadBatchRequest): Promise<void> {
    assertComparableKeys(request)
    const parts = 'parts' in request ? request.parts : await partsOnDisk(request.partPaths)
    const groups = planLoadGroups(parts.bytes, this.#options.loadGroupBytes ?? DEFAULT_LOAD_GROUP_BYTES)
    const loadAll = (mode: 'adopt' | 'reload') =>
      inParallel(groups, this.#options.loadConcurrency ?? DEFAULT_LOAD_CONCURRENCY, (indexes, group) =>
        this.#loadGroup(request, group, parts, indexes, mode),
      )
    await this.#createStage(request)
    await loadAll('adopt')
    if ((await this.#stagedRows(request.stage)) === request.rowCount) return await this.#parseJson(request)
    await this.#dropStage(request.stage)
    await this.#createStage(request)
    await loadAll('reload')
    const staged = await this.#stagedRows(request.stage)
    if (staged === request.rowCount) return await this.#parseJson(request)
    const { table, batchId } = request
    throw new WarehouseError(`load batch ${batchId}`, '', {
      cause: new Error(
        `staging table ${this.#name(request.stage)} holds ${staged} rows after reloading every part, but batch ` +
          `${batchId} of table ${table.name} has ${request.rowCount} (its manifest); nothing was merged`,
      ),
      retryable: true,
    })
  }

  /**
   * JSON columns are loaded as text (see stagingField): once the batch is complete, the staging table is rewritten
   * with them parsed, so the merge reads JSON. An earlier attempt may have parsed them already: nothing is left
   * to do then. The sources stage BigQuery's canonical text (lib/core/canonical-json.ts), so parsing keeps it.
   */
  async #parseJson(request: LoadBatchRequest): Promise<void> {
    const json = request.columns.filter((c) => isJsonType(c.type)).map((c) => c.name)
    if (json.length === 0) return
    const { stage } = request
    const stageTable = this.#client
      .dataset(this.#dataset(stage), { location: this.#options.location })
      .table(stage.name)
    const [metadata] = await this.#call(`read the schema of staging table ${this.#name(stage)}`, () =>
      stageTable.getMetadata(),
    ).catch((error: unknown) => {
      throw this.#apiError(`read the schema of staging table ${this.#name(stage)}`, error)
    })
    const fields = ((metadata as { schema?: { fields?: { name: string; type: string }[] } }).schema?.fields ??
      []) as { name: string; type: string }[]
    const unparsed = json.filter((name) => fields.find((f) => f.name === name)?.type === 'STRING')
    if (unparsed.length === 0) return
    const d = this.dialect
    const expires = this.#stagingExpiresAt()
    const parsed = unparsed.map(
      (name) => `PARSE_JSON(${d.quoteIdentifier(name)}) AS ${d.quoteIdentifier(name)}`,
    )
    const sql =
      `CREATE OR REPLACE TABLE ${d.table(stage)}
OPTIONS (expiration_timestamp = TIMESTAMP_MILLIS(${expires}))
` + `AS SELECT * REPLACE (${parsed.join(', ')}) FROM ${d.table(stage)}`
    try {
      await this.#runQuery(sql, `parse the JSON columns of staging table ${this.#name(stage)}`)
    } catch (error) {
      throw this.#apiError(`parse the JSON columns of staging table ${this.#name(stage)}`, error)
    }
  }

  /** When a staging table touched now expires (epoch milliseconds): `stagingExpirationDays` from now. */
  #stagingExpiresAt(): number {
    return Date.now() + (this.#options.stagingExpirationDays ?? 7) * DAY_MS
  }

  /** Creates the staging table; one an earlier attempt created gets its expiration pushed back instead. */
  async #createStage(request: LoadBatchRequest): Promise<void> {
    const { table, batchId, stage } = request
    const dataset = this.#client.dataset(this.#dataset(stage), { location: this.#options.location })
    const fields = request.columns.map((c) => ({
      name: c.name,
      ...stagingField(c.type, { table: table.name, column: c.name }),
      description: `${SOURCE_TYPE_PREFIX}${c.type}`,
    }))
    const expirationTime = String(this.#stagingExpiresAt())
    try {
      await this.#call(`create staging table ${this.#name(stage)}`, () =>
        dataset.table(stage.name).create({
          schema: { fields },
          expirationTime,
          labels: jobLabels(table.name, batchId),
          description: `dimsync: staged batch ${batchId} of table ${table.name}; dropped after the merge`,
        }),
      )
    } catch (error) {
      if ((error as ApiError).code !== 409)
        throw this.#apiError(`create staging table ${this.#name(stage)}`, error)
      await this.#call(`extend the expiration of staging table ${this.#name(stage)}`, () =>
        dataset.table(stage.name).setMetadata({ expirationTime }),
      ).catch((patchError: unknown) => {
        throw this.#apiError(`extend the expiration of staging table ${this.#name(stage)}`, patchError)
      })
    }
  }

  /**
   * One group's load job (its parts as one file, see bigquery-load-groups.ts). `adopt`: a job an earlier attempt
   * ran for this group is adopted (its rows are in the table, unless the table was re-created since: the row
   * count tells). `reload`: a new attempt, always. The group's parts are fetched (downloaded from S3) and its file
   * written only when a job is submitted, and both are freed once it is: /tmp holds the groups in flight, never
   * the whole batch. Each attempt fetches afresh.
   */
  async #loadGroup(
    request: LoadBatchRequest,
    group: number,
    parts: BatchParts,
    indexes: readonly number[],
    mode: 'adopt' | 'reload',
  ): Promise<void> {
    const { table, batchId } = request
    await this.#runOnce(
      (attempt) => jobId('load', table.target, batchId, { part: group, attempt }),
      async (id) => {
        const local = await parts.fetch(indexes)
        try {
          await assertNoNullArrayElements(local.paths, request)
          const file = await groupFile(local.paths, loadCasts(request.columns))
          try {
            await this.#startLoad(id, request, file.path)
          } finally {
            await file.release()
          }
        } finally {
          await local.release()
        }
      },
      [{ label: `load parts ${indexes.map((index) => parts.names[index]).join(', ')}`, sql: '' }],
      mode === 'reload',
    )
  }

  async #stagedRows(stage: TableRef): Promise<number> {
    try {
      const stageTable = this.#client
        .dataset(this.#dataset(stage), { location: this.#options.location })
        .table(stage.name)
      const [metadata] = await this.#call(`count the rows of staging table ${this.#name(stage)}`, () =>
        stageTable.getMetadata(),
      )
      return Number((metadata as { numRows?: string }).numRows ?? 0)
    } catch (error) {
      if ((error as ApiError).code === 404) return 0
      throw this.#apiError(`count the rows of staging table ${this.#name(stage)}`, error)
    }
  }

  async #dropStage(stage: TableRef): Promise<void> {
    try {
      const stageTable = this.#client
        .dataset(this.#dataset(stage), { location: this.#options.location })
        .table(stage.name)
      await this.#call(`drop staging table ${this.#name(stage)}`, () => stageTable.delete())
    } catch (error) {
      if ((error as ApiError).code !== 404)
        throw this.#apiError(`drop staging table ${this.#name(stage)}`, error)
    }
  }

  /**
   * Runs the script as one query job (job id derived from table and batch; an existing job is awaited, not
   * repeated). Dry run: validates it and returns the bytes BigQuery estimates it would process, then drops the
   * staging table (a plan leaves nothing behind).
   * Throws BatchRejectedError / MassDeleteRefusedError for dimsync's checks, WarehouseError otherwise.
   */
  async runMergeScript(request: MergeScriptRequest): Promise<MergeScriptResult> {
    const { table, batchId, script } = request
    const statements = [...script.ddl, ...script.merge, ...script.after]
    const tooLong = scriptLengthProblem(table.name, script, request.columns?.length)
    if (tooLong !== undefined) {
      // The staging table was loaded only for this script: nothing is left behind.
      await this.#dropStage(request.stage)
      throw new DimsyncError(tooLong)
    }
    const dataset = this.#dataset(request.stage)
    const partitions = await this.#partitionSettings(table, dataset)
    const unfiltered = partitions.requiresFilter
      ? partitionFilterProblem(
          table.name,
          { project: this.#options.project, dataset, name: table.target },
          closedVersionReads(script, this.dialect.table({ schema: dataset, name: table.target })),
        )
      : undefined
    if (unfiltered !== undefined && !request.dryRun) {
      await this.#dropStage(request.stage)
      throw new DimsyncError(unfiltered)
    }
    const expiring = partitionExpirationProblem(table.name, partitions.expirations)
    if (expiring !== undefined && !request.dryRun && this.#options.allowPartitionExpiration !== true) {
      await this.#dropStage(request.stage)
      throw new DimsyncError(expiring)
    }
    // A plan says what the run would refuse (or, accepted, lose) and goes on.
    const problems = [unfiltered, expiring].filter((p): p is string => p !== undefined)
    const warnings = problems.length === 0 ? {} : { warnings: problems }
    const configuration = {
      query: { query: script.text, useLegacySql: false },
      labels: jobLabels(table.name, batchId),
    }
    if (request.dryRun) {
      const reads = await this.#estimateReads(table.name, statements)
      // The staging table was loaded only to be read by the dry runs: a plan leaves nothing behind.
      await this.#dropStage(request.stage)
      return {
        bytesProcessed: reads.reduce((sum, read) => sum + ('bytes' in read ? read.bytes : 0), 0),
        reads,
        ...warnings,
      }
    }
    // Before the script: its DDL (columns added) stays when its transaction fails, and so do these types.
    if (request.columns !== undefined)
      await this.#recordColumnTypes({ schema: request.stage.schema, name: table.target }, request.columns)
    if (script.text.length > MAX_QUERY_CHARACTERS && script.session !== undefined)
      return this.#runSessionMerge(request, script.session, statements)
    const { id, metadata } = await this.#runOnce(
      (attempt) => jobId('merge', table.target, batchId, { attempt }),
      async (jobIdentifier) => {
        // Tried again under the same id when unanswered: a 409 then means it arrived, and #submit adopts it.
        await this.#call(`submit job ${jobIdentifier}`, () =>
          this.#client.createJob({ jobId: jobIdentifier, location: this.#options.location, configuration }),
        )
      },
      statements,
    )
    return {
      row: await this.#firstRow(id),
      bytesProcessed: Number(metadata.statistics?.totalBytesProcessed ?? 0),
    }
  }

  /** The first row of done job `id`'s result (a merge's counts). */
  async #firstRow(id: string): Promise<Row | undefined> {
    const job = this.#client.job(id, { location: this.#options.location })
    const [rows] = await this.#call(`read the result of job ${id}`, () =>
      job.getQueryResults({
        location: this.#options.location,
        maxResults: 10,
        autoPaginate: false,
        wrapIntegers: INTEGER_VALUES,
      }),
    ).catch((error: unknown) => {
      // The merge is done (committed, or its batch found in the ledger): a retry reads the ledger first.
      throw this.#apiError(`read the result of job ${id}`, error)
    })
    return rows[0] === undefined ? undefined : toRow(rows[0] as Record<string, unknown>)
  }

  /**
   * A merge too long for one query (SessionScript) runs as the queries of one session, one after another, under
   * deterministic ids: attempt `a`, part 0 the ledger check, parts 1…n the merge (its transaction begun in the
   * first and committed in part n), part n+1 the answer of a batch already merged. A call first finds the latest
   * attempt: its part n (or n+1) running or done is that call's answer, lost on the way, and is awaited, not
   * repeated. Any other state of it (a part failed, or a crash cut the sequence short) committed nothing: its
   * session is ended, which rolls back a transaction it left open, and the next attempt starts over with the
   * ledger check, so a batch committed meanwhile is answered from the ledger, never merged twice. A part that
   * fails transiently ends its session and the merge starts over, `maxAttempts` times in all; a part still
   * running after `jobTimeoutMs` is left running (the error is retryable, and the retry adopts or ends it).
   */
  async #runSessionMerge(
    request: MergeScriptRequest,
    session: SessionScript,
    statements: readonly CompiledStatement[],
  ): Promise<MergeScriptResult> {
    const { table, batchId } = request
    const id = (attempt: number, part: number) => jobId('merge', table.target, batchId, { attempt, part })
    const lastPart = session.jobs.length
    const latest = await latestAttempt((attempt) => this.#getJob(id(attempt, 0)))
    if (latest !== undefined) {
      for (const part of [lastPart, lastPart + 1]) {
        const job = await this.#getJob(id(latest.attempt, part))
        if (job === undefined || job.status?.errorResult !== undefined) continue
        const done = await this.#finished(id(latest.attempt, part), job)
        if (done.status?.errorResult !== undefined) break
        return {
          row: await this.#firstRow(id(latest.attempt, part)),
          bytesProcessed: Number(done.statistics?.totalBytesProcessed ?? 0),
        }
      }
      await this.#endSession(latest.job.statistics?.sessionInfo?.sessionId)
    }
    const maxAttempts = this.#options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
    for (let tries = 1, attempt = (latest?.attempt ?? 0) + 1; ; tries++, attempt++) {
      const outcome = await this.#sessionAttempt(request, session, statements, (part) => id(attempt, part))
      if ('result' in outcome) return outcome.result
      if (!outcome.failed.retryable || tries >= maxAttempts) throw outcome.failed
      await this.#sleep(
        backoffDelayMs(tries, this.#options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS, Math.random()),
      )
    }
  }

  /**
   * One attempt of a session merge: the ledger check in a new session, then the merge's queries (or the
   * committed batch's answer) in it. A part that fails ends the session and is answered as `failed`.
   */
  async #sessionAttempt(
    request: MergeScriptRequest,
    session: SessionScript,
    statements: readonly CompiledStatement[],
    id: (part: number) => string,
  ): Promise<{ result: MergeScriptResult } | { failed: DimsyncError }> {
    const { location } = this.#options
    const labels = jobLabels(request.table.name, request.batchId)
    let sessionId: string | undefined
    let bytes = 0
    const run = async (part: number, sql: string): Promise<string | DimsyncError> => {
      const query = {
        query: sql,
        useLegacySql: false,
        ...(sessionId === undefined
          ? { createSession: true }
          : { connectionProperties: [{ key: 'session_id', value: sessionId }] }),
      }
      const jobIdentifier = id(part)
      try {
        await this.#call(`submit job ${jobIdentifier}`, () =>
          this.#client.createJob({ jobId: jobIdentifier, location, configuration: { query, labels } }),
        )
      } catch (error) {
        // 409: an insertion whose answer was lost arrived; the job is awaited. Else it was refused and did not run.
        if ((error as ApiError).code !== 409)
          return this.#scriptError(statements[0]?.label ?? jobIdentifier, error, statements)
      }
      // A wait that ends without an answer throws: the session is left to the retry, which adopts or ends it.
      const done = await this.#waitForJob(jobIdentifier)
      sessionId ??= done.statistics?.sessionInfo?.sessionId
      bytes += Number(done.statistics?.totalBytesProcessed ?? 0)
      const failure = done.status?.errorResult
      return failure === undefined ? id(part) : jobFailure(id(part), failure, statements)
    }
    const parts = async (): Promise<string | DimsyncError> => {
      const check = await run(0, session.ledgerCheck)
      if (typeof check !== 'string') return check
      const committed = (await this.#firstRow(check))?.committed === true
      const queries = committed ? [session.committed] : session.jobs
      const first = committed ? session.jobs.length + 1 : 1
      let last: string | DimsyncError = check
      for (const [i, sql] of queries.entries()) {
        last = await run(first + i, sql)
        if (typeof last !== 'string') return last
      }
      return last
    }
    const outcome = await parts()
    if (typeof outcome !== 'string') {
      await this.#endSession(sessionId)
      return { failed: outcome }
    }
    const row = await this.#firstRow(outcome)
    // Its temporary tables are of no further use: ending the session frees them now, not in 24 hours.
    await this.#endSession(sessionId)
    return { result: { row, bytesProcessed: bytes } }
  }

  /**
   * Ends a session (`CALL BQ.ABORT_SESSION()`), rolling back a transaction it left open. Best effort: a session
   * already ended, or a call that fails, leaves BigQuery to end it (its transaction commits nothing either way).
   */
  async #endSession(sessionId: string | undefined): Promise<void> {
    if (sessionId === undefined) return
    const id = `dimsync_end_session_${randomUUID().replaceAll('-', '_')}`
    try {
      await this.#call(`submit job ${id}`, () =>
        this.#client.createJob({
          jobId: id,
          location: this.#options.location,
          configuration: {
            query: {
              query: 'CALL BQ.ABORT_SESSION();',
              useLegacySql: false,
              connectionProperties: [{ key: 'session_id', value: sessionId }],
            },
          },
        }),
      )
      await this.#waitForJob(id)
    } catch {
      // Nothing to do: see above.
    }
  }

  /**
   * The partition expirations that would delete the table's closed history: each of its partitioned tables' own,
   * and for one not created yet, the dataset's default (BigQuery copies it to a partitioned table at creation);
   * and whether the dimension requires a partition filter (`require_partition_filter`).
   */
  async #partitionSettings(
    table: TableSpec,
    dataset: string,
  ): Promise<{ expirations: PartitionExpiration[]; requiresFilter: boolean }> {
    const objects = dimensionObjects(table, dataset)
    const partitioned = [
      { role: 'dimension', name: objects.dimension.name },
      ...(objects.captures === undefined ? [] : [{ role: 'capture log', name: objects.captures.name }]),
    ]
    const { project, location } = this.#options
    const found: PartitionExpiration[] = []
    let requiresFilter = false
    let notCreated: (typeof partitioned)[number] | undefined
    for (const object of partitioned) {
      const what = `read the partition expiration of ${project}.${dataset}.${object.name}`
      try {
        const [metadata] = await this.#call(what, () =>
          this.#client.dataset(dataset, { location }).table(object.name).getMetadata(),
        )
        const settings = metadata as {
          timePartitioning?: { expirationMs?: string }
          requirePartitionFilter?: boolean
        }
        if (object.role === 'dimension' && settings.requirePartitionFilter === true) requiresFilter = true
        const ms = settings.timePartitioning?.expirationMs
        if (ms !== undefined && Number(ms) > 0)
          found.push({ kind: 'table', ...object, project, dataset, days: daysOfMs(Number(ms)) })
      } catch (error) {
        if ((error as ApiError).code !== 404) throw this.#apiError(what, error)
        notCreated ??= object
      }
    }
    if (notCreated !== undefined) {
      const what = `read the default partition expiration of dataset ${project}.${dataset}`
      const [metadata] = await this.#call(what, () =>
        this.#client.dataset(dataset, { location }).getMetadata(),
      ).catch((error: unknown) => {
        throw this.#apiError(what, error)
      })
      const ms = (metadata as { defaultPartitionExpirationMs?: string }).defaultPartitionExpirationMs
      if (ms !== undefined && Number(ms) > 0)
        found.push({ kind: 'dataset', ...notCreated, project, dataset, days: daysOfMs(Number(ms)) })
    }
    return { expirations: found, requiresFilter }
  }

  /**
   * Prices each read of a merge script with its own dry run (see standalone-reads.ts): BigQuery's dry run of the
   * whole script stops after its first DDL statement and would estimate next to nothing. A read of a table that
   * does not exist yet (the dimension, before its first load) cannot be priced either; any other refusal fails
   * the plan, as the script would fail.
   */
  async #estimateReads(table: string, statements: readonly CompiledStatement[]): Promise<ReadEstimate[]> {
    const estimates: ReadEstimate[] = []
    for (const read of standaloneReads(statements)) {
      if (!('sql' in read)) {
        estimates.push(read)
        continue
      }
      try {
        const [job] = await this.#call(`dry run of ${read.label} (${table})`, () =>
          this.#client.createJob({
            location: this.#options.location,
            configuration: { dryRun: true, query: { query: read.sql, useLegacySql: false } },
          }),
        )
        const metadata = job.metadata as JobResource
        estimates.push({ label: read.label, bytes: Number(metadata.statistics?.totalBytesProcessed ?? 0) })
      } catch (error) {
        const api = error as ApiError
        const message = api.message ?? ''
        // A read BigQuery refuses for the dimension's require_partition_filter: the plan's warning says so.
        if (/^Cannot query over table .* without a filter over column/.test(message))
          estimates.push({ label: read.label, notEstimable: `BigQuery refuses it: ${message}` })
        else if (api.errors?.[0]?.reason === 'notFound')
          estimates.push({
            label: read.label,
            notEstimable: `reads a table the script creates (${message || 'not found'})`,
          })
        else throw this.#scriptError(read.label, error, [{ label: read.label, sql: read.sql }])
      }
    }
    return estimates
  }

  /**
   * Runs `work` as one script: the statements it executes, between BEGIN TRANSACTION and COMMIT (or ROLLBACK
   * when `commit` is false). BigQuery runs a script as one job, so results are not available inside it:
   * `tx.query` throws.
   */
  async transaction<T>(
    work: (tx: WarehouseTransaction) => Promise<T>,
    options: TransactionOptions,
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
    const id = `dimsync_transaction_${randomUUID().replaceAll('-', '_')}`
    await this.#submitQuery(id, text).catch((error: unknown) => {
      throw this.#scriptError('transaction', error, statements)
    })
    const done = await this.#waitForJob(id)
    const failure = done.status?.errorResult
    if (failure) throw jobFailure(id, failure, statements)
    return result
  }

  async query(sql: string): Promise<Row[]> {
    try {
      return (await this.#runQuery(sql, 'query')).map(toRow)
    } catch (error) {
      throw new WarehouseError('query', sql, {
        cause: error,
        retryable: isTransientCall(error) || (error instanceof DimsyncError && error.retryable),
      })
    }
  }

  /**
   * Runs one query job and answers its rows: submitted under a fresh id (tried again under the same id when
   * unanswered, a 409 meaning it arrived), awaited like every job (jobTimeoutMs), its rows read once it is done.
   * A failed job throws a QueryJobError carrying BigQuery's reason.
   */
  async #runQuery(sql: string, what: string): Promise<Record<string, unknown>[]> {
    const id = `dimsync_query_${randomUUID().replaceAll('-', '_')}`
    await this.#submitQuery(id, sql)
    const done = await this.#waitForJob(id)
    const failure = done.status?.errorResult
    if (failure !== undefined) throw new QueryJobError(id, failure)
    const job = this.#client.job(id, { location: this.#options.location })
    // Every page, each page a call with its deadline; the job is done, so BigQuery answers at once.
    const [rows] = await this.#call(
      `read the result of ${what}`,
      () => job.getQueryResults({ location: this.#options.location, wrapIntegers: INTEGER_VALUES }),
      this.#options.jobTimeoutMs ?? DEFAULT_JOB_TIMEOUT_MS,
    )
    return rows as Record<string, unknown>[]
  }

  /** Inserts query job `id`; one whose first insertion arrived unanswered is found by its id (409). */
  async #submitQuery(id: string, sql: string): Promise<void> {
    try {
      await this.#call(`submit job ${id}`, () =>
        this.#client.createJob({
          jobId: id,
          location: this.#options.location,
          configuration: { query: { query: sql, useLegacySql: false } },
        }),
      )
    } catch (error) {
      const api = error as ApiError
      if (api.code === 409) return
      // A query BigQuery refuses at insertion (invalid SQL, a table not found): the job exists, failed.
      if (api.code !== undefined && api.code < 500 && api.errors?.[0] !== undefined)
        throw new QueryJobError(id, { reason: api.errors[0].reason, message: api.message ?? '' })
      throw error
    }
  }

  /**
   * One API call with its deadline (requestTimeoutMs, or `deadlineMs` for a call that may page), tried again
   * while it fails transiently (no answer, 5xx, 429), `maxAttempts` times in all; the last error is thrown.
   */
  async #call<T>(what: string, work: () => Promise<T>, deadlineMs?: number): Promise<T> {
    const maxAttempts = this.#options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
    const deadline = deadlineMs ?? this.#options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
    for (let tries = 1; ; tries++) {
      try {
        return await withDeadline(work(), deadline, what)
      } catch (error) {
        if (!isTransientCall(error) || tries >= maxAttempts) throw error
        await this.#sleep(
          backoffDelayMs(tries, this.#options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS, Math.random()),
        )
      }
    }
  }

  runAlone(
    statement: CompiledStatement,
    options?: Pick<TransactionOptions, 'onMemoryRaised'>,
  ): Promise<void> {
    return runAlone(this, statement, options)
  }

  /** DDL before the transaction (BigQuery refuses it inside one), the statements as one script; no report. */
  applyInTransaction(work: TransactionWork, options: ApplyOptions): Promise<AppliedWork> {
    return applyInTransaction(this, work, options)
  }

  /** Parts are fetched group by group as the load jobs need them (a function's /tmp is smaller than a batch). */
  async openBatch(staging: StagingStore, batch: StagedBatchName): Promise<WarehouseBatch> {
    const opened = await staging.openBatchOnDemand(batch.table, batch.batchId)
    return { manifest: opened.manifest, opened, release: async () => {} }
  }

  /** Moves the lease fence up first (`request.fence`), then loads the parts into the batch's staging table. */
  async stageBatch(batch: WarehouseBatch, request: StageBatchRequest): Promise<StagedBatch> {
    const { table, batchId } = request
    const stage = { schema: request.schema, name: stagingTableName(table.target, batchId) }
    const { manifest, opened } = batch
    if (request.fence !== undefined) await this.#advanceFence(request, request.fence)
    await this.loadBatch({
      table,
      batchId,
      stage,
      ...('parts' in opened ? { parts: opened.parts } : { partPaths: opened.partPaths }),
      columns: manifest.columns,
      rowCount: manifest.rowCount,
    })
    return { columns: manifest.columns, stage }
  }

  async dropStaged(staged: StagedBatch): Promise<void> {
    if (staged.stage !== undefined) await this.query(this.dialect.dropTableIfExists(staged.stage))
  }

  /** The work as one script job (runMergeScript), which drops the staging table. */
  async applyWork(work: BatchWork, request: ApplyWorkRequest): Promise<AppliedWork> {
    const { stage } = request.staged
    if (stage === undefined)
      throw new DimsyncError(
        `table ${request.table.name}: batch ${request.batchId} was not staged by BigQuery`,
      )
    const script = work.asScript()
    if (!request.dryRun) await request.beforeCommit?.()
    const result = await this.runMergeScript({
      table: request.table,
      batchId: request.batchId,
      script,
      stage,
      dryRun: request.dryRun,
      ...(request.columns !== undefined ? { columns: request.columns } : {}),
    })
    return {
      ...(result.row !== undefined ? { row: result.row } : {}),
      statements: [...script.ddl, ...script.merge, ...script.after],
      ...(result.bytesProcessed !== undefined ? { bytesProcessed: result.bytesProcessed } : {}),
      ...(result.reads !== undefined ? { reads: result.reads } : {}),
      ...(result.warnings !== undefined ? { warnings: result.warnings } : {}),
    }
  }

  /**
   * Moves the table's lease fence up to this holder's token before its merge (one transaction; never down), so a
   * holder whose lease lapsed finds the fence past its token at COMMIT (render-fence.ts).
   */
  async #advanceFence(request: StageBatchRequest, fence: LeaseFence): Promise<void> {
    const fences = { schema: request.schema, name: FENCE_TABLE }
    await this.runAlone(renderFenceDdl(this.dialect, fences))
    const statements = renderFenceAdvance(this.dialect, fences, request.table.target, fence.holder, fence.at)
    await this.transaction(
      async (tx) => {
        for (const statement of statements) await tx.execute(statement)
      },
      { commit: true },
    )
  }

  /**
   * One deployment's runs of a table hold its lease and fence; BigQuery aborts a merge whose versions another
   * deployment's merge changed first (a retryable error). Not serialized: two deployments founding the same
   * dimension at once (docs/limits.md).
   */
  async whileWriting<T>(_objects: readonly TableRef[], work: () => Promise<T>): Promise<T> {
    return await work()
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
   * transiently is retried under the next attempt's id. `fresh`: submit a new attempt even when the latest one
   * succeeded (its result is known to be lost, as a load into a staging table since re-created).
   */
  async #runOnce(
    makeId: (attempt: number) => string,
    start: (id: string) => Promise<void>,
    statements: readonly CompiledStatement[],
    fresh = false,
  ): Promise<{ id: string; metadata: JobResource }> {
    const maxAttempts = this.#options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
    const latest = await latestAttempt((attempt) => this.#getJob(makeId(attempt)))
    let attempt = latest?.attempt ?? 1
    let adopted = latest?.job
    if (adopted !== undefined && (fresh || adopted.status?.errorResult !== undefined)) {
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
      await this.#sleep(
        backoffDelayMs(tries, this.#options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS, Math.random()),
      )
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
      // dimsync's own refusal of a batch (before anything was submitted) is not an API error.
      if (error instanceof BatchRejectedError) throw error
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
      const job = this.#client.job(id, { location: this.#options.location })
      const [metadata] = await this.#call(`read job ${id}`, () => job.getMetadata())
      return metadata as JobResource
    } catch (error) {
      if ((error as ApiError).code === 404) return undefined
      throw this.#apiError(`read job ${id}`, error)
    }
  }

  /**
   * Polls job `id` until it is DONE. A job still running after `jobTimeoutMs` is left running: the error is
   * retryable, and the next attempt adopts the job (its id is found) instead of submitting it again.
   */
  async #waitForJob(id: string): Promise<JobResource> {
    const longest = this.#options.pollIntervalMs ?? 1000
    const timeout = this.#options.jobTimeoutMs ?? DEFAULT_JOB_TIMEOUT_MS
    const deadline = Date.now() + timeout
    for (let interval = Math.min(FIRST_POLL_MS, longest); ; interval = Math.min(interval * 2, longest)) {
      const metadata = await this.#getJob(id)
      if (metadata === undefined)
        throw new WarehouseError(`job ${id}`, '', { cause: new Error('job not found') })
      if (metadata.status?.state === 'DONE') return metadata
      if (Date.now() >= deadline)
        throw new WarehouseError(`job ${id}`, '', {
          cause: new Error(
            `BigQuery job ${id} is still running after ${timeout} ms; a retry waits for it instead of starting it again`,
          ),
          retryable: true,
        })
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(interval, Math.max(deadline - Date.now(), 1))),
      )
    }
  }

  /**
   * Uploads a part as a load job, retrying an upload that failed in transit (5xx, 429, no answer within
   * `uploadTimeoutMs`) with the part reopened: a stream is read once, so the client's own retry (disabled here)
   * would send nothing and hang. A 409 means an upload whose answer was lost did arrive: the caller adopts the job.
   */
  async #startLoad(id: string, request: LoadBatchRequest, path: string): Promise<void> {
    const maxAttempts = this.#options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
    for (let tries = 1; ; tries++) {
      try {
        await this.#upload(id, request, path)
        return
      } catch (error) {
        const api = error as ApiError
        const transient = isNoResponse(error) || transientReason(undefined, '', api.code) !== undefined
        if (api.code === 409 || !transient || tries >= maxAttempts) throw error
        await this.#sleep(
          backoffDelayMs(tries, this.#options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS, Math.random()),
        )
      }
    }
  }

  /** One multipart upload (`/upload/bigquery/v2/projects/P/jobs?uploadType=multipart`): job resource + the Parquet file. */
  async #upload(id: string, request: LoadBatchRequest, path: string): Promise<void> {
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
    const client = this.#uploadClient as unknown as {
      apiEndpoint: string
      makeAuthenticatedRequest(options: object, callback: (error: Error | null, body?: unknown) => void): void
    }
    const file = createReadStream(path)
    const timeout = this.#options.uploadTimeoutMs ?? DEFAULT_UPLOAD_TIMEOUT_MS
    let timer: NodeJS.Timeout | undefined
    // The client's HTTP layer takes no timeout or abort signal for uploads: the wait is bounded here, and the
    // file is closed so that a request still sending it fails.
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            Object.assign(new Error(`upload of ${path} got no answer within ${timeout} ms`), {
              type: 'request-timeout',
            }),
          ),
        timeout,
      )
    })
    const uploaded = new Promise<void>((resolve, reject) => {
      client.makeAuthenticatedRequest(
        {
          method: 'POST',
          uri: `${client.apiEndpoint}/upload/bigquery/v2/projects/${encodeURIComponent(this.#options.project)}/jobs`,
          qs: { uploadType: 'multipart' },
          multipart: [
            { 'Content-Type': 'application/json', body: JSON.stringify(resource) },
            { 'Content-Type': 'application/octet-stream', body: file },
          ],
          // A retry must reopen the file (see #startLoad); the client's would resend a consumed stream.
          maxRetries: 0,
        },
        (error) => (error ? reject(error) : resolve()),
      )
    })
    await Promise.race([uploaded, timedOut]).finally(() => {
      clearTimeout(timer)
      file.destroy()
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

  /** A failed API call: retryable when it failed transiently (its attempts ran out), so the run is retried. */
  #apiError(what: string, error: unknown): WarehouseError {
    const retryable = isTransientCall(error) || (error instanceof DimsyncError && error.retryable)
    return new WarehouseError(what, '', { cause: error, retryable })
  }

  /** A failed API call about a job (its insertion): BigQuery's reason and status decide whether it is transient. */
  #scriptError(label: string, error: unknown, statements: readonly CompiledStatement[]): DimsyncError {
    const api = error as ApiError
    const message = api.message ?? String(error)
    const reason = isNoResponse(error) ? NO_RESPONSE : (api.errors?.[0]?.reason ?? 'invalid')
    return jobFailure(label, { reason, message }, statements, api.code)
  }
}

/**
 * A key column BigQuery cannot join on (JSON, arrays), or such a column the merge compares value by value,
 * refuses the batch before anything is loaded.
 */
function assertComparableKeys(request: LoadBatchRequest): void {
  const { table, batchId, columns } = request
  const [uncomparable] = bigQueryUncomparableColumns(table, batchId, columns)
  if (uncomparable !== undefined)
    throw new BatchRejectedError(
      table.name,
      batchId,
      `table ${table.name}: ${uncomparable}; nothing was loaded`,
    )
  for (const name of table.key) {
    const column = columns.find((c) => c.name === name)
    const problem = column === undefined ? undefined : bigQueryKeyProblem(column.type)
    if (problem !== undefined)
      throw new BatchRejectedError(
        table.name,
        batchId,
        `table ${table.name}: key column "${name}" ${problem}; nothing was loaded. Key the table on other ` +
          'columns, or cast this one to text in a query source',
      )
  }
}
