import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import { extractionTimeProblem, parseIsoInstant } from '../../../lib/core/instant.ts'

const iso = (text: string) => {
  const parsed = parseIsoInstant(text)
  if (!parsed.ok) throw new Error(parsed.problem)
  return { at: parsed.instant.toISOString(), zoned: parsed.zoned }
}
const problem = (text: string) => {
  const parsed = parseIsoInstant(text)
  return parsed.ok ? `accepted as ${parsed.instant.toISOString()}` : parsed.problem
}

describe('parseIsoInstant', () => {
  it('reads ISO 8601 dates and date-times; a date-time without a zone is UTC and says it had none', () => {
    expect(iso('2024-03-10')).toEqual({ at: '2024-03-10T00:00:00.000Z', zoned: true })
    expect(iso('2024-03-10T14:30:00Z')).toEqual({ at: '2024-03-10T14:30:00.000Z', zoned: true })
    expect(iso('2024-03-10T14:30+01:00')).toEqual({ at: '2024-03-10T13:30:00.000Z', zoned: true })
    expect(iso('2024-03-10 14:30:00.250-0230')).toEqual({ at: '2024-03-10T17:00:00.250Z', zoned: true })
    expect(iso('2024-03-10T14:30:00.123000+00')).toEqual({ at: '2024-03-10T14:30:00.123Z', zoned: true })
    expect(iso('2024-03-10T14:30')).toEqual({ at: '2024-03-10T14:30:00.000Z', zoned: false })
    expect(iso('0044-03-15T12:00:00Z')).toEqual({ at: '0044-03-15T12:00:00.000Z', zoned: true })
    expect(iso('2024-02-29')).toEqual({ at: '2024-02-29T00:00:00.000Z', zoned: true })
  })

  it('refuses what Date.parse would bend into some date', () => {
    expect(problem('2024-02-30')).toBe('"2024-02-30" is not a date: 2024-02 has no day 30')
    expect(problem('2023-02-29')).toBe('"2023-02-29" is not a date: 2023-02 has no day 29')
    expect(problem('2024-13-01')).toBe('"2024-13-01" has no month 13')
    expect(problem('2024-02-00')).toBe('"2024-02-00" is not a date: 2024-02 has no day 00')
    expect(problem('1')).toMatch(/^"1" is not an ISO 8601 date or date-time \(YYYY-MM-DD, /)
    expect(problem('March 7')).toMatch(/^"March 7" is not an ISO 8601 date/)
    expect(problem('2024-03-10T24:00:00Z')).toBe('"2024-03-10T24:00:00Z" has no time 24:00:00')
    expect(problem('2024-03-10T12:00:00+15:00')).toBe(
      '"2024-03-10T12:00:00+15:00" has no time zone offset +15:00',
    )
    expect(problem('2024-03-10T12:00:00.0001Z')).toBe(
      '"2024-03-10T12:00:00.0001Z" is finer than a millisecond (keep at most 3 fraction digits)',
    )
    expect(problem('0000-01-01')).toBe('"0000-01-01" is before year 1')
  })

  it('every instant round-trips through its ISO text, and a day past the end of its month is refused', () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('0001-01-01T00:00:00Z'),
          max: new Date('9999-12-31T23:59:59.999Z'),
          noInvalidDate: true,
        }),
        (date) => {
          const text = date.toISOString()
          expect(iso(text)).toEqual({ at: text, zoned: true })
          const [y, m] = [date.getUTCFullYear(), date.getUTCMonth() + 1]
          const endOfMonth = new Date(0)
          endOfMonth.setUTCFullYear(y, m, 0)
          const lastDay = endOfMonth.getUTCDate()
          const pad = (n: number, w = 2) => String(n).padStart(w, '0')
          expect(parseIsoInstant(`${pad(y, 4)}-${pad(m)}-${pad(lastDay)}`).ok).toBe(true)
          expect(parseIsoInstant(`${pad(y, 4)}-${pad(m)}-${pad(lastDay + 1)}`).ok).toBe(false)
        },
      ),
    )
  })
})

describe('extractionTimeProblem', () => {
  const now = new Date('2026-01-01T00:00:00Z')
  it('allows the clock skew into the future, no more', () => {
    const limits = { now, maxFutureMs: 300_000, openEnd: null }
    expect(extractionTimeProblem(new Date('2026-01-01T00:05:00Z'), limits)).toBeUndefined()
    expect(extractionTimeProblem(new Date('2020-01-01T00:00:00Z'), limits)).toBeUndefined()
    expect(extractionTimeProblem(new Date('2099-01-01T00:00:00Z'), limits)).toBe(
      '2099-01-01T00:00:00.000Z is in the future (now is 2026-01-01T00:00:00.000Z, 300 s of clock skew allowed): ' +
        'every later snapshot would be older than it and refused',
    )
  })
  it('refuses the open-end sentinel and anything after it, whatever the skew', () => {
    const limits = { now, maxFutureMs: Number.MAX_SAFE_INTEGER, openEnd: '9999-12-31T23:59:59.000Z' }
    expect(extractionTimeProblem(new Date('9999-12-31T23:59:59Z'), limits)).toBe(
      '9999-12-31T23:59:59.000Z is not before the open_end sentinel 9999-12-31T23:59:59.000Z: its versions would look open forever',
    )
    expect(extractionTimeProblem(new Date('9999-12-31T23:59:58.999Z'), limits)).toBeUndefined()
  })
})
