/**
 * `COPY (...) TO STDOUT` read straight off the `pg` client's socket, for the PostgreSQL source.
 *
 * The server sends one CopyData message per row. pg-copy-streams made a Buffer slice per message and then a
 * zero-filled Buffer per socket read to join them: about 1.2 million short-lived objects and 140 MB of copies
 * for a 1M-row, 10-column table, which grew V8's young generation to its 32 MB maximum (kept for the rest of the
 * process, the merge included) and cost the JavaScript thread more than reading the wire. Here the rows' bytes
 * are copied once into one reused block, handed to the sink whole rows at a time; the sink knows where each
 * block ends (a row's end), so it never scans for quotes.
 */
import type { Socket } from 'node:net'

import { CONSUMES_CHUNK_AT_ONCE } from './pg-read-buffer-socket.ts'

/** Where the rows go: CSV bytes, consumed before `append` returns (the block is reused). */
export interface CopyOutSink {
  /**
   * `recordEnd`: the bytes end where a row ends (false only for a row larger than the block, sent in pieces).
   * Returns a promise when the reader must wait before sending more; throws to stop the copy.
   */
  append(bytes: Buffer, recordEnd: boolean): Promise<void> | undefined
}

/** What `pg` hands a submittable query: its connection, whose socket the reader takes over while rows come. */
interface PgConnection {
  readonly stream: Socket
  query(text: string): void
}

const COPY_DATA = 0x64 // 'd'
const COPY_OUT_RESPONSE = 0x48 // 'H'
const NOTICE_RESPONSE = 0x4e // 'N'
const PARAMETER_STATUS = 0x53 // 'S'
const NOTIFICATION_RESPONSE = 0x41 // 'A'
const HEADER_BYTES = 5
/** Rows are handed to the sink in blocks of this size (a larger row goes in pieces of its own). */
export const COPY_BLOCK_BYTES = 256 << 10

/**
 * A `pg` submittable (`client.query(copy)`): `done` resolves with the row count the server reported once the
 * connection is ready again, after every row went to the sink; it rejects with the server's error, a lost
 * connection, or what the sink threw.
 */
