import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { Row } from '../../lib/ports/warehouse.ts'
import { valueText } from '../../lib/core/value-text.ts'

export type HistoryFormat = 'table' | 'csv' | 'json'

/** Renders versions for a person (a timeline per key), a spreadsheet (CSV) or a program (JSON lines). */
export function formatHistory(table: TableSpec, rows: readonly Row[], format: HistoryFormat): string {
  if (format === 'json') return rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : '')
  if (format === 'csv') return toCsv(rows)
  return timeline(table, rows)
}

function timeline(table: TableSpec, rows: readonly Row[]): string {
  const n = table.columns
  const system = table.systemTime
  const metadata = new Set([...Object.values(n), ...(system ? [system.systemFrom, system.systemTo] : [])])
  const keys = new Set(table.key)
  const lines: string[] = []
  const keyCount = new Set(rows.map((r) => table.key.map((k) => String(r[k])).join('\u0000'))).size
  lines.push(
    `${table.target}: ${rows.length} version${rows.length === 1 ? '' : 's'} of ${keyCount} key${keyCount === 1 ? '' : 's'}`,
  )
  let previousKey: string | undefined
  const time = (v: unknown) =>
    v === null || v === undefined
      ? ''
      : String(v)
          .replace(/\+00(:00)?$/, '')
          .slice(0, 19)
  // Bitemporal tables: when dimsync learned the row and, for a row a later merge superseded, until when.
  const knownWhen = (r: Row) => {
    if (system === undefined) return ''
    const until = time(r[system.systemTo])
    const open = until === '' || until.startsWith('9999-12-31')
    return `  (known ${time(r[system.systemFrom])} → ${open ? 'now' : until})`
  }
  for (const r of rows) {
    const key = table.key.map((k) => `${k}=${String(r[k])}`).join(', ')
    if (key !== previousKey) lines.push(key)
    previousKey = key
    const to = r[n.isCurrent]
      ? r[n.isDeleted]
        ? 'deleted, current'
        : 'current'
      : time(r[n.validTo]) || 'open'
    const attributes = Object.entries(r)
      .filter(([c]) => !metadata.has(c) && !keys.has(c))
      .map(([c, v]) => `${c}=${v === null ? 'NULL' : JSON.stringify(v)}`)
      .join(' ')
    const flag = (r[n.isDeleted] ? ' [deleted]' : '') + knownWhen(r)
    lines.push(
      `  #${String(r[n.surrogateKey]).padEnd(6)} ${time(r[n.validFrom])} → ${to.padEnd(19)}  ${attributes}${flag}`,
    )
  }
  return lines.join('\n') + '\n'
}

function toCsv(rows: readonly Row[]): string {
  if (rows.length === 0) return ''
  const columns = Object.keys(rows[0]!)
  const cell = (v: unknown) => {
    if (v === null || v === undefined) return ''
    const s = valueText(v)
    return /[",\n\r]/.test(s) || s === '' ? `"${s.replaceAll('"', '""')}"` : s
  }
  return [columns.join(','), ...rows.map((r) => columns.map((c) => cell(r[c])).join(','))].join('\n') + '\n'
}
