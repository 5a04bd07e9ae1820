import { randomUUID } from 'node:crypto'
import { withPartitionExpiration } from './partition-expiration.ts'
import { BigQueryError, duplicate, invalid, notFound } from './api-errors.ts'
import { fieldOfZetaType, legacyTypeName, zetaTypeOfField, type FieldSchema } from './field-types.ts'
import { dryRunQuery, startLoadJob, startQueryJob, type JobContext, type JobReference } from './job-runner.ts'
import type { JobRecord } from './job-store.ts'
import { datasetResource, jobResource, page, restRows, tableResource } from './rest-resources.ts'
import { tableName, type Column, type StoredTable, type TableMetadata, type TableRef } from './table-store.ts'
import type { RestFormat } from './values.ts'
import type { Proto } from './zetasql-service.ts'

/** One HTTP request, parsed: JSON body, or the parts of a multipart upload. */
export interface ApiRequest {
  readonly method: string
  /** Path segments after `/bigquery/v2/` (or `/upload/bigquery/v2/`), decoded. */
  readonly segments: readonly string[]
  readonly upload: boolean
  readonly query: URLSearchParams
  readonly json?: Proto
  /** Multipart uploads: the resource (first part) and the file (second part). */
  readonly parts?: { readonly resource: Proto; readonly file: Buffer }
}

export interface ApiResponse {
  readonly status: number
  readonly body?: unknown
}

const ok = (body: unknown): ApiResponse => ({ status: 200, body })
const DEFAULT_WAIT_MS = 10_000

/**
 * The REST API v2 resources dimsync's client uses: datasets, tables (with expiration), tabledata.list,
 * jobs.insert (queries, dry runs, multipart Parquet loads), jobs.get, jobs.cancel, jobs.query,
 * jobs.getQueryResults. Errors are BigQuery's HTTP errors (status and `error.errors[].reason`).
 */
export class RestApi {
  readonly #context: JobContext

  constructor(context: JobContext) {
    this.#context = context
  }