export class CopyOut {
  readonly text: string
  readonly done: Promise<number>
  /** CopyData messages seen: rows, one each. */
  rowsSeen = 0
  /** The server's copy data was read to its end (after a failure: the connection is still usable). */
  readToEnd = false
  readonly #sink: CopyOutSink
  readonly #blockBytes: number
  #block: Buffer
  #used = 0
  readonly #header = Buffer.alloc(HEADER_BYTES)
  #headerHave = 0
  /** Bytes of the current message's body still to come; its kind in `#code`. */
  #remaining = 0
  #code = 0
  #inBody = false
  /** The current row is larger than the block: its bytes go to the sink as they come. */
  #direct = false
  #connection: PgConnection | undefined
  #pgDataHandler: ((chunk: Buffer) => void) | undefined
  #waiting: Promise<void> | undefined
  #detached = false
  #rowCount: number | undefined
  #settled = false
  #resolve!: (rows: number) => void
  #reject!: (error: unknown) => void
  // Every byte of a chunk is parsed, copied or handed to the sink before this returns: the socket may reuse it.
  readonly #onData = Object.assign(
    (chunk: Buffer) => {
      try {
        this.#parse(chunk)
      } catch (error) {
        this.fail(error)
      }
    },
    { [CONSUMES_CHUNK_AT_ONCE]: true as const },
  )

  constructor(text: string, sink: CopyOutSink, blockBytes = COPY_BLOCK_BYTES) {
    this.text = text
    this.#sink = sink
    this.#blockBytes = blockBytes
    this.#block = Buffer.allocUnsafe(blockBytes)
    this.done = new Promise<number>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
  }

  /** Called by `pg` when the query's turn comes: takes the socket's bytes until the copy ends. */
  submit(connection: PgConnection): void {
    this.#connection = connection
    const stream = connection.stream
    const listeners = stream.listeners('data') as ((chunk: Buffer) => void)[]
    if (listeners.length !== 1) throw new Error(`pg's socket has ${listeners.length} data listeners, not 1`)
    this.#pgDataHandler = listeners[0]
    stream.removeListener('data', this.#pgDataHandler!)
    stream.on('data', this.#onData)
    connection.query(this.text)
  }

  /** Stops the copy with `error` (the caller then closes the connection: the server would go on sending). */
  fail(error: unknown): void {
    this.#settle(error)
    this.#release()
  }

  handleCommandComplete(message: { text?: string }): void {
    const match = /^COPY (\d+)/.exec(message.text ?? '')
    if (match) this.#rowCount = Number(match[1])
  }

  /** The server's error (pg parsed it after the copy data), or a lost connection. */
  handleError(error: unknown): void {
    this.fail(error)
  }

  handleReadyForQuery(): void {
    if (this.#rowCount === undefined) this.#settle(new Error('COPY ended without a row count'))
    else if (this.#rowCount !== this.rowsSeen) {
      this.#settle(new Error(`COPY reported ${this.#rowCount} rows but sent ${this.rowsSeen}`))
    } else this.#settle(undefined, this.#rowCount)
  }

  #parse(chunk: Buffer): void {
    let i = 0
    while (i < chunk.length) {
      if (!this.#inBody) {
        const take = Math.min(HEADER_BYTES - this.#headerHave, chunk.length - i)
        chunk.copy(this.#header, this.#headerHave, i, i + take)
        this.#headerHave += take
        i += take
        if (this.#headerHave < HEADER_BYTES) return
        this.#headerHave = 0
        this.#code = this.#header[0]!
        this.#remaining = this.#header.readUInt32BE(1) - 4
        if (!isCopyMessage(this.#code)) {
          // CopyDone, an error, or the end: pg parses the rest (CommandComplete, ReadyForQuery, ErrorResponse).
          this.#flush()
          this.#detach(Buffer.concat([this.#header, chunk.subarray(i)]))
          return
        }
        this.#inBody = true
        if (this.#code === COPY_DATA) this.#startRow()
      }
      const take = Math.min(this.#remaining, chunk.length - i)
      if (this.#code === COPY_DATA && take > 0) {
        if (this.#direct) this.#wait(this.#sink.append(chunk.subarray(i, i + take), take === this.#remaining))
        else this.#used += chunk.copy(this.#block, this.#used, i, i + take)
      }
      i += take
      this.#remaining -= take
      if (this.#remaining === 0) {
        this.#inBody = false
        this.#direct = false
      }
    }
  }

  #startRow(): void {
    this.rowsSeen++
    if (this.#used + this.#remaining <= this.#blockBytes) return
    this.#flush()
    this.#direct = this.#remaining > this.#blockBytes
  }

  /** Hands the block's whole rows to the sink. */
  #flush(): void {
    if (this.#used === 0) return
    const bytes = this.#block.subarray(0, this.#used)
    this.#used = 0
    this.#wait(this.#sink.append(bytes, true))
  }

  /** Pauses the socket until the sink has room (the server waits: TCP backpressure). */
  #wait(room: Promise<void> | undefined): void {
    if (room === undefined) return
    const stream = this.#connection!.stream
    if (!this.#detached) stream.pause()
    const waiting = (this.#waiting = room.then(
      () => {
        if (this.#waiting !== waiting) return
        this.#waiting = undefined
        if (!this.#detached) stream.resume()
      },
      (error: unknown) => this.fail(error),
    ))
  }

  /**
   * Gives the socket back to pg with the bytes that follow the copy data. The sink's waits may still be pending:
   * the rows are all written, and pg only reads the end of the statement.
   */
  #detach(rest: Buffer): void {
    this.#detached = true
    this.readToEnd = true
    const stream = this.#connection!.stream
    stream.removeListener('data', this.#onData)
    const handler = this.#pgDataHandler!
    stream.on('data', handler)
    handler(rest)
    stream.resume()
  }

  /** Stops reading after a failure; the socket stays paused until the caller closes it. */
  #release(): void {
    if (this.#detached || this.#connection === undefined) return
    this.#detached = true
    this.#connection.stream.removeListener('data', this.#onData)
    this.#connection.stream.pause()
  }

  #settle(error: unknown, rows = 0): void {
    if (this.#settled) return
    this.#settled = true
    this.#block = Buffer.alloc(0)
    if (error !== undefined) this.#reject(error)
    else this.#resolve(rows)
  }
}

/** Messages that may come while rows are copied: the rows, and what the server may send at any time. */
function isCopyMessage(code: number): boolean {
  return (
    code === COPY_DATA ||
    code === COPY_OUT_RESPONSE ||
    code === NOTICE_RESPONSE ||
    code === PARAMETER_STATUS ||
    code === NOTIFICATION_RESPONSE
  )
}
