import type { MergeSql } from './merge-sql.ts'

/**
 * The grain checks of a change feed, in place of the one-row-per-key check of snapshots (after
 * renderOperationCheck): a sequenced feed gives every event a sequence, and two events of a key at the same change time
 * (and sequence) are either the same event delivered twice or refused, since nothing says which came last.
 * Each check names the key; nothing is written when one fails.
 */
export function renderChangeFeedChecks(m: MergeSql): void {
  const feed = m.p.table.changes
  const operation = m.p.layout.operation
  const validFrom = m.p.layout.validFromColumn
  if (feed === undefined || operation === undefined || validFrom === undefined) return
  const count = (expr: string) => m.d.castToString(expr)
  const sequence = m.p.layout.sequence
  if (sequence !== undefined) {
    m.emit(
      'check NULL sequence',
      `SELECT ${m.raise(
        'null-sequence',
        `${m.str(`${m.prefix()} has `)} || ${count('COUNT(*)')} || ` +
          m.str(` events with a NULL sequence (column ${sequence.name}), for example key `) +
          ` || MIN(${m.keyText('s')}) || ${m.str('; nothing was written')}`,
      )}\nFROM ${m.stage} s WHERE ${m.col('s', sequence.name)} IS NULL HAVING COUNT(*) > 0`,
    )
  }
  // Two events are the same event when every stored value and the operation's effect agree.
  const deleted = m.deleteEvent('s') ?? 'FALSE'
  const contents = `${m.stagedHash(m.p.layout.stored, 's')} || CASE WHEN ${deleted} THEN 'D' ELSE '' END`
  const grain = [m.keyList('s'), m.col('s', validFrom.name), ...(sequence ? [m.col('s', sequence.name)] : [])]
  const at =
    `${m.str(' at ')} || ${m.d.castToString(m.col('s', validFrom.name))}` +
    (sequence
      ? ` || ${m.str(` (${sequence.name} `)} || ${m.d.castToString(m.col('s', sequence.name))} || ')'`
      : '')
  const what = sequence
    ? `events of one key with the same change time (${validFrom.name}) and sequence (${sequence.name})`
    : `events of one key with the same change time (${validFrom.name})`
  const fix = sequence ? 'the sequence must order them' : 'set extract.sequence to a column that orders them'
  m.emit(
    'check sequence ties',
    m.refuseWithExamples('sequence-tie', {
      offending:
        `SELECT ${m.keyText('s')} || ${at} AS k FROM ${m.stage} s GROUP BY ${grain.join(', ')}\n` +
        `  HAVING COUNT(DISTINCT ${contents}) > 1`,
      message: (n) =>
        `${m.str(`${m.prefix()} has `)} || ${count(n)} || ` +
        m.str(` ties: ${what} but different contents, so which one is the key's state is unknown (${fix})`),
    }),
  )
}

/**
 * Every event names a known operation. It runs before the NULL key check: a row of an operation the config does
 * not name (a truncate, a heartbeat) often has no key, and the way out is to name the value in `ops`.
 */
export function renderOperationCheck(m: MergeSql): void {
  const feed = m.p.table.changes
  const operation = m.p.layout.operation
  if (feed === undefined || operation === undefined) return
  const count = (expr: string) => m.d.castToString(expr)
  const op = m.col('s', operation.name)
  const isKnown = (['insert', 'update', 'delete'] as const).map((k) => m.operationIs('s', k)!).join(' OR ')
  const keyText = `COALESCE(${m.keyText('s')}, ${m.str(m.keys.map((k) => `${k}=NULL`).join(', '))})`
  const known = [...feed.operation.insert, ...feed.operation.update, ...feed.operation.delete]
  m.emit(
    'check operations',
    `SELECT ${m.raise(
      'bad-operation',
      `${m.str(`${m.prefix()} has `)} || ${count('COUNT(*)')} || ` +
        m.str(
          ` events whose operation (column ${operation.name}) is NULL or not one of ${known.join(', ')}, for example key `,
        ) +
        ` || MIN(${keyText} || ${m.str(` with ${operation.name} `)} || COALESCE(${m.d.castToString(op)}, 'NULL'))` +
        ` || ${m.str(
          '; nothing was written. Say what the value means in extract.ops (insert, update, delete or truncate), ' +
            'or skip its rows with ops.ignore',
        )}`,
    )}\nFROM ${m.stage} s WHERE NOT (${isKnown}) HAVING COUNT(*) > 0`,
  )
}
