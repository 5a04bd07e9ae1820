import { createConnection, createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'

import type { FaultSchedule } from './fault-schedule.ts'

/**
 * A TCP proxy on 127.0.0.1 in front of a database (PostgreSQL, MariaDB): per connection, by the schedule's
 * decision for `call` (`postgres connect`), it passes, refuses (closes at once: `error`, `throttle`), cuts the
 * connection after a few kilobytes came back (`drop`, `timeout`: a reset in the middle of a read), or passes
 * after a wait (`delay`). Point the source URL at `host:port`.
 */
export class TcpFaultProxy {
  readonly #server: Server
  readonly #sockets = new Set<Socket>()

  private constructor(
    readonly call: string,
    readonly targetPort: number,
    readonly schedule: FaultSchedule,
  ) {
    this.#server = createServer((client) => this.#serve(client))
  }

  static async start(call: string, targetPort: number, schedule: FaultSchedule): Promise<TcpFaultProxy> {
    const proxy = new TcpFaultProxy(call, targetPort, schedule)
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve))
    return proxy
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  #track(socket: Socket): Socket {
    this.#sockets.add(socket)
    socket.once('close', () => this.#sockets.delete(socket))
    return socket
  }

  #serve(client: Socket): void {
    this.#track(client)
    const decision = this.schedule.next(this.call)
    if (decision.kind === 'error' || decision.kind === 'throttle') {
      client.destroy()
      return
    }
    const connect = () => {
      const server = this.#track(createConnection({ host: '127.0.0.1', port: this.targetPort }))
      let budget =
        decision.kind === 'drop' || decision.kind === 'timeout'
          ? 2048 + decision.waitMs * 64
          : Number.POSITIVE_INFINITY
      server.on('data', (chunk: Buffer) => {
        budget -= chunk.length
        if (budget < 0) {
          client.destroy()
          server.destroy()
          return
        }
        client.write(chunk)
      })
      client.on('data', (chunk: Buffer) => server.write(chunk))
      server.on('error', () => client.destroy())
      client.on('error', () => server.destroy())
      server.on('close', () => client.destroy())
      client.on('close', () => server.destroy())
    }
    if (decision.kind === 'delay') setTimeout(connect, decision.waitMs)
    else connect()
  }
}
