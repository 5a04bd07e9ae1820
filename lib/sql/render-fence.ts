import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * The lease fence at the warehouse (`_dimsync_fences`, one row per target): the fencing token of the newest lease
 * that merged into the target. A lease holder advances it before its merge; the merge checks it just before
 * COMMIT, so a holder whose lease lapsed while its job queued (and was taken over: a higher token advanced the
 * fence) cannot commit beside the new holder. Warehouses that run the merge as one job (BigQuery) need it: their
 * lease check runs before the job is submitted, not at its COMMIT.
 */
export const FENCE_TABLE = '_dimsync_fences'

/** A lease holder as the fence knows it: its fencing token and run. */
export interface FenceHolder {
  readonly token: number
  readonly owner: string
}

export function renderFenceDdl(d: SqlDialect, fences: TableRef): CompiledStatement {
  return {
    label: 'create lease fence',
    sql:
      `CREATE TABLE IF NOT EXISTS ${d.table(fences)} (\n  target ${d.type('string')} NOT NULL, token ${d.type('int64')} NOT NULL, ` +
      `owner ${d.type('string')}, advanced_at ${d.type('timestamp')}\n)`,
  }
}

/**
 * Moves the target's fence up to `holder`'s token (never down: a lapsed holder advancing late changes nothing),
 * creating its row the first time. Run as one transaction.
 */
export function renderFenceAdvance(
  d: SqlDialect,
  fences: TableRef,
  target: string,
  holder: FenceHolder,
  at: string,
): CompiledStatement[] {
  const t = d.table(fences)
  const ofTarget = `target = ${d.stringLiteral(target)}`
  const token = String(Math.trunc(holder.token))
  const owner = d.stringLiteral(holder.owner)
  const now = d.timestampLiteral(at)
  return [
    {
      label: 'advance lease fence',
      sql: `UPDATE ${t} SET token = ${token}, owner = ${owner}, advanced_at = ${now}\nWHERE ${ofTarget} AND token < ${token}`,
    },
    {
      label: 'create lease fence row',
      sql:
        `INSERT INTO ${t} (target, token, owner, advanced_at)\n` +
        `SELECT ${d.stringLiteral(target)}, ${token}, ${owner}, ${now} FROM (SELECT 1 AS one) s\n` +
        `WHERE NOT EXISTS (SELECT 1 FROM ${t} WHERE ${ofTarget})`,
    },
  ]
}

/** Marks the error a fenced-off merge raises, so the adapter turns it into LeaseLostError (see parseFenceRefusal). */
const OPEN = '[dimsync-fence table='
const CLOSE = ' [/dimsync-fence]'

/**
 * Inside the merge's transaction, just before COMMIT: fails when a newer lease advanced the fence past `holder`'s
 * token. The merge rolls back; nothing is written.
 */
export function renderFenceCheck(
  d: SqlDialect,
  fences: TableRef,
  table: string,
  target: string,
  holder: FenceHolder,
): CompiledStatement {
  const token = String(Math.trunc(holder.token))
  const lit = (text: string) => d.stringLiteral(text)
  const message = [
    lit(
      `${OPEN}${encodeURIComponent(table)}] table ${table}: lease of run ${holder.owner} (token ${token}) was taken over by run `,
    ),
    `COALESCE(owner, '?')`,
    lit(' (token '),
    d.castToString('token'),
    lit(`) before this merge committed; it was rolled back, nothing was written${CLOSE}`),
  ].join(' || ')
  return {
    label: 'check the lease fence',
    sql: `SELECT ${d.raiseError(message)} FROM ${d.table(fences)}\nWHERE target = ${lit(target)} AND token > ${token}`,
  }
}

/** The table and message of a fenced-off merge inside a warehouse error text, or undefined. */
export function parseFenceRefusal(text: string): { table: string; message: string } | undefined {
  const start = text.indexOf(OPEN)
  const end = text.indexOf(CLOSE, start)
  if (start < 0 || end < 0) return undefined
  const inner = text.slice(start + OPEN.length, end)
  const bracket = inner.indexOf('] ')
  if (bracket < 0) return undefined
  let table = inner.slice(0, bracket)
  try {
    table = decodeURIComponent(table)
  } catch {
    // keep it encoded
  }
  return { table, message: inner.slice(bracket + 2) }
}
