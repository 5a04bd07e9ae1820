import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

import { callName, serverError, throttled, type CloudService } from './cloud-calls.ts'
import type { FaultSchedule } from './fault-schedule.ts'
import { xorshift32 } from './fault-schedule.ts'

export interface FaultProxyOptions {
  /**
   * Awaited before a request is forwarded (not before a fault that keeps it from the target): a test makes the
   * BigQuery emulator's `jobs.get` wait for the job to finish, so that clients polling once a second do not.
   */
  readonly beforeForward?: (call: string) => Promise<void>
}

/** One call the proxy saw and what it did with it. */
export interface ProxiedCall {
  readonly call: string
  readonly kind: string
  /** The target's status, when the request was forwarded and answered. */
  readonly status?: number
}

/**
 * An HTTP proxy on 127.0.0.1 in front of one emulator (s3rver, dynalite, the BigQuery emulator): each request
 * passes, or meets the fault its `FaultSchedule` decides (see FaultKind). Point the client's endpoint at `url`.
 * The schedule may be shared by several proxies (one seed for a whole scenario).
 */
export class FaultProxy {
  readonly calls: ProxiedCall[] = []
  readonly #server: Server
  readonly #target: URL
  readonly #sockets = new Set<Socket>()
  #url = ''

  private constructor(
    readonly service: CloudService,
    target: string,
    readonly schedule: FaultSchedule,
    readonly options: FaultProxyOptions,
  ) {
    this.#target = new URL(target)
    // A client that gives up while its request is read or forwarded aborts it: the connection is gone already.
    this.#server = createServer((req, res) => void this.#serve(req, res).catch(() => res.socket?.destroy()))
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket)
      socket.once('close', () => this.#sockets.delete(socket))
    })
  }

  static async start(
    service: CloudService,
    target: string,
    schedule: FaultSchedule,
    options: FaultProxyOptions = {},
  ): Promise<FaultProxy> {
    const proxy = new FaultProxy(service, target, schedule, options)
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve))
    proxy.#url = `http://127.0.0.1:${(proxy.#server.address() as AddressInfo).port}`
    return proxy
  }

  get url(): string {
    return this.#url
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET'
    const url = req.url ?? '/'
    const call = callName(this.service, { method, url, headers: req.headers })
    const decision = this.schedule.next(call)
    const body = await readBody(req)
    const wait = decision.kind === 'pass' ? 0 : decision.waitMs
    const pick = xorshift32(Math.floor(wait * 7919) + 1)()
    switch (decision.kind) {
      case 'error':
      case 'throttle': {
        const answer =
          decision.kind === 'error'
            ? serverError(this.service, pick, method)
            : throttled(this.service, method)
        this.calls.push({ call, kind: decision.kind, status: answer.status })
        res.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(answer.body) })
        res.end(answer.body)
        return
      }
      case 'timeout':
        this.calls.push({ call, kind: 'timeout' })
        await sleep(wait)
        res.socket?.destroy()
        return
      case 'delay':
        await sleep(wait)
        break
      default:
        break
    }
    let answer: { status: number; headers: IncomingHttpHeaders; body: Buffer }
    try {
      await this.options.beforeForward?.(call)
      answer = await this.#forward(method, url, req.headers, body)
    } catch {
      // The emulator itself failed to answer: the client sees the connection cut, as it would see it.
      this.calls.push({ call, kind: `${decision.kind}, target unreachable` })
      res.socket?.destroy()
      return
    }
    this.calls.push({ call, kind: decision.kind, status: answer.status })
    if (decision.kind === 'drop') {
      res.socket?.destroy()
      return
    }
    const headers = { ...answer.headers }
    delete headers['transfer-encoding']
    headers['content-length'] = String(answer.body.length)
    res.writeHead(answer.status, headers)
    res.end(answer.body)
  }

  #forward(
    method: string,
    url: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
  ): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const forwarded = httpRequest(
        {
          host: this.#target.hostname,
          port: this.#target.port,
          method,
          path: url,
          // The Host header is kept: S3 signatures cover it (the emulators do not check it against their port).
          headers: {
            ...withoutFraming(headers),
            'content-length': String(body.length),
            connection: 'close',
          },
        },
        (answer) => {
          readBody(answer).then(
            (data) => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: data }),
            reject,
          )
        },
      )
      forwarded.on('error', reject)
      forwarded.end(body)
    })
  }
}

/** The headers of a request read whole: its length is set again, so no chunked framing is forwarded. */
function withoutFraming(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const copy = { ...headers }
  delete copy['transfer-encoding']
  return copy
}

async function readBody(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