  async handle(request: ApiRequest): Promise<ApiResponse> {
    const [projects, projectId, collection, id, sub, subId, leaf] = request.segments
    if (projects !== 'projects' || projectId === undefined)
      throw new BigQueryError(
        'notImplemented',
        `BigQuery emulator: no resource at /${request.segments.join('/')}`,
      )
    const m = request.method
    if (collection === 'datasets') {
      if (id === undefined)
        return m === 'POST' ? this.#insertDataset(projectId, request) : this.#listDatasets(projectId)
      if (sub === undefined) {
        if (m === 'GET') return ok(datasetResource(this.#context.store.requireDataset(projectId, id)))
        if (m === 'DELETE') return this.#deleteDataset(projectId, id, request)
      }
      if (sub === 'tables') {
        if (subId === undefined)
          return m === 'POST' ? this.#insertTable(projectId, id, request) : this.#listTables(projectId, id)
        const ref = { projectId, datasetId: id, tableId: subId }
        if (leaf === 'data' && m === 'GET') return this.#listRows(ref, request)
        if (leaf === undefined) {
          if (m === 'GET') return ok(this.#tableResource(this.#requireTable(ref)))
          if (m === 'PATCH' || m === 'PUT') return this.#patchTable(ref, request)
          if (m === 'DELETE') {
            if (!this.#context.store.deleteTable(ref)) throw notFound(`Not found: Table ${tableName(ref)}`)
            return { status: 204 }
          }
        }
      }
    }
    if (collection === 'jobs') {
      if (id === undefined && m === 'POST') return this.#insertJob(projectId, request)
      if (id === undefined && m === 'GET')
        return ok({ kind: 'bigquery#jobList', jobs: this.#context.jobs.list(projectId).map(jobResource) })
      if (id !== undefined && sub === undefined && m === 'GET')
        return ok(
          jobResource(await finishedOrAfter(this.#requireJob(projectId, id, request), JOB_STATUS_WAIT_MS)),
        )
      if (id !== undefined && sub === 'cancel' && m === 'POST')
        return ok({
          kind: 'bigquery#jobCancelResponse',
          job: jobResource(this.#requireJob(projectId, id, request)),
        })
    }
    if (collection === 'queries') {
      if (id === undefined && m === 'POST') return this.#query(projectId, request)
      if (id !== undefined && m === 'GET')
        return this.#queryResults(this.#requireJob(projectId, id, request), request)
    }
    throw new BigQueryError(
      'notImplemented',
      `BigQuery emulator: ${m} /${request.segments.join('/')} is not emulated`,
    )
  }

  // ---- datasets ----

  #insertDataset(projectId: string, request: ApiRequest): ApiResponse {
    const body = request.json ?? {}
    const datasetId = String(body.datasetReference?.datasetId ?? '')
    if (!/^[A-Za-z0-9_]{1,1024}$/.test(datasetId)) throw invalid(`Invalid dataset ID "${datasetId}"`)
    if (this.#context.store.getDataset(projectId, datasetId) !== undefined)
      throw duplicate(`Already Exists: Dataset ${projectId}:${datasetId}`)
    this.#context.store.putDataset({
      projectId,
      datasetId,
      location: String(body.location ?? 'US'),
      creationMs: this.#context.store.now(),
      ...(body.description ? { description: String(body.description) } : {}),
      ...(body.labels ? { labels: body.labels } : {}),
      ...(body.defaultTableExpirationMs
        ? { defaultTableExpirationMs: Number(body.defaultTableExpirationMs) }
        : {}),
      ...(body.defaultPartitionExpirationMs
        ? { defaultPartitionExpirationMs: Number(body.defaultPartitionExpirationMs) }
        : {}),
    })
    return ok(datasetResource(this.#context.store.requireDataset(projectId, datasetId)))
  }

  #listDatasets(projectId: string): ApiResponse {
    return ok({
      kind: 'bigquery#datasetList',
      datasets: this.#context.store.listDatasets(projectId).map((d) => {
        const { kind, id, datasetReference, location } = datasetResource(d)
        return { kind, id, datasetReference, location }
      }),
    })
  }

  #deleteDataset(projectId: string, datasetId: string, request: ApiRequest): ApiResponse {
    const store = this.#context.store
    store.requireDataset(projectId, datasetId)
    if (request.query.get('deleteContents') !== 'true' && store.listTables(projectId, datasetId).length > 0)
      throw invalid(`Dataset ${projectId}:${datasetId} is still in use`)
    store.deleteDataset(projectId, datasetId)
    return { status: 204 }
  }

  // ---- tables ----

  #requireTable(ref: TableRef): StoredTable {
    this.#context.store.requireDataset(ref.projectId, ref.datasetId)
    const table = this.#context.store.getTable(ref)
    if (table === undefined) throw notFound(`Not found: Table ${tableName(ref)}`)
    return table
  }

  #tableResource(table: StoredTable): Record<string, unknown> {
    const dataset = this.#context.store.requireDataset(table.ref.projectId, table.ref.datasetId)
    return tableResource(table, dataset.location)
  }

  #insertTable(projectId: string, datasetId: string, request: ApiRequest): ApiResponse {
    const body = request.json ?? {}
    const store = this.#context.store
    const dataset = store.requireDataset(projectId, datasetId)
    const tableId = String(body.tableReference?.tableId ?? '')
    if (!/^[\p{L}\p{M}\p{N}\p{Pc}\p{Pd} ]{1,1024}$/u.test(tableId))
      throw invalid(`Invalid table ID "${tableId}"`)
    const ref = { projectId, datasetId, tableId }
    if (store.getTable(ref) !== undefined) throw duplicate(`Already Exists: Table ${tableName(ref)}`)
    if (body.view !== undefined)
      throw new BigQueryError('notImplemented', 'BigQuery emulator: create views with CREATE VIEW')
    const columns = columnsOfFields(body.schema?.fields ?? [])
    const now = store.now()
    const metadata = metadataOfResource(body, columns, {})
    const defaultExpiration = dataset.defaultTableExpirationMs
    const table: StoredTable = {
      ref,
      type: 'TABLE',
      columns,
      rows: [],
      metadata: withPartitionExpiration(
        {
          ...(defaultExpiration === undefined ? {} : { expirationMs: now + defaultExpiration }),
          ...metadata,
        },
        dataset,
      ),
      creationMs: now,
      lastModifiedMs: now,
    }
    store.putTable(table)
    // Answered as created even when its expiration has already passed (it is gone at the next read).
    return ok(this.#tableResource(table))
  }

  #patchTable(ref: TableRef, request: ApiRequest): ApiResponse {
    const table = this.#requireTable(ref)
    const body = request.json ?? {}
    let columns = table.columns
    if (body.schema?.fields !== undefined) {
      const next = columnsOfFields(body.schema.fields)
      for (const old of table.columns) {
        const kept = next.find((c) => c.field.name.toLowerCase() === old.field.name.toLowerCase())
        if (kept === undefined)
          throw invalid(
            `Provided Schema does not match Table ${tableName(ref)}. Field ${old.field.name} is missing in new schema`,
          )
        if (legacyTypeName(kept.field.type) !== legacyTypeName(old.field.type))
          throw invalid(
            `Provided Schema does not match Table ${tableName(ref)}. Field ${old.field.name} has changed type`,
          )
      }
      const added = next.filter(
        (c) => !table.columns.some((o) => o.field.name.toLowerCase() === c.field.name.toLowerCase()),
      )
      if (added.some((c) => c.field.mode === 'REQUIRED'))
        throw invalid(`Provided Schema does not match Table ${tableName(ref)}. Cannot add required fields`)
      columns = next
    }
    const rows =
      columns === table.columns
        ? table.rows
        : table.rows.map((row) => ({
            id: row.id,
            cells: columns.map((c) => {
              const index = table.columns.findIndex(
                (o) => o.field.name.toLowerCase() === c.field.name.toLowerCase(),
              )
              return index < 0 ? {} : row.cells[index]!
            }),
          }))
    const updated: StoredTable = {
      ...table,
      columns,
      rows,
      metadata: metadataOfResource(body, columns, table.metadata),
      lastModifiedMs: this.#context.store.now(),
    }
    this.#context.store.putTable(updated)
    return ok(this.#tableResource(updated))
  }

  #listTables(projectId: string, datasetId: string): ApiResponse {
    this.#context.store.requireDataset(projectId, datasetId)
    const tables = this.#context.store.listTables(projectId, datasetId).map((t) => ({
      kind: 'bigquery#table',
      id: `${projectId}:${datasetId}.${t.ref.tableId}`,
      tableReference: { ...t.ref },
      type: t.type,
      creationTime: String(t.creationMs),
      ...(t.metadata.expirationMs === undefined ? {} : { expirationTime: String(t.metadata.expirationMs) }),
    }))
    return ok({ kind: 'bigquery#tableList', tables, totalItems: tables.length })
  }

  #listRows(ref: TableRef, request: ApiRequest): ApiResponse {
    const table = this.#requireTable(ref)
    if (table.type !== 'TABLE') throw invalid(`Cannot list a table of type ${table.type}.`)
    const selected = request.query
      .get('selectedFields')
      ?.split(',')
      .map((s) => s.trim().toLowerCase())
    const indexes = table.columns.flatMap((c, i) =>
      !selected || selected.includes(c.field.name.toLowerCase()) ? [i] : [],
    )
    const { start, end, pageToken } = page(table.rows.length, request.query)
    const columns = indexes.map((i) => table.columns[i]!)
    const rows = table.rows.slice(start, end).map((r) => indexes.map((i) => r.cells[i]!))
    return ok({
      kind: 'bigquery#tableDataList',
      totalRows: String(table.rows.length),
      rows: restRows(columns, rows, formatOf(request.query.get('formatOptions.useInt64Timestamp'))),
      ...(pageToken === undefined ? {} : { pageToken }),
    })
  }

  // ---- jobs ----

  #requireJob(projectId: string, jobId: string, request: ApiRequest): JobRecord {
    const location = request.query.get('location') ?? undefined
    const job = this.#context.jobs.get(projectId, jobId, location)
    if (job === undefined) throw notFound(`Not found: Job ${projectId}:${location ?? 'US'}.${jobId}`)
    return job
  }

  async #insertJob(projectId: string, request: ApiRequest): Promise<ApiResponse> {
    const resource = request.upload ? request.parts?.resource : request.json
    if (resource === undefined) throw invalid('The request has no job resource')
    const configuration = resource.configuration ?? {}
    const reference: JobReference = {
      projectId: String(resource.jobReference?.projectId ?? projectId),
      jobId: String(resource.jobReference?.jobId ?? `job_${randomUUID().replaceAll('-', '_')}`),
      ...(resource.jobReference?.location ? { location: String(resource.jobReference.location) } : {}),
    }
    if (request.upload) {
      if (request.parts === undefined) throw invalid('Uploads must be multipart (uploadType=multipart)')
      return ok(jobResource(startLoadJob(this.#context, reference, configuration, request.parts.file)))
    }
    if (configuration.load !== undefined)
      throw new BigQueryError(
        'notImplemented',
        'BigQuery emulator: load jobs are read from multipart uploads only',
      )
    if (configuration.query === undefined)
      throw new BigQueryError('notImplemented', 'BigQuery emulator: only query and load jobs are emulated')
    if (configuration.dryRun === true) return ok(await dryRunQuery(this.#context, reference, configuration))
    return ok(jobResource(await startQueryJob(this.#context, reference, configuration)))
  }

  async #query(projectId: string, request: ApiRequest): Promise<ApiResponse> {
    const body = request.json ?? {}
    const configuration = {
      query: {
        query: body.query,
        useLegacySql: body.useLegacySql,
        ...(body.defaultDataset ? { defaultDataset: body.defaultDataset } : {}),
        ...(body.queryParameters ? { queryParameters: body.queryParameters } : {}),
      },
      ...(body.labels ? { labels: body.labels } : {}),
    }
    const reference: JobReference = {
      projectId,
      jobId: `job_${randomUUID().replaceAll('-', '_')}`,
      ...(body.location ? { location: String(body.location) } : {}),
    }
    if (body.dryRun === true) {
      const dry = await dryRunQuery(this.#context, reference, configuration)
      const statistics = dry.statistics as { totalBytesProcessed: string }
      return ok({
        kind: 'bigquery#queryResponse',
        jobComplete: true,
        totalBytesProcessed: statistics.totalBytesProcessed,
        cacheHit: false,
      })
    }
    const job = await startQueryJob(this.#context, reference, configuration)
    const format = formatOf(body.formatOptions?.useInt64Timestamp)
    return this.#results(
      job,
      body.timeoutMs,
      new URLSearchParams(body.maxResults ? { maxResults: String(body.maxResults) } : {}),
      format,
      'bigquery#queryResponse',
    )
  }

  #queryResults(job: JobRecord, request: ApiRequest): Promise<ApiResponse> {
    const timeout = request.query.get('timeoutMs')
    return this.#results(
      job,
      timeout === null ? undefined : Number(timeout),
      request.query,
      formatOf(request.query.get('formatOptions.useInt64Timestamp')),
      'bigquery#getQueryResultsResponse',
    )
  }

  /** Waits up to `timeoutMs` for the job; answers its error, or a page of its result. */
  async #results(
    job: JobRecord,
    timeoutMs: number | undefined,
    query: URLSearchParams,
    format: RestFormat,
    kind: string,
  ): Promise<ApiResponse> {
    const reference = { projectId: job.projectId, jobId: job.jobId, location: job.location }
    if ((await finishedOrAfter(job, timeoutMs ?? DEFAULT_WAIT_MS)).state !== 'DONE')
      return ok({ kind, jobReference: reference, jobComplete: false })
    if (job.error !== undefined) throw job.error
    if (job.configuration.query === undefined) throw invalid(`Job ${job.jobId} is not a query job`)
    const result = job.outcome?.result
    const statistics = job.outcome?.statistics as
      { totalBytesProcessed?: string; query?: { numDmlAffectedRows?: string } } | undefined
    const total = result?.rows.length ?? 0
    const { start, end, pageToken } = page(total, query)
    return ok({
      kind,
      jobReference: reference,
      jobComplete: true,
      cacheHit: false,
      totalBytesProcessed: statistics?.totalBytesProcessed ?? '0',
      ...(statistics?.query?.numDmlAffectedRows === undefined
        ? {}
        : { numDmlAffectedRows: statistics.query.numDmlAffectedRows }),
      ...(result === undefined
        ? { totalRows: '0' }
        : {
            schema: { fields: result.columns.map((c) => c.field) },
            totalRows: String(total),
            rows: restRows(result.columns, result.rows.slice(start, end), format),
            ...(pageToken === undefined ? {} : { pageToken }),
          }),
    })
  }
}

function formatOf(useInt64Timestamp: unknown): RestFormat {
  return { int64Timestamp: useInt64Timestamp === true || useInt64Timestamp === 'true' }
}

function columnsOfFields(fields: readonly FieldSchema[]): Column[] {
  const seen = new Set<string>()
  return fields.map((field) => {
    const name = String(field.name ?? '')
    if (!/^[\p{L}\p{M}\p{N}\p{Pc}\p{Pd} &%=+:'<>#|]{1,300}$/u.test(name))
      throw invalid(`Invalid field name "${name}"`)
    if (seen.has(name.toLowerCase())) throw invalid(`Field ${name} already exists in schema`)
    seen.add(name.toLowerCase())
    if (legacyTypeName(String(field.type ?? '')) === undefined)
      throw invalid(`Invalid value for type: ${field.type} is not a valid value`)
    const type = zetaTypeOfField(field)
    const base = fieldOfZetaType(name, type, {
      required: field.mode === 'REQUIRED',
      ...(field.description === undefined ? {} : { description: field.description }),
    })
    return {
      field: {
        ...base,
        ...(field.precision === undefined ? {} : { precision: String(field.precision) }),
        ...(field.scale === undefined ? {} : { scale: String(field.scale) }),
        ...(field.maxLength === undefined ? {} : { maxLength: String(field.maxLength) }),
      },
      type,
    }
  })
}

/** Table metadata from a REST table resource (insert or patch): what the body sets replaces what was there. */
function metadataOfResource(body: Proto, columns: readonly Column[], previous: TableMetadata): TableMetadata {
  const metadata: { -readonly [K in keyof TableMetadata]: TableMetadata[K] } = { ...previous }
  if ('description' in body) metadata.description = body.description ?? undefined
  if ('friendlyName' in body) metadata.friendlyName = body.friendlyName ?? undefined
  if ('labels' in body) metadata.labels = body.labels ?? undefined
  if ('expirationTime' in body)
    metadata.expirationMs =
      body.expirationTime === null || body.expirationTime === undefined
        ? undefined
        : Number(body.expirationTime)
  if (body.timePartitioning !== undefined) {
    const field = body.timePartitioning.field
    const column = columns.find((c) => c.field.name === field)
    if (
      field !== undefined &&
      !['DATE', 'TIMESTAMP', 'DATETIME'].includes(legacyTypeName(column?.field.type ?? '') ?? '')
    )
      throw invalid(
        `The field specified for time partitioning can only be of type TIMESTAMP, DATE or DATETIME. The type found is: ${column?.field.type ?? 'missing'}`,
      )
    metadata.timePartitioning = body.timePartitioning
  }
  if (body.clustering?.fields !== undefined) {
    if (body.clustering.fields.length > 4)
      throw invalid('Too many clustering fields: a table can be clustered by at most 4 columns')
    metadata.clustering = { fields: body.clustering.fields }
  }
  if (body.requirePartitionFilter !== undefined)
    metadata.requirePartitionFilter = Boolean(body.requirePartitionFilter)
  for (const key of Object.keys(metadata) as (keyof TableMetadata)[])
    if (metadata[key] === undefined) delete metadata[key]
  return metadata
}

/**
 * How long jobs.get holds its answer about an unfinished job, answering as soon as the job finishes. Clients in
 * tests poll every few milliseconds; each answer carries the job's whole configuration (a wide table's merge
 * script is near 1 MB), so polling that fast took CPU from the job it waited for (the 1,300-column session test:
 * 47 answers of one job, 7.5 s of the emulator's time spent writing them). A minimumJobRunMs under
 * MIN_JOB_RUN_OVER_HOLD times it is refused (BigQueryEmulator.start): under load a client could see such a job DONE at
 * its first jobs.get, never PENDING/RUNNING (a 50 ms hold against a 100 ms minimum did, once).
 */
export const JOB_STATUS_WAIT_MS = 20
export const MIN_JOB_RUN_OVER_HOLD = 5

/** `job` once it is DONE or `ms` have passed, whichever comes first (jobs.get's hold, getQueryResults' timeoutMs). */
async function finishedOrAfter(job: JobRecord, ms: number): Promise<JobRecord> {
  if (job.state === 'DONE') return job
  let timer: NodeJS.Timeout | undefined
  await Promise.race([job.done, new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
  return job
}
