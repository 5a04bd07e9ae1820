import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request the fake received. */
export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly json?: Record<string, unknown>
  /** Multipart uploads: the job resource part and the byte length of the file part. */
  readonly upload?: {
    readonly resource: Record<string, unknown>
    readonly bytes: number
    readonly head: string
  }
}

interface FakeJob {
  resource: Record<string, unknown>
  /** GET polls left before the job reports DONE. */
  pollsUntilDone: number
  error?: { reason: string; message: string }
  rows?: Record<string, unknown>[]
}

/**
 * A FAKE BigQuery REST endpoint (no BigQuery emulator exists): just enough of jobs.insert, jobs.get,
 * jobs.getQueryResults, jobs.query, the multipart upload and tables.get/insert for the adapter's HTTP boundary
 * tests. It records every request, answers 409 for an existing job id or table, and lets a test script a job's
 * outcome (`failNextJob`, `resultRows`). It executes no SQL.
 */
export class FakeBigQueryServer {
  readonly requests: RecordedRequest[] = []
  readonly jobs = new Map<string, FakeJob>()
  readonly tables = new Map<string, Record<string, unknown>>()
  #server: Server | undefined
  #nextFailure: { reason: string; message: string } | undefined
  resultRows: Record<string, unknown>[] = []
  pollsUntilDone = 1
  dryRunBytes = 123_456_789

  get url(): string {
    return `http://127.0.0.1:${(this.#server!.address() as AddressInfo).port}`
  }

  async start(): Promise<void> {
    this.#server = createServer((req, res) => {
      this.#handle(req).then(
        ({ status, body }) => {
          res.writeHead(status, { 'content-type': 'application/json' })
          res.end(JSON.stringify(body))
        },
        (error: unknown) => {
          res.writeHead(500, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ error: { code: 500, message: String(error) } }))
        },
      )
    })
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve))
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()))
  }

  /** The next job created fails with this error (as BigQuery reports it in status.errorResult). */
  failNextJob(reason: string, message: string): void {
    this.#nextFailure = { reason, message }
  }

  async #handle(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    const url = new URL(req.url ?? '/', 'http://fake')
    const raw = await readBody(req)
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
    }
    const contentType = req.headers['content-type'] ?? ''
    let json: Record<string, unknown> | undefined
    let upload: RecordedRequest['upload']
    if (contentType.startsWith('multipart/')) upload = parseMultipart(raw, contentType)
    else if (raw.length > 0) json = JSON.parse(raw.toString('utf8')) as Record<string, unknown>
    this.requests.push({ ...record, json, upload })

    const p = url.pathname
    let m: RegExpExecArray | null
    if (/^\/upload\/bigquery\/v2\/projects\/([^/]+)\/jobs$/.test(p) && req.method === 'POST')
      return this.#insertJob(upload!.resource)
    if (/^\/bigquery\/v2\/projects\/([^/]+)\/jobs$/.test(p) && req.method === 'POST')
      return this.#insertJob(json!)
    if ((m = /^\/bigquery\/v2\/projects\/([^/]+)\/jobs\/([^/]+)$/.exec(p)) && req.method === 'GET') {
      const job = this.jobs.get(decodeURIComponent(m[2]!))
      if (!job) return notFound(`Job ${m[2]} not found`)
      if (job.pollsUntilDone > 0) job.pollsUntilDone--
      return { status: 200, body: this.#view(job) }
    }
    if ((m = /^\/bigquery\/v2\/projects\/([^/]+)\/queries\/([^/]+)$/.exec(p))) {
      const job = this.jobs.get(decodeURIComponent(m[2]!))
      if (!job) return notFound(`Job ${m[2]} not found`)
      return { status: 200, body: queryResults(job.resource.jobReference, job.rows ?? []) }
    }
    if ((m = /^\/bigquery\/v2\/projects\/([^/]+)\/queries$/.exec(p)) && req.method === 'POST') {
      const jobReference = {
        projectId: m[1],
        jobId: `query_${this.requests.length}`,
        location: json?.location,
      }
      return { status: 200, body: queryResults(jobReference, []) }
    }
    if (
      (m = /^\/bigquery\/v2\/projects\/([^/]+)\/datasets\/([^/]+)\/tables$/.exec(p)) &&
      req.method === 'POST'
    ) {
      const id = `${m[2]}.${(json!.tableReference as { tableId: string }).tableId}`
      if (this.tables.has(id)) return conflict(`Already Exists: Table ${id}`)
      this.tables.set(id, json!)
      return { status: 200, body: json }
    }
    if ((m = /^\/bigquery\/v2\/projects\/([^/]+)\/datasets\/([^/]+)\/tables\/([^/]+)$/.exec(p))) {
      const table = this.tables.get(`${m[2]}.${m[3]}`)
      return table ? { status: 200, body: table } : notFound(`Not found: Table ${m[1]}:${m[2]}.${m[3]}`)
    }
    return notFound(`fake BigQuery does not serve ${req.method} ${p}`)
  }

  #insertJob(resource: Record<string, unknown>): { status: number; body: unknown } {
    const configuration = resource.configuration as { dryRun?: boolean }
    if (configuration.dryRun) {
      return {
        status: 200,
        body: {
          ...resource,
          status: { state: 'DONE' },
          statistics: {
            totalBytesProcessed: String(this.dryRunBytes),
            query: { totalBytesProcessed: String(this.dryRunBytes) },
          },
        },
      }
    }
    const ref = resource.jobReference as { jobId: string }
    if (this.jobs.has(ref.jobId)) return conflict(`Already Exists: Job ${ref.jobId}`)
    const job: FakeJob = { resource, pollsUntilDone: this.pollsUntilDone, rows: this.resultRows }
    if (this.#nextFailure) {
      job.error = this.#nextFailure
      this.#nextFailure = undefined
    }
    this.jobs.set(ref.jobId, job)
    return { status: 200, body: this.#view({ ...job, pollsUntilDone: 1 }) }
  }

  #view(job: FakeJob): Record<string, unknown> {
    const done = job.pollsUntilDone === 0
    return {
      ...job.resource,
      status: done
        ? { state: 'DONE', ...(job.error ? { errorResult: job.error, errors: [job.error] } : {}) }
        : { state: 'RUNNING' },
      statistics: { totalBytesProcessed: '4096' },
    }
  }
}

