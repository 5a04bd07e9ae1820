import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

import { afterEach, describe, expect, it } from 'vitest'

import {
  CONSUMES_CHUNK_AT_ONCE,
  pgSocketFactory,
} from '../../../../lib/adapters/source/pg-read-buffer-socket.ts'
import { SENT, startSender, type LoopbackSender } from './support/loopback-sender.ts'

let sender: LoopbackSender | undefined
afterEach(async () => {
  await sender?.close()
  sender = undefined
})

/** Connects the socket to a sender on 127.0.0.1 (closed after the test). */
async function connectToSender(socket: Socket): Promise<void> {
  sender = await startSender()
  socket.connect(sender.address.port!, '127.0.0.1')
}

const ended = (socket: Socket) => new Promise((resolve) => socket.once('end', resolve))

describe('pgSocketFactory (the PostgreSQL connection socket that reads into one buffer)', () => {
  it("gives pg's own parser, which may keep a chunk, copies that stay intact after later reads", async () => {
    const socket = pgSocketFactory({})
    const kept: Buffer[] = []
    socket.on('data', (chunk: Buffer) => kept.push(chunk))
    const end = ended(socket)
    await connectToSender(socket)
    await end
    expect(kept.length).toBeGreaterThan(1)
    expect(Buffer.concat(kept).equals(SENT)).toBe(true)
  })

  it('hands a listener that is done with each chunk when it returns the one read buffer, without copies', async () => {
    const socket = pgSocketFactory({})
    const memory = new Set<ArrayBufferLike>()
    const copies: Buffer[] = []
    const listener = Object.assign(
      (chunk: Buffer) => {
        memory.add(chunk.buffer)
        copies.push(Buffer.from(chunk))
      },
      { [CONSUMES_CHUNK_AT_ONCE]: true as const },
    )
    socket.on('data', listener)
    const end = ended(socket)
    await connectToSender(socket)
    await end
    expect(copies.length).toBeGreaterThan(1)
    expect(memory.size).toBe(1)
    expect(Buffer.concat(copies).equals(SENT)).toBe(true)
  })

  it('stops reading while paused and goes on where it stopped once resumed (the COPY reader waiting for its sink)', async () => {
    const socket = pgSocketFactory({})
    const copies: Buffer[] = []
    const listener = Object.assign(
      (chunk: Buffer) => {
        copies.push(Buffer.from(chunk))
        if (copies.length === 1) socket.pause()
      },
      { [CONSUMES_CHUNK_AT_ONCE]: true as const },
    )
    socket.on('data', listener)
    const end = ended(socket)
    await connectToSender(socket)
    await sleep(200)
    // The server has sent everything into the kernel's buffers by now; none of it was read while paused.
    expect(copies.length).toBe(1)
    socket.resume()
    await end
    expect(Buffer.concat(copies).equals(SENT)).toBe(true)
  })

  it('reads an encrypted connection the way Node does (TLS reads the socket itself)', async () => {
    const socket = pgSocketFactory({ ssl: { rejectUnauthorized: true } })
    const memory = new Set<ArrayBufferLike>()
    const listener = Object.assign((chunk: Buffer) => void memory.add(chunk.buffer), {
      [CONSUMES_CHUNK_AT_ONCE]: true as const,
    })
    socket.on('data', listener)
    const end = ended(socket)
    await connectToSender(socket)
    await end
    expect(memory.size).toBeGreaterThan(1)
  })
})
