/**
 * The rows of the date dimension (`dim_date`), computed from the calendar alone: one row per day, keyed by the
 * integer yyyymmdd, with the ISO 8601 week and week-year, month, quarter, weekday (ISO: 1 Monday … 7 Sunday),
 * weekend and the holiday's name. Pure, no I/O; dates are UTC calendar days.
 */

import { DimsyncError } from './errors.ts'

export interface DateRow {
  readonly dateKey: number
  /** `YYYY-MM-DD`. */
  readonly date: string
  readonly year: number
  readonly quarter: number
  readonly month: number
  readonly monthName: string
  readonly dayOfMonth: number
  /** ISO weekday: 1 Monday … 7 Sunday. */
  readonly dayOfWeek: number
  readonly dayName: string
  readonly isoWeek: number
  /** The year the ISO week belongs to (2021-01-03 is in week 53 of 2020). */
  readonly isoYear: number
  readonly isWeekend: boolean
  readonly holiday: string | null
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
] as const
const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'] as const
const DAY_MS = 86_400_000
/** The widest range accepted: a typo like 20400 for 2040 must not write millions of rows. */
export const MAX_DATE_DIMENSION_DAYS = 200 * 366

const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/

/** Milliseconds of a `YYYY-MM-DD` day at 00:00 UTC, or undefined when it is not a real calendar date. */
export function parseCalendarDate(text: string): number | undefined {
  const m = DATE_PATTERN.exec(text)
  if (m === null) return undefined
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))
  return new Date(ms).toISOString().slice(0, 10) === text ? ms : undefined
}

/** Every day from `from` to `to` (both included), holidays named by `holidays` (date → name). */
export function dateRows(
  from: string,
  to: string,
  holidays: ReadonlyMap<string, string> = new Map(),
): DateRow[] {
  const start = parseCalendarDate(from)
  const end = parseCalendarDate(to)
  if (start === undefined) throw new DimsyncError(`--from ${from} is not a date (YYYY-MM-DD)`)
  if (end === undefined) throw new DimsyncError(`--to ${to} is not a date (YYYY-MM-DD)`)
  if (end < start) throw new DimsyncError(`--to ${to} is before --from ${from}`)
  const days = (end - start) / DAY_MS + 1
  if (days > MAX_DATE_DIMENSION_DAYS)
    throw new DimsyncError(`${from} to ${to} is ${days} days; at most ${MAX_DATE_DIMENSION_DAYS} at once`)
  const rows: DateRow[] = []
  for (let ms = start; ms <= end; ms += DAY_MS) rows.push(dateRow(ms, holidays))
  return rows
}

function dateRow(ms: number, holidays: ReadonlyMap<string, string>): DateRow {
  const day = new Date(ms)
  const year = day.getUTCFullYear()
  const month = day.getUTCMonth() + 1
  const dayOfMonth = day.getUTCDate()
  const dayOfWeek = ((day.getUTCDay() + 6) % 7) + 1
  // ISO 8601: the week belongs to the year of its Thursday; week 1 holds the year's first Thursday.
  const thursday = new Date(ms + (4 - dayOfWeek) * DAY_MS)
  const isoYear = thursday.getUTCFullYear()
  const isoWeek = Math.floor((thursday.getTime() - Date.UTC(isoYear, 0, 1)) / DAY_MS / 7) + 1
  const date = day.toISOString().slice(0, 10)
  return {
    dateKey: year * 10_000 + month * 100 + dayOfMonth,
    date,
    year,
    quarter: Math.floor((month - 1) / 3) + 1,
    month,
    monthName: MONTHS[month - 1]!,
    dayOfMonth,
    dayOfWeek,
    dayName: DAYS[dayOfWeek - 1]!,
    isoWeek,
    isoYear,
    isWeekend: dayOfWeek >= 6,
    holiday: holidays.get(date) ?? null,
  }
}