function queryResults(jobReference: unknown, rows: Record<string, unknown>[]): unknown {
  const names = rows[0] === undefined ? [] : Object.keys(rows[0])
  return {
    kind: 'bigquery#getQueryResultsResponse',
    jobReference,
    jobComplete: true,
    totalRows: String(rows.length),
    schema: { fields: names.map((name) => ({ name, type: 'INTEGER', mode: 'NULLABLE' })) },
    rows: rows.map((r) => ({ f: names.map((n) => ({ v: r[n] === null ? null : String(r[n]) })) })),
  }
}

const notFound = (message: string) => ({
  status: 404,
  body: { error: { code: 404, message, status: 'NOT_FOUND' } },
})
const conflict = (message: string) => ({
  status: 409,
  body: { error: { code: 409, message, status: 'ALREADY_EXISTS' } },
})

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

function parseMultipart(raw: Buffer, contentType: string): NonNullable<RecordedRequest['upload']> {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)![1]!
  const parts: Buffer[] = []
  const delimiter = Buffer.from(`--${boundary}`)
  let start = raw.indexOf(delimiter)
  while (start >= 0) {
    const next = raw.indexOf(delimiter, start + delimiter.length)
    if (next < 0) break
    parts.push(raw.subarray(start + delimiter.length, next))
    start = next
  }
  const body = (part: Buffer) => {
    const split = part.indexOf('\r\n\r\n')
    return part.subarray(split + 4, part.length - 2)
  }
  const resource = JSON.parse(body(parts[0]!).toString('utf8')) as Record<string, unknown>
  const file = body(parts[1]!)
  return { resource, bytes: file.length, head: file.subarray(0, 4).toString('latin1') }
}
