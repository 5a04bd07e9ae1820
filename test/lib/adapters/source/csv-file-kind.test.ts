import { describe, expect, it } from 'vitest'

import { likelyDelimiter, notCsvText } from '../../../../lib/adapters/source/csv-file-kind.ts'

describe('notCsvText', () => {
  it('UTF-8 text, also with a byte-order mark and non-Latin letters, is text', () => {
    for (const text of ['id,name\n1,Ana\n', '\ufeffid,name\n1,Ana\n', 'id,名前\n1,東京\n2,Ωμέγα\n', 'a\n']) {
      expect(notCsvText(Buffer.from(text, 'utf8'))).toBeUndefined()
    }
  })

  it('recognizes UTF-16 and UTF-32 by their byte-order marks, UTF-16 also without one', () => {
    const text = 'id,name\n1,Ana\n'
    expect(notCsvText(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]))).toEqual({
      kind: 'utf16',
      endian: 'little',
    })
    expect(notCsvText(Buffer.from(text, 'utf16le'))).toEqual({ kind: 'utf16', endian: 'little' })
    expect(notCsvText(Buffer.from(text, 'utf16le').swap16())).toEqual({ kind: 'utf16', endian: 'big' })
    expect(notCsvText(Buffer.from([0xff, 0xfe, 0, 0, 0x69, 0, 0, 0]))).toEqual({
      kind: 'utf32',
      endian: 'little',
    })
  })

  it('recognizes Parquet and gzip by their magic bytes', () => {
    expect(notCsvText(Buffer.from('PAR1\x15\x04', 'latin1'))).toEqual({ kind: 'parquet' })
    expect(notCsvText(Buffer.from([0x1f, 0x8b, 8, 0]))).toEqual({ kind: 'gzip' })
  })
})

describe('likelyDelimiter', () => {
  it('suggests another delimiter only for a line read as one column that holds one', () => {
    expect(likelyDelimiter(['id;name'], ',')).toBe(';')
    expect(likelyDelimiter(['id\tname'], ',')).toBe('\t')
    expect(likelyDelimiter(['id|name'], ',')).toBe('|')
    expect(likelyDelimiter(['id'], ',')).toBeUndefined()
    expect(likelyDelimiter(['id;x', 'name'], ',')).toBeUndefined()
    expect(likelyDelimiter(['id;name'], ';')).toBeUndefined()
  })
})
