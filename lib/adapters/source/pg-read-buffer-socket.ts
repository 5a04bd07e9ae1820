/**
 * The socket of a PostgreSQL connection without TLS, reading into one reused buffer.
 *
 * A plain `net.Socket` hands every read (up to 64 KiB) over in a Buffer of its own, which glibc allocates and
 * frees. With the mmap threshold the launcher fixes at 64 KiB (lib/runtime/allocator-environment.mjs: the threshold keeps
 * freed memory from staying resident through the merge) each of those is an mmap and a munmap: about 3,600 of each
 * for a 1M-row table, and half again the extract's CPU. Here the kernel writes every read into one buffer; a
 * listener marked as consuming its chunk before it returns (the COPY reader, pg-copy-out.ts) is given that buffer
 * itself, any other listener (pg's own parser, which keeps a partial message's bytes) a copy of the bytes read.
 */
import { Socket } from 'node:net'

/** Read buffer size: what libuv suggests for a stream read. */
const READ_BUFFER_BYTES = 64 << 10

/** Marks a 'data' listener that is done with its chunk when it returns (the chunk's memory is then reused). */
export const CONSUMES_CHUNK_AT_ONCE = Symbol('consumes its chunk before returning')

type DataListener = ((chunk: Buffer) => void) & { [CONSUMES_CHUNK_AT_ONCE]?: true }

/** `pg`'s `stream` option: the reused-buffer socket unless the connection is encrypted (TLS reads its own way). */
export function pgSocketFactory(config: { ssl?: unknown }): Socket {
  if (config.ssl) return new Socket()
  const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES)
  const socket: Socket = new Socket({
    onread: {
      buffer,
      callback: (bytes: number, read: Uint8Array) => {
        const chunk = Buffer.from(read.buffer, read.byteOffset, bytes)
        const listeners = socket.listeners('data') as DataListener[]
        const inPlace = listeners.length > 0 && listeners.every((l) => l[CONSUMES_CHUNK_AT_ONCE] === true)
        socket.emit('data', inPlace ? chunk : Buffer.from(chunk))
        return true
      },
    },
  })
  return socket
}
