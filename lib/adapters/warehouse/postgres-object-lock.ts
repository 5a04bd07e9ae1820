import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'

import { WarehouseBusyError } from '../../core/errors.ts'
import type { TableRef } from '../../core/table-ref.ts'

/**
 * One writer at a time per dimension (or fact table) of a PostgreSQL warehouse. dimsync's lease serializes the runs
 * of one installation; two installations (two machines, two copies of a project) sharing a PostgreSQL schema have
 * no lease in common, and two merges planned against the same current versions would each close them and insert
 * their own. A session-level advisory lock keyed on the object's schema and name is held from the merge's first
 * read of the object to its COMMIT: the second merge waits, then plans against what the first committed. A process
 * that dies loses its session, and PostgreSQL releases the lock with it.
 */

export interface ObjectLockOptions {
  /** How long to wait for another session's lock before refusing. */
  readonly waitMs: number
  /** Where the wait comes from, for the message (`DIMSYNC_WAREHOUSE_WAIT_SECONDS`). */
  readonly waitSetting: string
  readonly pollMs?: number
}

/** The advisory lock's key text: one per object, apart from any other application's keys. */
export function objectLockKey(ref: TableRef): string {
  return `dimsync:${JSON.stringify([ref.schema, ref.name])}`
}

/** `hashtextextended` spreads the key text over PostgreSQL's 64-bit advisory key space. */
const KEY = 'hashtextextended($1, 0)'

/**
 * Takes the locks of `refs` on `client`'s session, in one order whatever the order given (two writers of the same
 * objects cannot deadlock), waiting at most `options.waitMs` for each; answers the function that releases them.
 * Throws `WarehouseBusyError` (retryable) naming the session that holds one, with nothing written.
 */
export async function lockObjects(
  client: pg.Client,
  refs: readonly TableRef[],
  options: ObjectLockOptions,
): Promise<() => Promise<void>> {
  const keys = [...new Set(refs.map(objectLockKey))].sort()
  const held: string[] = []
  const release = async () => {
    for (const key of held.splice(0).reverse()) await client.query(`SELECT pg_advisory_unlock(${KEY})`, [key])
  }
  try {
    for (const [i, key] of keys.entries()) {
      await waitForLock(
        client,
        key,
        refs.find((r) => objectLockKey(r) === key)!,
        options,
      )
      held.push(keys[i]!)
    }
  } catch (error) {
    await release().catch(() => undefined)
    throw error
  }
  return release
}

async function waitForLock(
  client: pg.Client,
  key: string,
  ref: TableRef,
  options: ObjectLockOptions,
): Promise<void> {
  const deadline = Date.now() + options.waitMs
  const pollMs = options.pollMs ?? 200
  for (;;) {
    const { rows } = await client.query<{ locked: boolean }>(
      `SELECT pg_try_advisory_lock(${KEY}) AS locked`,
      [key],
    )
    if (rows[0]?.locked === true) return
    if (Date.now() + pollMs > deadline) {
      const holder = await describeHolder(client, key).catch(() => undefined)
      throw new WarehouseBusyError(
        `${ref.schema}.${ref.name}`,
        `${ref.schema}.${ref.name} is being written by another dimsync${holder ? ` (${holder})` : ''}; waited ` +
          `${Math.round(options.waitMs / 1000)} s (${options.waitSetting}). Two installations sharing a ` +
          `PostgreSQL schema write one table at a time: run again when it is done`,
      )
    }
    await sleep(pollMs)
  }
}

/** The session holding `key`'s lock as PostgreSQL knows it: its application, client and pid. */
async function describeHolder(client: pg.Client, key: string): Promise<string | undefined> {
  const { rows } = await client.query<{ pid: number; application_name: string; client_addr: string | null }>(
    `SELECT a.pid, a.application_name, host(a.client_addr) AS client_addr
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
        AND ((l.classid::bigint << 32) | l.objid::bigint) = ${KEY}`,
    [key],
  )
  const [row] = rows
  if (row === undefined) return undefined
  const who = row.application_name === '' ? 'a session' : `session "${row.application_name}"`
  return `${who} from ${row.client_addr ?? 'a local socket'}, PostgreSQL pid ${row.pid}`
}
