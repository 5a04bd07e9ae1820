import { BigQueryError, duplicate, invalid, invalidQuery, notFound } from './api-errors.ts'
import type { Session, SessionStore } from './sessions.ts'
import type { Faults } from './faults.ts'
import { zetaTypeOfField, fieldOfZetaType, type FieldSchema } from './field-types.ts'
import type { JobOutcome, JobRecord, JobStore } from './job-store.ts'
import { readParquet, rowsForTable } from './parquet-load.ts'
import { rowBytes } from './rest-resources.ts'
import type { ScriptInterpreter, ScriptOutcome } from './script-interpreter.ts'
import { tableName, type StoredTable, type TableRef, type TableStore } from './table-store.ts'
import type { Proto } from './zetasql-service.ts'

export interface JobContext {
  readonly store: TableStore
  readonly jobs: JobStore
  readonly interpreter: ScriptInterpreter
  readonly faults: Faults
  readonly sessions: SessionStore
}

export interface JobReference {
  readonly projectId: string
  readonly jobId: string
  /** As the request gave it (undefined: BigQuery picks the location of the data). */
  readonly location?: string
}

/** The GoogleSQL text of a query configuration; the emulator runs GoogleSQL only. */
function queryText(configuration: Proto): string {
  const query = configuration.query
  if (typeof query?.query !== 'string')
    throw invalid('Job configuration must contain exactly one job-specific configuration object')
  // BigQuery's limit on a query's text (comments and white space included), checked before anything else.
  if (query.query.length > 1_024_000)
    throw invalidQuery(
      'The query is too large. The maximum standard SQL query length is 1024.00K characters, including comments and white space characters.',
    )
  if (query.useLegacySql !== false)
    throw invalidQuery(
      'The BigQuery emulator runs GoogleSQL only: set useLegacySql to false (BigQuery would read this query as legacy SQL)',
    )
  if (query.destinationTable !== undefined)
    throw new BigQueryError('notImplemented', 'BigQuery emulator: query destinationTable is not emulated')
  if (Array.isArray(query.queryParameters) && query.queryParameters.length > 0)
    throw new BigQueryError('notImplemented', 'BigQuery emulator: query parameters are not emulated')
  return query.query
}

function scriptOptions(reference: JobReference, configuration: Proto, faults: Faults) {
  const dataset = configuration.query?.defaultDataset
  return {
    projectId: reference.projectId,
    jobId: reference.jobId,
    ...(reference.location === undefined ? {} : { location: reference.location }),
    ...(dataset?.datasetId ? { defaultDataset: String(dataset.datasetId) } : {}),
    beforeStatement: (statement: Parameters<Faults['beforeStatement']>[0]) =>
      faults.beforeStatement(statement),
  }
}

/**
 * The session a query job runs in: a new one (`createSession: true`) or the one its `session_id` connection
 * property names (refused when unknown, ended or elsewhere); none otherwise.
 */
function sessionOf(context: JobContext, configuration: Proto, location: string): Session | undefined {
  const query = configuration.query ?? {}
  const properties = (query.connectionProperties ?? []) as { key?: string; value?: string }[]
  const id = properties.find((p) => p.key === 'session_id')?.value
  if (query.createSession === true) {
    if (id !== undefined) throw invalidQuery('A query cannot both create a session and join one')
    return context.sessions.create(location)
  }
  return id === undefined ? undefined : context.sessions.require(id, location)
}

/** `statistics` of a finished query job, and its result. */
function queryOutcome(outcome: ScriptOutcome, session: Session | undefined): JobOutcome {
  const bytes = String(outcome.bytesProcessed)
  const ddl = outcome.ddl
  return {
    statistics: {
      totalBytesProcessed: bytes,
      ...(outcome.isScript ? { numChildJobs: String(outcome.statements) } : {}),
      ...(session === undefined ? {} : { sessionInfo: { sessionId: session.id } }),
      query: {
        totalBytesProcessed: bytes,
        totalBytesBilled: bytes,
        statementType: outcome.statementType,
        cacheHit: false,
        ...(outcome.dmlAffectedRows === undefined || outcome.isScript
          ? {}
          : { numDmlAffectedRows: String(outcome.dmlAffectedRows) }),
        ...(ddl === undefined || outcome.isScript
          ? {}
          : { ddlOperationPerformed: ddl.operation, ...(ddl.target ? { ddlTargetTable: ddl.target } : {}) }),
      },
    },
    ...(outcome.result === undefined ? {} : { result: outcome.result }),
  }
}

/**
 * Inserts a query job. A syntax error (and, for a single query or DML statement, any error ZetaSQL finds
 * resolving it) fails at once: the job exists, DONE with the error, and the call answers the error, as
 * BigQuery does. Anything else runs in the job queue.
 */
export async function startQueryJob(
  context: JobContext,
  reference: JobReference,
  configuration: Proto,
): Promise<JobRecord> {
  const location = reference.location ?? 'US'
  const record = { projectId: reference.projectId, jobId: reference.jobId, location }
  if (context.jobs.get(reference.projectId, reference.jobId) !== undefined)
    throw duplicate(`Already Exists: Job ${reference.projectId}:${location}.${reference.jobId}`)
  let text: string
  let session: Session | undefined
  try {
    text = queryText(configuration)
    session = sessionOf(context, configuration, location)
    const statements = await context.interpreter.parse(text)
    const single = statements.length === 1 ? statements[0]!.kind : ''
    if (/^ast(Query|Insert|Update|Delete|Truncate)StatementNode$/.test(single))
      await context.interpreter.run(text, context.store, {
        ...scriptOptions(reference, configuration, context.faults),
        ...(session === undefined ? {} : { session }),
        dryRun: true,
        beforeStatement: () => undefined,
      })
  } catch (error) {
    if (!(error instanceof BigQueryError)) throw error
    context.jobs.insertFailed(record, configuration, error)
    throw error
  }
  return context.jobs.insert(record, configuration, async (job) => {
    context.faults.beforeJob({ jobId: job.jobId, kind: 'query' })
    if (session?.ended === true)
      throw invalidQuery(`Session ${session.id} was not found or has been terminated`)
    return queryOutcome(
      await context.interpreter.run(text, context.store, {
        ...scriptOptions(reference, configuration, context.faults),
        ...(session === undefined ? {} : { session }),
      }),
      session,
    )
  })
}

