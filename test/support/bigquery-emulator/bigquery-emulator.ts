import { PassThroughClient } from 'google-auth-library'
import { SessionStore } from './sessions.ts'
import { Faults } from './faults.ts'
import { HttpServer, type RecordedRequest } from './http-server.ts'
import { JobStore } from './job-store.ts'
import { JOB_STATUS_WAIT_MS, MIN_JOB_RUN_OVER_HOLD, RestApi } from './rest-api.ts'
import { ScriptInterpreter } from './script-interpreter.ts'
import { StatementExecutor } from './statement-executor.ts'
import { TableStore, type TableRef } from './table-store.ts'
import { isNull, scalarText, type Value } from './values.ts'
import { ZetaSqlService, type Proto } from './zetasql-service.ts'

export interface BigQueryEmulatorOptions {
  /**
   * The ZetaSQL service to run statements on: start one per test file and share it (starting takes up to a
   * second). Without it the emulator starts its own and stops it with itself.
   */
  readonly zetaSql?: ZetaSqlService
  /** Milliseconds since the epoch; a test moves it to let tables expire. */
  readonly clock?: () => number
  /** Every job stays PENDING/RUNNING at least this long, so clients poll (default 0; else at least 100 ms). */
  readonly minimumJobRunMs?: number
}

/** Text of a stored value: what `CAST(x AS STRING)` shows (BYTES in base64, TIMESTAMP `... +00`), or null. */
export type TextRow = Record<string, string | null>

/**
 * A BigQuery emulator for tests (see README.md in this folder): BigQuery's REST API on 127.0.0.1 and a free
 * port, its SQL run by ZetaSQL's reference implementation. Point `@google-cloud/bigquery` at `url` with
 * `clientOptions()`.
 */
export class BigQueryEmulator {
  readonly url: string
  readonly store: TableStore
  readonly jobs: JobStore
  readonly faults: Faults
  readonly #http: HttpServer
  readonly #interpreter: ScriptInterpreter
  readonly #ownZetaSql: ZetaSqlService | undefined

  private constructor(
    url: string,
    parts: {
      store: TableStore
      jobs: JobStore
      faults: Faults
      http: HttpServer
      interpreter: ScriptInterpreter
    },
    ownZetaSql: ZetaSqlService | undefined,
  ) {
    this.url = url
    this.store = parts.store
    this.jobs = parts.jobs
    this.faults = parts.faults
    this.#http = parts.http
    this.#interpreter = parts.interpreter
    this.#ownZetaSql = ownZetaSql
  }

  static async start(options: BigQueryEmulatorOptions = {}): Promise<BigQueryEmulator> {
    const minimumJobRunMs = options.minimumJobRunMs ?? 0
    assertMinimumJobRun(minimumJobRunMs)
    const own = options.zetaSql === undefined ? await ZetaSqlService.start() : undefined
    const zeta = options.zetaSql ?? own!
    const clock = options.clock ?? Date.now
    const store = new TableStore(clock)
    const jobs = new JobStore(clock, minimumJobRunMs)
    const faults = new Faults()
    const interpreter = new ScriptInterpreter(zeta, new StatementExecutor(zeta))
    const sessions = new SessionStore()
    const http = new HttpServer(new RestApi({ store, jobs, interpreter, faults, sessions }), faults)
    const url = await http.listen()
    return new BigQueryEmulator(url, { store, jobs, faults, http, interpreter }, own)
  }

  /**
   * Jobs inserted from now on run at least `ms` (0: no minimum); those inserted before keep the minimum they were
   * inserted with. Refused as `minimumJobRunMs` is at start.
   */
  setMinimumJobRunMs(ms: number): void {
    assertMinimumJobRun(ms)
    this.jobs.minimumRunMs = ms
  }

  /** Every HTTP request received, in order (method, path, query, JSON body or upload summary). */
  get requests(): readonly RecordedRequest[] {
    return this.#http.requests
  }

  /** Options for `new BigQuery(...)`: this endpoint, and an auth client that sends no credentials. */
  clientOptions(): { apiEndpoint: string; authClient: PassThroughClient } {
    return { apiEndpoint: this.url, authClient: new PassThroughClient() }
  }

  createDataset(
    projectId: string,
    datasetId: string,
    options: {
      location?: string
      defaultTableExpirationMs?: number
      defaultPartitionExpirationMs?: number
    } = {},
  ): void {
    this.store.putDataset({
      projectId,
      datasetId,
      location: options.location ?? 'US',
      creationMs: this.store.now(),
      ...(options.defaultTableExpirationMs === undefined
        ? {}
        : { defaultTableExpirationMs: options.defaultTableExpirationMs }),
      ...(options.defaultPartitionExpirationMs === undefined
        ? {}
        : { defaultPartitionExpirationMs: options.defaultPartitionExpirationMs }),
    })
  }

  /** Runs GoogleSQL as a query job would, without HTTP (test set-up and assertions); answers the last query's rows. */
  async query(projectId: string, sql: string, options: { location?: string } = {}): Promise<TextRow[]> {
    await this.jobs.idle()
    const outcome = await this.#interpreter.run(sql, this.store, {
      projectId,
      jobId: 'emulator_direct_query',
      ...(options.location === undefined ? {} : { location: options.location }),
    })
    const result = outcome.result
    if (result === undefined) return []
    return result.rows.map((cells) =>
      textRow(
        result.columns.map((c) => ({ name: c.field.name, type: c.type })),
        cells,
      ),
    )
  }

  /** The rows of a stored table, in storage order, as text. */
  rows(ref: TableRef): TextRow[] | undefined {
    const table = this.store.getTable(ref)
    if (table === undefined) return undefined
    const columns = table.columns.map((c) => ({ name: c.field.name, type: c.type }))
    return table.rows.map((row) => textRow(columns, row.cells))
  }

  async stop(): Promise<void> {
    await this.#http.close()
    await this.#ownZetaSql?.stop()
  }
}

function textRow(columns: readonly { name: string; type: Proto }[], cells: readonly Value[]): TextRow {
  const row: TextRow = {}
  columns.forEach((c, i) => {
    const cell = cells[i]
    row[c.name] = cell === undefined || isNull(cell) ? null : scalarText(c.type, cell)
  })
  return row
}

/** A minimum job run (`minimumJobRunMs`) long enough for a client to see a job PENDING/RUNNING, or 0. */
function assertMinimumJobRun(minimumJobRunMs: number): void {
  if (!Number.isFinite(minimumJobRunMs) || minimumJobRunMs < 0)
    throw new Error(
      `minimumJobRunMs ${minimumJobRunMs} is not a duration: give milliseconds, or 0 for no minimum`,
    )
  const shortest = MIN_JOB_RUN_OVER_HOLD * JOB_STATUS_WAIT_MS
  if (minimumJobRunMs > 0 && minimumJobRunMs < shortest)
    throw new Error(
      `minimumJobRunMs ${minimumJobRunMs} is too short: jobs.get holds the answer about an unfinished job up to ` +
        `${JOB_STATUS_WAIT_MS} ms, so a client could see the job DONE and never PENDING/RUNNING; give at least ` +
        `${shortest} ms, or 0 for no minimum`,
    )
}
