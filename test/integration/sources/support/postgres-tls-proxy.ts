import { mkdtemp, rm } from 'node:fs/promises'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TLSSocket } from 'node:tls'

import { makeTestCertificate } from './test-certificate.ts'

/** PostgreSQL's SSLRequest: length 8, then the code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])

export interface PostgresTlsProxy {
  readonly port: number
  /** The self-signed certificate the proxy presents (for 127.0.0.1), as a file for `sslrootcert`. */
  readonly caFile: string
  /** Connections that negotiated TLS, and bytes of decrypted client traffic passed on. */
  readonly stats: { tlsSessions: number; plainSessions: number; bytesToClient: number }
  close(): Promise<void>
}

/**
 * A TLS-terminating proxy in front of a PostgreSQL server without TLS (the machine's server has `ssl = off`): it
 * answers the client's SSLRequest with 'S', runs the TLS handshake as the server with a certificate made for the
 * test (test-certificate.ts), and passes the decrypted protocol on to the real server. The client side is therefore a real
 * encrypted PostgreSQL connection; the server sees an ordinary one.
 */
export async function startPostgresTlsProxy(target: {
  host: string
  port: number
}): Promise<PostgresTlsProxy> {
  const folder = await mkdtemp(join(tmpdir(), 'dimsync-pg-tls-'))
  const { key, cert, certFile: caFile } = await makeTestCertificate(folder)
  const stats = { tlsSessions: 0, plainSessions: 0, bytesToClient: 0 }
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    sockets.add(client)
    client.once('close', () => sockets.delete(client))
    client.once('readable', () => {
      const first = client.read(8) as Buffer | null
      if (first === null) return client.destroy()
      const upstream = createConnection(target)
      sockets.add(upstream)
      upstream.once('close', () => sockets.delete(upstream))
      const bridge = (downstream: Socket) => {
        downstream.on('error', () => upstream.destroy())
        upstream.on('error', () => downstream.destroy())
        upstream.on('data', (chunk: Buffer) => (stats.bytesToClient += chunk.length))
        downstream.pipe(upstream).pipe(downstream)
      }
      if (first.equals(SSL_REQUEST)) {
        stats.tlsSessions++
        client.write('S')
        const secure = new TLSSocket(client, { isServer: true, key, cert })
        bridge(secure)
      } else {
        stats.plainSessions++
        upstream.write(first)
        bridge(client)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    caFile,
    stats,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
      await rm(folder, { recursive: true, force: true })
    },
  }
}
