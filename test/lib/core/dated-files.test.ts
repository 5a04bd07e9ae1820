import { describe, expect, it } from 'vitest'
import { SourceError } from '../../../lib/core/errors.ts'
import { orderByNameTime, withNamedTime } from '../../../lib/core/dated-files.ts'

const file = (name: string, modified = '2024-07-01T00:00:00.000Z') => ({ name, modified })
const PATTERN = 'c_%Y-%m-%d*.csv'

describe('new files ordered by the time in their names', () => {
  it('orders by name time then name, whatever the upload order, and gives the newest time merged', () => {
    const files = [
      file('s3://b/x/c_2024-06-03.csv', '2024-07-01T00:00:00.000Z'),
      file('s3://b/x/c_2024-06-02b.csv', '2024-07-02T00:00:00.000Z'),
      file('s3://b/x/c_2024-06-02a.csv', '2024-07-03T00:00:00.000Z'),
    ]
    const dated = orderByNameTime(files, { table: 'c', pattern: PATTERN, lateFilesSlotIn: false })
    expect(dated.files.map((f) => f.name)).toEqual([
      's3://b/x/c_2024-06-02a.csv',
      's3://b/x/c_2024-06-02b.csv',
      's3://b/x/c_2024-06-03.csv',
    ])
    expect(dated.newest).toBe('2024-06-03T00:00:00.000Z')
    // Nothing new: the last merged time stays the newest.
    expect(
      orderByNameTime([], {
        table: 'c',
        pattern: PATTERN,
        lastMerged: '2024-06-03T00:00:00.000Z',
        lateFilesSlotIn: false,
      }),
    ).toEqual({ files: [], newest: '2024-06-03T00:00:00.000Z' })
  })

  it('a file dated before the last merged one: refused on a snapshot table, read on a change-time table', () => {
    const files = [file('/d/c_2024-06-04.csv'), file('/d/c_2024-06-01.csv')]
    const request = { table: 'c', pattern: PATTERN, lastMerged: '2024-06-03T00:00:00.000Z' }
    expect(() => orderByNameTime(files, { ...request, lateFilesSlotIn: false })).toThrow(SourceError)
    expect(() => orderByNameTime(files, { ...request, lateFilesSlotIn: false })).toThrow(
      /^c: file \/d\/c_2024-06-01\.csv is dated 2024-06-01T00:00:00\.000Z by its name .*before the last merged file \(dated 2024-06-03T00:00:00\.000Z\)/,
    )
    // The same time as the last merged one is not late.
    expect(
      orderByNameTime([file('/d/c_2024-06-03x.csv')], { ...request, lateFilesSlotIn: false }).files,
    ).toHaveLength(1)
    const slotted = orderByNameTime(files, { ...request, lateFilesSlotIn: true })
    expect(slotted).toEqual({ files: [files[1], files[0]], newest: '2024-06-04T00:00:00.000Z' })
  })

  it('a name the pattern does not read is refused, naming the file and the pattern', () => {
    expect(() =>
      orderByNameTime([file('/d/c_2024-02-31.csv')], { table: 'c', pattern: PATTERN, lateFilesSlotIn: true }),
    ).toThrow(
      'c: file /d/c_2024-02-31.csv has no time in its name that time_from_name "c_%Y-%m-%d*.csv" reads',
    )
  })

  it('the watermark candidate keeps the newest name time', () => {
    expect(withNamedTime({ cursor: 'x', key: [] }, '2024-06-03T00:00:00.000Z')).toEqual({
      cursor: 'x',
      key: [],
      namedTime: '2024-06-03T00:00:00.000Z',
    })
    expect(withNamedTime(undefined, '2024-06-03T00:00:00.000Z')).toBeUndefined()
  })
})
