import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { BigQueryError, errorResponseBody, invalid } from './api-errors.ts'
import type { Faults } from './faults.ts'
import type { ApiRequest, ApiResponse, RestApi } from './rest-api.ts'
import type { Proto } from './zetasql-service.ts'

/** One request the emulator received, kept so tests can assert on how a client talks to BigQuery. */
export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly json?: Proto
  /** The `Authorization` header the client sent (`Bearer <token>`), if any. */
  readonly authorization?: string
  /** Multipart uploads: the job resource, and the file's size and first four bytes (`PAR1` for Parquet). */
  readonly upload?: { readonly resource: Proto; readonly bytes: number; readonly head: string }
}

const API_PREFIX = '/bigquery/v2/'
const UPLOAD_PREFIX = '/upload/bigquery/v2/'

/** The emulator's HTTP side: 127.0.0.1 on a free port, BigQuery's paths, its JSON and multipart bodies. */
export class HttpServer {
  readonly requests: RecordedRequest[] = []
  readonly #api: RestApi
  readonly #faults: Faults
  readonly #server: Server

  constructor(api: RestApi, faults: Faults) {
    this.#api = api
    this.#faults = faults
    this.#server = createServer((req, res) => void this.#serve(req, res))
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let response: ApiResponse
    try {
      response = await this.#handle(req)
    } catch (error) {
      const failure =
        error instanceof BigQueryError
          ? error
          : new BigQueryError(
              'internalError',
              `BigQuery emulator defect: ${(error as Error).stack ?? String(error)}`,
            )
      response = { status: failure.httpStatus, body: errorResponseBody(failure.httpStatus, [failure]) }
    }
    if (response.status === 204 || response.body === undefined) {
      res.writeHead(response.status)
      res.end()
      return
    }
    res.writeHead(response.status, { 'content-type': 'application/json; charset=UTF-8' })
    res.end(JSON.stringify(response.body))
  }

  async #handle(req: IncomingMessage): Promise<ApiResponse> {
    const url = new URL(req.url ?? '/', 'http://emulator')
    const method = req.method ?? 'GET'
    const raw = await readBody(req)
    const contentType = req.headers['content-type'] ?? ''
    let json: Proto | undefined
    let parts: ApiRequest['parts']
    if (contentType.startsWith('multipart/')) parts = parseMultipart(raw, contentType)
    else if (raw.length > 0) {
      try {
        json = JSON.parse(raw.toString('utf8'))
      } catch {
        throw invalid('The request body is not JSON')
      }
    }
    const authorization = req.headers.authorization
    this.requests.push({
      method,
      path: url.pathname,
      query: url.searchParams,
      ...(authorization === undefined ? {} : { authorization }),
      ...(json === undefined ? {} : { json }),
      ...(parts === undefined
        ? {}
        : {
            upload: {
              resource: parts.resource,
              bytes: parts.file.length,
              head: parts.file.subarray(0, 4).toString('latin1'),
            },
          }),
    })
    const fault = this.#faults.forRequest({
      method,
      path: url.pathname,
      query: url.searchParams,
      ...(json === undefined ? {} : { json }),
    })
    if (fault === 'stall') return new Promise<ApiResponse>(() => undefined)
    if (fault !== undefined)
      return { status: fault.status, body: errorResponseBody(fault.status, [fault.error]) }
    const upload = url.pathname.startsWith(UPLOAD_PREFIX)
    const prefix = upload ? UPLOAD_PREFIX : API_PREFIX
    if (!url.pathname.startsWith(prefix))
      throw new BigQueryError('notImplemented', `BigQuery emulator: no resource at ${url.pathname}`)
    if (upload && url.searchParams.get('uploadType') !== 'multipart')
      throw new BigQueryError(
        'notImplemented',
        'BigQuery emulator: only multipart uploads are emulated (uploadType=multipart)',
      )
    const segments = url.pathname
      .slice(prefix.length)
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s))
    return this.#api.handle({
      method,
      segments,
      upload,
      query: url.searchParams,
      ...(json === undefined ? {} : { json }),
      ...(parts === undefined ? {} : { parts }),
    })
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** `multipart/related`: the JSON resource, then the file. */
function parseMultipart(raw: Buffer, contentType: string): { resource: Proto; file: Buffer } {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)?.[1]
  if (boundary === undefined) throw invalid('multipart request without a boundary')
  const delimiter = Buffer.from(`--${boundary}`)
  const parts: Buffer[] = []
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
  if (parts.length < 2) throw invalid('A multipart upload needs the job resource and the file')
  let resource: Proto
  try {
    resource = JSON.parse(body(parts[0]!).toString('utf8'))
  } catch {
    throw invalid('The first part of a multipart upload must be the job resource (JSON)')
  }
  return { resource, file: Buffer.from(body(parts[1]!)) }
}
