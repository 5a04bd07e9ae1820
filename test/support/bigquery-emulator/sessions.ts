import { randomUUID } from 'node:crypto'
import { invalidQuery } from './api-errors.ts'
import type { Variable } from './statement-executor.ts'
import type { StoredTable } from './table-store.ts'

/** A transaction open in a script or a session: what it wrote can be put back. */
export interface OpenTransaction {
  /** Each permanent table as it was before the transaction first wrote it (undefined: it did not exist). */
  readonly originals: Map<string, StoredTable | undefined>
  readonly temps: Map<string, StoredTable>
}

/**
 * A BigQuery session (`createSession: true`, then `connectionProperties: [{ key: 'session_id', value }]`): the
 * variables its queries declared, its temporary tables and the transaction a query left open live on between its
 * jobs, so a multi-statement transaction can span several queries. `CALL BQ.ABORT_SESSION()` ends it.
 */
export interface Session {
  readonly id: string
  readonly location: string
  readonly variables: Map<string, Variable>
  temps: Map<string, StoredTable>
  transaction: OpenTransaction | undefined
  ended: boolean
}

export class SessionStore {
  readonly #sessions = new Map<string, Session>()

  create(location: string): Session {
    const session: Session = {
      id: randomUUID().replaceAll('-', ''),
      location,
      variables: new Map(),
      temps: new Map(),
      transaction: undefined,
      ended: false,
    }
    this.#sessions.set(session.id, session)
    return session
  }

  /** The session a job names; an unknown or ended one, or one of another location, is refused. */
  require(id: string, location: string): Session {
    const session = this.#sessions.get(id)
    if (session === undefined || session.ended)
      throw invalidQuery(`Session ${id} was not found or has been terminated`)
    if (session.location.toLowerCase() !== location.toLowerCase())
      throw invalidQuery(`Session ${id} is in location ${session.location}, not ${location}`)
    return session
  }
}
