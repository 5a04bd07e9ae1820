/**
 * The socket of a MySQL connection without TLS, reading into buffers that glibc keeps on its heap.
 *
 * A plain `net.Socket` reads into a fresh 64 KiB buffer each time. With the mmap threshold the launcher fixes at
 * 64 KiB (lib/runtime/allocator-environment.mjs: the threshold keeps freed memory from staying resident through the merge)
 * each one is an mmap of fresh pages and, once collected, a munmap: about 2,800 of each for a 1M-row table, and half
 * again the extract's CPU. The PostgreSQL socket reuses one buffer (pg-read-buffer-socket.ts); mysql2 cannot be given
 * that, because its packet parser keeps slices of earlier reads (a packet spanning reads, packets queued while the
 * connection is paused). So every read gets a buffer of its own, just small enough to come from glibc's heap, where
 * a freed one is reused without a system call.
 */
import { Socket } from 'node:net'

/** A read's buffer: below glibc's 64 KiB mmap threshold with its chunk header. */
export const READ_BUFFER_BYTES = 60 << 10

/** The settings of mysql2's connection config the socket is made from. */
export interface MysqlSocketConfig {
  readonly host?: string
  readonly port?: number
  readonly socketPath?: string
  readonly ssl?: unknown
  readonly enableKeepAlive?: boolean
  readonly keepAliveInitialDelay?: number
}

/**
 * mysql2's `stream` option: connects as mysql2 itself would (TCP with no delay and keep-alive, or a Unix socket),
 * reading into READ_BUFFER_BYTES buffers unless the connection is to be encrypted (TLS then reads its own way).
 */
export function mysqlSocketFactory({ config }: { config: MysqlSocketConfig }): Socket {
  const socket: Socket = config.ssl
    ? new Socket()
    : new Socket({
        onread: {
          buffer: () => Buffer.allocUnsafe(READ_BUFFER_BYTES),
          callback: (bytes: number, read: Uint8Array) => {
            socket.emit('data', Buffer.from(read.buffer, read.byteOffset, bytes))
            return true
          },
        },
      })
  if (config.socketPath !== undefined) return socket.connect({ path: config.socketPath })
  socket.connect({ host: config.host ?? 'localhost', port: config.port ?? 3306 })
  socket.setNoDelay(true)
  if (config.enableKeepAlive !== false)
    socket.once('connect', () => socket.setKeepAlive(true, config.keepAliveInitialDelay ?? 0))
  return socket
}
