import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { readCsvRecords } from '../../../../lib/adapters/source/csv-records.ts'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-csv-records-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function records(content: string | Buffer, options: Parameters<typeof readCsvRecords>[1] = {}) {
  const path = join(dir, 'f.csv')
  await writeFile(path, content)
  const out = []
  for await (const record of readCsvRecords(path, options)) out.push(record)
  return out
}

const encode = (value: string, delimiter: string) =>
  /["\r\n]/.test(value) || value.includes(delimiter) || value === ''
    ? `"${value.replaceAll('"', '""')}"`
    : value

describe('readCsvRecords', () => {
  it('reads quoted values with line ends and doubled quotes, CRLF and LF, and counts bytes', async () => {
    const read = await records('id,note\r\n1,"a ""b""\nc"\n2,é\n')
    expect(read.map((r) => r.fields.map((f) => f.text))).toEqual([
      ['id', 'note'],
      ['1', 'a "b"\nc'],
      ['2', 'é'],
    ])
    expect(read.map((r) => r.bytes)).toEqual([7, 13, 4])
    expect(read.map((r) => r.line)).toEqual([1, 2, 4])
    expect(read[1]!.fields.map((f) => f.bytes)).toEqual([1, 7])
  })

  it('keeps only the first characters of a long value, and its full size', async () => {
    const [record] = await records(`1,${'x'.repeat(100_000)}\n`, { prefixChars: 5 })
    expect(record!.fields[1]).toEqual({ bytes: 100_000, text: 'xxxxx' })
  })

  it('whatever the chunk boundaries, reads back the records that were written', async () => {
    const value = fc.string({ unit: fc.constantFrom('a', 'é', '"', ',', ';', '\n', '\r', ' ', '€') })
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(value, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 }),
        fc.constantFrom(',', ';', '€'),
        fc.integer({ min: 1, max: 9 }),
        fc.constantFrom('\n', '\r\n'),
        async (rows, delimiter, chunkBytes, lineEnd) => {
          const text =
            rows.map((row) => row.map((v) => encode(v, delimiter)).join(delimiter)).join(lineEnd) + lineEnd
          const read = await records(text, { delimiter, chunkBytes, prefixChars: 1000 })
          expect(read.map((r) => r.fields.map((f) => f.text))).toEqual(rows)
          expect(read.map((r) => r.fields.map((f) => f.bytes))).toEqual(
            rows.map((row) => row.map((v) => Buffer.byteLength(v))),
          )
          // Each record starts after the line ends of the records before it (those inside values too).
          const lineEnds = (row: string[]) =>
            row.reduce((n, v) => n + (v.match(/\r\n|\r|\n/g)?.length ?? 0), 0)
          const starts = rows.map((_, k) => 1 + rows.slice(0, k).reduce((n, row) => n + 1 + lineEnds(row), 0))
          expect(read.map((r) => r.line)).toEqual(starts)
        },
      ),
      { numRuns: 200 },
    )
  })
})
