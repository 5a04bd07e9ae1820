import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Bytes the sender writes, in 16 KiB pieces: more than one socket read. */
export const SENT = randomBytes(1 << 20)

export interface LoopbackSender {
  /** Where to connect: a port of 127.0.0.1, or a Unix socket path. */
  readonly address: { port?: number; socketPath?: string }
  close(): Promise<void>
}

/**
 * A real server for socket tests (the database sockets, pg-read-buffer-socket.ts and mysql-read-socket.ts): it
 * writes SENT to every connection, then closes it. TCP on 127.0.0.1, or a Unix socket in a fresh folder.
 */
export async function startSender(where: 'tcp' | 'unix' = 'tcp'): Promise<LoopbackSender> {
  const server: Server = createServer((peer) => {
    for (let at = 0; at < SENT.length; at += 16 << 10) peer.write(SENT.subarray(at, at + (16 << 10)))
    peer.end()
  })
  const folder = where === 'unix' ? await mkdtemp(join(tmpdir(), 'dimsync-socket-')) : undefined
  const socketPath = folder === undefined ? undefined : join(folder, 'server.sock')
  await new Promise<void>((resolve) =>
    socketPath === undefined ? server.listen(0, '127.0.0.1', resolve) : server.listen(socketPath, resolve),
  )
  return {
    address:
      socketPath !== undefined ? { socketPath } : { port: (server.address() as { port: number }).port },
    async close() {
      await new Promise((resolve) => server.close(resolve))
      if (folder !== undefined) await rm(folder, { recursive: true, force: true })
    },
  }
}
