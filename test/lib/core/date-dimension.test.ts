import { describe, expect, it } from 'vitest'
import { dateRows } from '../../../lib/core/date-dimension.ts'

describe('dateRows: the calendar of dim_date', () => {
  it('keys days as yyyymmdd with ISO weeks across year ends, quarters, weekends and holidays', () => {
    const rows = dateRows('2020-12-31', '2021-01-04', new Map([['2021-01-01', "New Year's Day"]]))
    expect(
      rows.map((r) => [r.dateKey, r.dayName, r.dayOfWeek, r.isoYear, r.isoWeek, r.isWeekend, r.holiday]),
    ).toEqual([
      [20201231, 'Thursday', 4, 2020, 53, false, null],
      [20210101, 'Friday', 5, 2020, 53, false, "New Year's Day"],
      [20210102, 'Saturday', 6, 2020, 53, true, null],
      [20210103, 'Sunday', 7, 2020, 53, true, null],
      [20210104, 'Monday', 1, 2021, 1, false, null],
    ])
    expect(rows[0]).toMatchObject({
      date: '2020-12-31',
      year: 2020,
      quarter: 4,
      month: 12,
      monthName: 'December',
      dayOfMonth: 31,
    })
    // 2024-12-30 (a Monday) already belongs to week 1 of 2025; a leap day is a day like any other.
    expect(dateRows('2024-12-30', '2024-12-30')[0]).toMatchObject({ isoYear: 2025, isoWeek: 1, quarter: 4 })
    expect(dateRows('2024-02-28', '2024-03-01').map((r) => r.dateKey)).toEqual([20240228, 20240229, 20240301])
    expect(dateRows('2000-01-01', '2040-12-31')).toHaveLength(14976)
  })

  it('refuses a date that does not exist, a range that ends before it starts, and a range of centuries', () => {
    expect(() => dateRows('2023-02-29', '2023-03-01')).toThrow('--from 2023-02-29 is not a date (YYYY-MM-DD)')
    expect(() => dateRows('2024-01-02', '2024-01-01')).toThrow('--to 2024-01-01 is before --from 2024-01-02')
    expect(() => dateRows('2000-01-01', '9999-12-31')).toThrow(/days; at most 73200 at once/)
  })
})
