import { readFileSync } from 'node:fs'
import { DimsyncError } from '../../lib/core/errors.ts'
import { parseCalendarDate } from '../../lib/core/date-dimension.ts'

/**
 * The holidays file of `dimsync dates --holidays FILE`: one `YYYY-MM-DD,name` line per holiday (a first line
 * that is not a date is a header), each date once. Throws naming the file and line of anything else.
 */
export function readHolidays(path: string): Map<string, string> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new DimsyncError(`--holidays ${path}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const holidays = new Map<string, string>()
  const lineOf = new Map<string, number>()
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '') return
    const comma = line.indexOf(',')
    const date = (comma < 0 ? line : line.slice(0, comma)).trim()
    const name = comma < 0 ? '' : line.slice(comma + 1).trim()
    if (parseCalendarDate(date) === undefined) {
      if (i === 0) return
      throw new DimsyncError(`--holidays ${path}:${i + 1}: "${date}" is not a date (YYYY-MM-DD,name)`)
    }
    if (name === '') throw new DimsyncError(`--holidays ${path}:${i + 1}: the holiday on ${date} has no name`)
    const earlier = lineOf.get(date)
    if (earlier !== undefined)
      throw new DimsyncError(
        `--holidays ${path}:${i + 1}: ${date} is already a holiday (line ${earlier}: ${holidays.get(date)}); one name per date`,
      )
    holidays.set(date, name)
    lineOf.set(date, i + 1)
  })
  return holidays
}
