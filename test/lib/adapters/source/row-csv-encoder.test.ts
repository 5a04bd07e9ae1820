import { describe, expect, it } from 'vitest'

import { RowCsvEncoder } from '../../../../lib/adapters/source/row-csv-encoder.ts'

describe('RowCsvEncoder', () => {
  it('quotes strings, doubles quotes, keeps NULL apart from the empty string and bytes as quoted hex', () => {
    const encoder = new RowCsvEncoder(16)
    encoder.add([
      1,
      'a,b',
      'say "hi"',
      null,
      '',
      Buffer.from([0, 255]),
      Buffer.alloc(0),
      12345678901234567890n,
    ])
    encoder.add(['multi\nline', 'é🌍'])
    expect(encoder.take().toString('utf8')).toBe(
      '1,"a,b","say ""hi""",,"","00ff","",12345678901234567890\n"multi\nline","é🌍"\n',
    )
    expect(encoder.length).toBe(0)
  })

  it('reports full at the flush size and grows for a record larger than the buffer', () => {
    const encoder = new RowCsvEncoder(8)
    encoder.add(['x'.repeat(100)])
    expect(encoder.full).toBe(true)
    expect(encoder.take().length).toBe(103)
  })

  it('refuses a JS Date (a driver setting that would lose microseconds)', () => {
    expect(() => new RowCsvEncoder().add([new Date()])).toThrow(
      'Date (the driver must return dates as strings)',
    )
  })
})
