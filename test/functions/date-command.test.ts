import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { readHolidays } from '../../functions/local/date-command.ts'

let work: string
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-holidays-'))
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function holidaysFile(lines: string[]): string {
  const path = join(work, 'holidays.csv')
  writeFileSync(path, `${lines.join('\n')}\n`)
  return path
}

describe('the holidays file of dimsync dates', () => {
  it('reads one holiday per date, a header line skipped', () => {
    const holidays = readHolidays(holidaysFile(['date,name', '2024-12-25,Christmas', '2024-01-01, New Year']))
    expect([...holidays]).toEqual([
      ['2024-12-25', 'Christmas'],
      ['2024-01-01', 'New Year'],
    ])
  })

  it('refuses a date listed twice, naming both lines, instead of keeping the last name silently', () => {
    const path = holidaysFile(['2024-12-25,Christmas', '2024-12-26,Boxing Day', '2024-12-25,Noel'])
    expect(() => readHolidays(path)).toThrow(
      `--holidays ${path}:3: 2024-12-25 is already a holiday (line 1: Christmas); one name per date`,
    )
  })
})
