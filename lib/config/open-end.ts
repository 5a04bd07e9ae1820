/** The `open_end` sentinel: the far-future instant open versions end at when `valid_to` is not NULL. */
import { show } from './messages.ts'

/** Open-end sentinels must be unmistakably "open": a real business date could otherwise read as a closed version. */
export const OPEN_END_MINIMUM = '2100-01-01T00:00:00.000Z'

const TIMESTAMP_PARTS =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|([+-])(\d{2}):(\d{2})))?$/

/** Normalizes an open-end sentinel to ISO UTC (`toISOString`), or undefined if it is not a real instant. */
export function normalizeOpenEnd(text: string): string | undefined {
  const m = TIMESTAMP_PARTS.exec(text)
  if (m === null) return undefined
  const [y, mo, d, h = 0, mi = 0, s = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((part) =>
    part === undefined ? undefined : Number(part),
  ) as number[]
  const local = new Date(Date.UTC(y!, mo! - 1, d!, h, mi, s))
  // Date.UTC rolls 02-30 over into March; a sentinel that silently moves is worse than an error.
  const real =
    local.getUTCFullYear() === y &&
    local.getUTCMonth() === mo! - 1 &&
    local.getUTCDate() === d &&
    local.getUTCHours() === h &&
    local.getUTCMinutes() === mi &&
    local.getUTCSeconds() === s
  const offsetHours = m[10] === undefined ? 0 : Number(m[10])
  const offsetMinutes = m[11] === undefined ? 0 : Number(m[11])
  if (!real || offsetHours > 14 || offsetMinutes > 59) return undefined
  const millis = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000)
  const sign = m[9] === '-' ? -1 : 1
  const instant = local.getTime() + millis - sign * (offsetHours * 60 + offsetMinutes) * 60_000
  return new Date(instant).toISOString()
}

export function openEndProblem(text: string): string | undefined {
  const normalized = normalizeOpenEnd(text)
  if (normalized === undefined) return `${show(text)} is not a valid date/time`
  if (normalized <= OPEN_END_MINIMUM) {
    return `must be after 2100-01-01 (got ${show(text)}): a sentinel that close could be mistaken for a real end date`
  }
  return undefined
}
