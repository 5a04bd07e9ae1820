import { EventEmitter } from 'node:events'

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import { CopyOut, type CopyOutSink } from '../../../../lib/adapters/source/pg-copy-out.ts'
import { CONSUMES_CHUNK_AT_ONCE } from '../../../../lib/adapters/source/pg-read-buffer-socket.ts'

/** A PostgreSQL protocol message: kind byte, int32 length (itself included), body. */
function message(kind: string, body: Buffer | string = ''): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body
  const head = Buffer.alloc(5)
  head.write(kind, 0, 'latin1')
  head.writeUInt32BE(bytes.length + 4, 1)
  return Buffer.concat([head, bytes])
}

/** What the server sends for `rows`, with a notice (sent at any time) after `noticeAfter` rows. */
function wire(rows: readonly string[], noticeAfter = -1): Buffer {
  const messages = [message('H', Buffer.from([0, 0, 2, 0, 0, 0, 0]))]
  rows.forEach((row, i) => {
    messages.push(message('d', row))
    if (i === noticeAfter) messages.push(message('N', 'SNOTICE\0\0'))
  })
  messages.push(message('c'), message('C', `COPY ${rows.length}\0`), message('Z', 'I'))
  return Buffer.concat(messages)
}

/** A socket that holds chunks while paused, and pg's own data handler, which sees what the copy hands back. */
class FakeConnection {
  readonly stream = new FakeSocket()
  readonly pgSaw: Buffer[] = []
  queries: string[] = []

  constructor() {
    this.stream.on('data', (chunk: Buffer) => this.pgSaw.push(Buffer.from(chunk)))
  }

  query(text: string): void {
    this.queries.push(text)
  }
}

class FakeSocket extends EventEmitter {
  paused = false
  /**
   * Reads into one buffer, as the PostgreSQL source's socket does (pg-read-buffer-socket.ts) for a listener that
   * says it is done with a chunk when it returns: the buffer is overwritten right after, so bytes kept past that
   * come out wrong.
   */
  reusesReadBuffer = false
  readonly #held: Buffer[] = []
  readonly #readBuffer = Buffer.alloc(64 << 10)

  pause(): this {
    this.paused = true
    return this
  }

