import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

import { afterEach, describe, expect, it } from 'vitest'

import { mysqlSocketFactory, READ_BUFFER_BYTES } from '../../../../lib/adapters/source/mysql-read-socket.ts'
import { SENT, startSender as startLoopbackSender, type LoopbackSender } from './support/loopback-sender.ts'

/** glibc's mmap threshold as the launcher fixes it (lib/runtime/allocator-environment.mjs). */
const MMAP_THRESHOLD = 64 << 10

let sender: LoopbackSender | undefined
afterEach(async () => {
  await sender?.close()
  sender = undefined
})

/** Starts the sender this test's sockets connect to (closed after the test). */
async function startSender(where: 'tcp' | 'unix'): Promise<{ port?: number; socketPath?: string }> {
  sender = await startLoopbackSender(where)
  return sender.address
}

/** Every chunk the socket emits, kept as emitted (mysql2's parser keeps slices of earlier reads). */
function keepChunks(socket: Socket): { chunks: Buffer[]; ended: Promise<unknown> } {
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  return { chunks, ended: new Promise((resolve) => socket.once('end', resolve)) }
}

describe('mysqlSocketFactory (the MySQL connection socket reading into buffers below the mmap threshold)', () => {
  it.each(['tcp', 'unix'] as const)(
    'over %s: every read has memory of its own below 64 KiB, and chunks kept stay intact after later reads',
    async (where) => {
      const address = await startSender(where)
      const socket = mysqlSocketFactory({ config: { host: '127.0.0.1', ...address } })
      const { chunks, ended } = keepChunks(socket)
      await ended
      expect(chunks.length).toBeGreaterThan(16)
      expect(new Set(chunks.map((c) => c.buffer)).size).toBe(chunks.length)
      expect(Math.max(...chunks.map((c) => c.buffer.byteLength))).toBe(READ_BUFFER_BYTES)
      expect(READ_BUFFER_BYTES).toBeLessThan(MMAP_THRESHOLD - 16)
      expect(Buffer.concat(chunks).equals(SENT)).toBe(true)
    },
  )

  it('connects over TCP as mysql2 does: no delay, keep-alive unless turned off', async () => {
    const { port } = await startSender('tcp')
    const socket = mysqlSocketFactory({ config: { host: '127.0.0.1', port, keepAliveInitialDelay: 5000 } })
    const keepAlive: unknown[][] = []
    const setKeepAlive = socket.setKeepAlive.bind(socket)
    socket.setKeepAlive = (...args: Parameters<Socket['setKeepAlive']>) => {
      keepAlive.push(args)
      return setKeepAlive(...args)
    }
    const { ended } = keepChunks(socket)
    await ended
    expect(keepAlive).toEqual([[true, 5000]])

    const without = mysqlSocketFactory({ config: { host: '127.0.0.1', port, enableKeepAlive: false } })
    without.setKeepAlive = () => expect.fail('keep-alive was turned off')
    await keepChunks(without).ended
  })

  it('stops reading while mysql2 has paused it and goes on where it stopped once resumed', async () => {
    const address = await startSender('tcp')
    const socket = mysqlSocketFactory({ config: { host: '127.0.0.1', ...address } })
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      if (chunks.length === 1) socket.pause()
    })
    const ended = new Promise((resolve) => socket.once('end', resolve))
    await sleep(200)
    // The server has sent everything into the kernel's buffers by now; none of it was read while paused.
    expect(chunks.length).toBe(1)
    socket.resume()
    await ended
    expect(Buffer.concat(chunks).equals(SENT)).toBe(true)
  })

  it('reads an encrypted connection the way Node does (TLS reads the socket itself)', async () => {
    const address = await startSender('tcp')
    const socket = mysqlSocketFactory({ config: { host: '127.0.0.1', ...address, ssl: {} } })
    const { chunks, ended } = keepChunks(socket)
    // Let the kernel's buffers fill, so that Node's reads are full ones.
    socket.pause()
    await sleep(200)
    socket.resume()
    await ended
    expect(Math.max(...chunks.map((c) => c.buffer.byteLength))).toBeGreaterThanOrEqual(MMAP_THRESHOLD)
    expect(Buffer.concat(chunks).equals(SENT)).toBe(true)
  })
})