/**
 * A dry run: nothing is stored or run. The query is resolved statement by statement (DDL applied to a copy of
 * the tables so later statements resolve) and the answer is the logical bytes of the columns its queries and
 * DML read, an estimate: no partition pruning, no clustering, no 10 MB minimum per table.
 */
export async function dryRunQuery(
  context: JobContext,
  reference: JobReference,
  configuration: Proto,
): Promise<Record<string, unknown>> {
  const text = queryText(configuration)
  const outcome = await context.interpreter.run(text, context.store.clone(), {
    ...scriptOptions(reference, configuration, context.faults),
    dryRun: true,
    beforeStatement: () => undefined,
  })
  const bytes = String(outcome.bytesProcessed)
  return {
    kind: 'bigquery#job',
    jobReference: { projectId: reference.projectId, location: reference.location ?? 'US' },
    configuration: { ...configuration, jobType: 'QUERY' },
    status: { state: 'DONE' },
    statistics: {
      totalBytesProcessed: bytes,
      query: {
        totalBytesProcessed: bytes,
        statementType: outcome.statementType,
        totalBytesBilled: '0',
        cacheHit: false,
      },
    },
  }
}

/** Inserts a load job of an uploaded file (Parquet only), run in the job queue. */
export function startLoadJob(
  context: JobContext,
  reference: JobReference,
  configuration: Proto,
  file: Buffer,
): JobRecord {
  const load = configuration.load
  const destination = load?.destinationTable
  if (destination?.datasetId === undefined || destination.tableId === undefined)
    throw invalid('Load configuration must specify destinationTable')
  const ref: TableRef = {
    projectId: String(destination.projectId ?? reference.projectId),
    datasetId: String(destination.datasetId),
    tableId: String(destination.tableId),
  }
  const dataset = context.store.getDataset(ref.projectId, ref.datasetId)
  const location = reference.location ?? dataset?.location ?? 'US'
  const format = String(load.sourceFormat ?? 'CSV').toUpperCase()
  if (format !== 'PARQUET')
    throw new BigQueryError('notImplemented', `BigQuery emulator: load jobs read PARQUET only, not ${format}`)
  return context.jobs.insert(
    { projectId: reference.projectId, jobId: reference.jobId, location },
    configuration,
    async (job) => {
      context.faults.beforeJob({ jobId: job.jobId, kind: 'load' })
      return runLoad(context.store, ref, location, load, file)
    },
  )
}

async function runLoad(
  store: TableStore,
  ref: TableRef,
  location: string,
  load: Proto,
  file: Buffer,
): Promise<JobOutcome> {
  const dataset = store.getDataset(ref.projectId, ref.datasetId)
  if (dataset === undefined || dataset.location.toLowerCase() !== location.toLowerCase())
    throw notFound(
      `Not found: Dataset ${ref.projectId}:${ref.datasetId} was not found in location ${location}`,
    )
  const existing = store.getTable(ref)
  const create = String(load.createDisposition ?? 'CREATE_IF_NEEDED')
  const write = String(load.writeDisposition ?? 'WRITE_APPEND')
  if (existing === undefined && create === 'CREATE_NEVER')
    throw notFound(`Not found: Table ${tableName(ref)}`)
  if (existing?.type === 'VIEW') throw invalid(`Cannot load into view ${tableName(ref)}`)
  if (existing !== undefined && write === 'WRITE_EMPTY' && existing.rows.length > 0)
    throw new BigQueryError('duplicate', `Already Exists: Table ${tableName(ref)}`)
  const declared = (load.schema?.fields as FieldSchema[] | undefined)?.map((field) => ({
    field: fieldOfZetaType(field.name, zetaTypeOfField(field), { required: field.mode === 'REQUIRED' }),
    type: zetaTypeOfField(field),
  }))
  const content = await readParquet(file)
  const { columns, rows } = rowsForTable(content, {
    name: tableName(ref),
    ...(existing ? { columns: existing.columns } : declared ? { columns: declared } : {}),
    ...(Array.isArray(load.decimalTargetTypes) ? { decimalTargetTypes: load.decimalTargetTypes } : {}),
  })
  const now = store.now()
  const loaded = rows.map((cells) => ({ id: store.nextRowId(), cells }))
  const table: StoredTable =
    existing === undefined
      ? { ref, type: 'TABLE', columns, rows: loaded, metadata: {}, creationMs: now, lastModifiedMs: now }
      : {
          ...existing,
          rows: write === 'WRITE_TRUNCATE' ? loaded : [...existing.rows, ...loaded],
          lastModifiedMs: now,
        }
  store.putTable(table)
  const outputBytes = loaded.reduce((sum, row) => sum + rowBytes(columns, row), 0)
  return {
    statistics: {
      load: {
        inputFiles: '1',
        inputFileBytes: String(file.length),
        outputRows: String(loaded.length),
        outputBytes: String(outputBytes),
        badRecords: '0',
      },
    },
  }
}
