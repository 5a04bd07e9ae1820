/**
 * `COPY … FROM STDIN` through the `pg` client's own connection (a `pg` submittable, as pg-copy-streams does, which
 * is only a devDependency): the bytes of `source` go to the server as CopyData messages, waiting for the socket to
 * drain, then CopyDone; a failing source sends CopyFail, so the server discards what it received.
 */
import type { Socket } from 'node:net'

/** What `pg` hands a submittable query. */
interface PgConnection {
  readonly stream: Socket
  query(text: string): void
  sendCopyFromChunk(chunk: Buffer): void
  endCopyFrom(): void
  sendCopyFail(message: string): void
}

export class CopyIn {
  readonly text: string
  /** Resolves with the row count the server reported once the connection is ready again. */
  readonly done: Promise<number>
  readonly #source: AsyncIterable<Buffer>
  #rowCount: number | undefined
  #error: unknown
  #resolve!: (rows: number) => void
  #reject!: (error: unknown) => void

  constructor(text: string, source: AsyncIterable<Buffer>) {
    this.text = text
    this.#source = source
    this.done = new Promise<number>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
  }

  submit(connection: PgConnection): void {
    connection.query(this.text)
  }

  handleCopyInResponse(connection: PgConnection): void {
    void this.#send(connection)
  }

  async #send(connection: PgConnection): Promise<void> {
    try {
      for await (const chunk of this.#source) {
        connection.sendCopyFromChunk(chunk)
        if (connection.stream.writableNeedDrain)
          await new Promise<void>((resolve) => connection.stream.once('drain', resolve))
      }
      connection.endCopyFrom()
    } catch (error) {
      this.#error = error
      connection.sendCopyFail(error instanceof Error ? error.message : String(error))
    }
  }

  handleCommandComplete(message: { text?: string }): void {
    const match = /^COPY (\d+)/.exec(message.text ?? '')
    if (match) this.#rowCount = Number(match[1])
  }

  /** The server refused the data, or the connection was lost (then no ReadyForQuery follows). */
  handleError(error: unknown): void {
    this.#reject(this.#error ?? error)
  }

  handleReadyForQuery(): void {
    if (this.#error !== undefined) this.#reject(this.#error)
    else if (this.#rowCount === undefined) this.#reject(new Error('COPY ended without a row count'))
    else this.#resolve(this.#rowCount)
  }
}
