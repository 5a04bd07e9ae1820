/**
 * Sort key of an ISO instant that keeps microseconds: `Date` alone truncates to milliseconds, so two
 * extractions 300 µs apart would tie. Returns undefined when the text is not an instant.
 */
export function instantSortKey(iso: string): string | undefined {
  const ms = Date.parse(iso)
  if (Number.isNaN(ms)) return undefined
  const fraction = /T\d{2}:\d{2}:\d{2}\.(\d+)/.exec(iso)?.[1] ?? ''
  const micros = fraction.padEnd(6, '0').slice(3, 6)
  // Shift by 1e15 ms so that instants before 1970 still sort as fixed-width positive numbers.
  return `${String(ms + 1e15).padStart(17, '0')}${micros}`
}

/** An instant a person typed: when it is, and whether it named its zone. */
export type ParsedInstant =
  | { readonly ok: true; readonly instant: Date; readonly zoned: boolean }
  | { readonly ok: false; readonly problem: string }

const ISO_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/

const FORMS = 'YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS[.fff]] and a zone (Z or +HH:MM; none is UTC)'

/**
 * Reads an ISO 8601 date (`2024-03-10`, midnight UTC) or date-time (`2024-03-10T14:30:00Z`,
 * `2024-03-10T14:30+01:00`); a date-time without a zone is UTC. Nothing else is a date here: `Date.parse`
 * would take `1` as 2001-01-01 and `2024-02-30` as March 1st, and a wrong business time cannot be undone.
 * Calendar dates are checked, and a fraction finer than milliseconds (what a `Date` keeps) must be zeros.
 */
export function parseIsoInstant(text: string): ParsedInstant {
  const m = ISO_INSTANT.exec(text.trim())
  const fail = (why: string): ParsedInstant => ({ ok: false, problem: `"${text}" ${why}` })
  if (!m) return fail(`is not an ISO 8601 date or date-time (${FORMS})`)
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)]
  const fraction = m[7] ?? ''
  if (year < 1) return fail('is before year 1')
  if (month < 1 || month > 12) return fail(`has no month ${m[2]}`)
  if (day < 1 || day > daysInMonth(year, month))
    return fail(`is not a date: ${m[1]}-${m[2]} has no day ${m[3]}`)
  if (hour > 23 || minute > 59 || second > 59) return fail(`has no time ${m[4]}:${m[5]}:${m[6] ?? '00'}`)
  if (/[1-9]/.test(fraction.slice(3)))
    return fail('is finer than a millisecond (keep at most 3 fraction digits)')
  let offsetMinutes = 0
  if (m[9] !== undefined) {
    const [hours, minutes] = [Number(m[10]), Number(m[11] ?? 0)]
    if (hours > 14 || minutes > 59) return fail(`has no time zone offset ${m[9]}${m[10]}:${m[11] ?? '00'}`)
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (hours * 60 + minutes)
  }
  const instant = new Date(0)
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  instant.setUTCFullYear(year, month - 1, day)
  instant.setUTCHours(hour, minute - offsetMinutes, second, Number(fraction.slice(0, 3).padEnd(3, '0')))
  return { ok: true, instant, zoned: m[4] === undefined || m[8] !== undefined || m[9] !== undefined }
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28
  return [4, 6, 9, 11].includes(month) ? 30 : 31
}

export interface ExtractionTimeLimits {
  readonly now: Date
  /** How far past `now` an extraction time may be (clocks of two machines differ a little). */
  readonly maxFutureMs: number
  /** The table's open-end sentinel (ISO), or null. */
  readonly openEnd: string | null
}

/**
 * Why `at` cannot be a batch's extraction time, or undefined. A snapshot taken in the future would refuse every
 * later snapshot (they would be older) with no command to undo it; one at or after the open-end sentinel would
 * give its versions an empty window and make closed versions look open.
 */
export function extractionTimeProblem(at: Date, limits: ExtractionTimeLimits): string | undefined {
  if (limits.openEnd !== null && at.getTime() >= Date.parse(limits.openEnd)) {
    return `${at.toISOString()} is not before the open_end sentinel ${limits.openEnd}: its versions would look open forever`
  }
  if (at.getTime() - limits.now.getTime() > limits.maxFutureMs) {
    return (
      `${at.toISOString()} is in the future (now is ${limits.now.toISOString()}, ${Math.round(limits.maxFutureMs / 1000)} s of ` +
      `clock skew allowed): every later snapshot would be older than it and refused`
    )
  }
  return undefined
}