  resume(): this {
    this.paused = false
    while (!this.paused && this.#held.length > 0) this.#deliver(this.#held.shift()!)
    return this
  }

  send(chunk: Buffer): void {
    if (this.paused) this.#held.push(chunk)
    else this.#deliver(chunk)
  }

  #deliver(chunk: Buffer): void {
    const inPlace =
      this.reusesReadBuffer &&
      this.listeners('data').every((l) => (l as { [CONSUMES_CHUNK_AT_ONCE]?: true })[CONSUMES_CHUNK_AT_ONCE])
    if (!inPlace) {
      this.emit('data', chunk)
      return
    }
    chunk.copy(this.#readBuffer)
    this.emit('data', this.#readBuffer.subarray(0, chunk.length))
    this.#readBuffer.fill(0xff)
  }
}

/** Sends `bytes` in pieces cut at `cuts`, then plays pg: CommandComplete and ReadyForQuery from what it saw. */
async function run(
  bytes: Buffer,
  cuts: readonly number[],
  sink: CopyOutSink,
  blockBytes?: number,
  reusesReadBuffer = false,
) {
  const connection = new FakeConnection()
  connection.stream.reusesReadBuffer = reusesReadBuffer
  const copy = new CopyOut('COPY (SELECT 1) TO STDOUT WITH (FORMAT csv)', sink, blockBytes)
  copy.submit(connection as never)
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  let from = 0
  for (const point of [...points, bytes.length]) {
    if (point > from) connection.stream.send(bytes.subarray(from, point))
    from = Math.max(from, point)
    // Let waits resolve between pieces, as the event loop would.
    await new Promise((resolve) => setImmediate(resolve))
  }
  // The sink's last wait: the socket holds the end of the copy until it resumes.
  while (connection.stream.paused) await new Promise((resolve) => setTimeout(resolve, 1))
  const rest = Buffer.concat(connection.pgSaw)
  if (rest.length > 0) {
    expect(rest[0]).toBe('c'.charCodeAt(0))
    const text = /COPY \d+/.exec(rest.toString('latin1'))?.[0]
    copy.handleCommandComplete({ text })
    copy.handleReadyForQuery()
  }
  return { copy, connection }
}

const rowText = fc
  .array(fc.oneof(fc.string({ maxLength: 30 }), fc.constant('"quoted, ""with"" newline\n"')), {
    minLength: 1,
    maxLength: 4,
  })
  .map((fields) => `${fields.join(',')}\n`)

describe('CopyOut (COPY TO STDOUT read off the socket)', () => {
  it('hands the sink every row byte for byte, in order, in blocks that end where rows end, however the wire is cut and whether or not the socket reuses its read buffer', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            rowText,
            fc.nat(400).map((n) => `${'x'.repeat(n)}\n`),
          ),
          { maxLength: 60 },
        ),
        fc.array(fc.nat(), { maxLength: 40 }),
        fc.integer({ min: -1, max: 60 }),
        fc.boolean(),
        fc.boolean(),
        async (rows, cuts, noticeAfter, slowSink, reusesReadBuffer) => {
          const pieces: { bytes: Buffer; recordEnd: boolean }[] = []
          const sink: CopyOutSink = {
            append(bytes, recordEnd) {
              pieces.push({ bytes: Buffer.from(bytes), recordEnd })
              // A sink whose conversions are behind every third block.
              if (!slowSink || pieces.length % 3 !== 0) return undefined
              return new Promise((resolve) => setTimeout(resolve, 1))
            },
          }
          // A block of 256 bytes: rows of up to 400 bytes go in pieces of their own.
          const { copy } = await run(wire(rows, noticeAfter), cuts, sink, 256, reusesReadBuffer)
          expect(await copy.done).toBe(rows.length)
          expect(Buffer.concat(pieces.map((p) => p.bytes)).toString()).toBe(rows.join(''))
          // Every place the sink may cut a file is the end of a row.
          const ends = new Set<number>()
          let at = 0
          for (const row of rows) ends.add((at += Buffer.byteLength(row)))
          at = 0
          for (const piece of pieces) {
            at += piece.bytes.length
            if (piece.recordEnd) expect(ends.has(at)).toBe(true)
          }
          if (rows.length > 0) expect(pieces.at(-1)!.recordEnd).toBe(true)
        },
      ),
      { numRuns: 200 },
    )
  })

  it('pauses the socket while the sink has no room, and resumes it after', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => `${i},${'y'.repeat(100)}\n`)
    let release: (() => void) | undefined
    let appended = 0
    const connection = new FakeConnection()
    const copy = new CopyOut(
      'COPY x',
      {
        append() {
          appended++
          if (appended !== 2) return undefined
          return new Promise<void>((resolve) => (release = resolve))
        },
      },
      256,
    )
    copy.submit(connection as never)
    const bytes = wire(rows)
    for (let i = 0; i < bytes.length; i += 100) connection.stream.send(bytes.subarray(i, i + 100))
    expect(connection.stream.paused).toBe(true)
    const before = appended
    release!()
    await new Promise((resolve) => setImmediate(resolve))
    expect(appended).toBeGreaterThan(before)
    expect(connection.stream.paused).toBe(false)
  })

  it('fails with the server error when the server stops the copy, and hands the error to pg', async () => {
    const bytes = Buffer.concat([
      message('H', Buffer.from([0, 0, 1, 0, 0])),
      message('d', '1,a\n'),
      message('E', 'SERROR\0Mcanceling statement due to statement timeout\0\0'),
      message('Z', 'E'),
    ])
    const appended: string[] = []
    const connection = new FakeConnection()
    const copy = new CopyOut('COPY x', { append: (b) => void appended.push(b.toString()) })
    copy.submit(connection as never)
    connection.stream.send(bytes)
    // pg parsed the ErrorResponse: it calls handleError.
    expect(connection.pgSaw[0]![0]).toBe('E'.charCodeAt(0))
    copy.handleError(new Error('canceling statement due to statement timeout'))
    await expect(copy.done).rejects.toThrow('statement timeout')
    expect(copy.readToEnd).toBe(true)
    expect(appended).toEqual(['1,a\n'])
  })

  it('stops reading when the sink throws, and says the copy was not read to its end', async () => {
    const connection = new FakeConnection()
    const copy = new CopyOut(
      'COPY x',
      {
        append() {
          throw new Error('disk full')
        },
      },
      16,
    )
    copy.submit(connection as never)
    connection.stream.send(wire(Array.from({ length: 20 }, (_, i) => `${i},abc\n`)))
    await expect(copy.done).rejects.toThrow('disk full')
    expect(copy.readToEnd).toBe(false)
    expect(connection.stream.listenerCount('data')).toBe(0)
  })

  it('refuses a row count the server did not send', async () => {
    const bytes = wire(['1\n', '2\n'])
    const connection = new FakeConnection()
    const copy = new CopyOut('COPY x', { append: () => undefined })
    copy.submit(connection as never)
    connection.stream.send(bytes)
    copy.handleCommandComplete({ text: 'COPY 3' })
    copy.handleReadyForQuery()
    await expect(copy.done).rejects.toThrow('COPY reported 3 rows but sent 2')
  })
})
