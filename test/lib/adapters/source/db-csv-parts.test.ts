import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import { afterEach, describe, expect, it } from 'vitest'

import {
  CsvPartConverter,
  CsvSpool,
  defaultConverterThreads,
} from '../../../../lib/adapters/source/db-csv-parts.ts'
import type { DbColumn } from '../../../../lib/adapters/source/db-types.ts'
import { LocalStagingStore } from '../../../../lib/adapters/staging/local-staging-store.ts'

const COLUMNS: DbColumn[] = [
  { name: 'id', type: 'BIGINT', csvType: 'BIGINT', select: 'id', serverType: 'bigint' },
  { name: 'note', type: 'VARCHAR', csvType: 'VARCHAR', select: 'note', serverType: 'text' },
]

let root: string | undefined
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true })
})

async function stage(pieces: readonly Buffer[], spoolBytes: number | undefined, keyColumns = ['id']) {
  root = await mkdtemp(join(tmpdir(), 'dimsync-csv-parts-'))
  const staging = new LocalStagingStore({ root })
  const writer = await staging.beginBatch('t', 'b1')
  const converter = await CsvPartConverter.open({ workDir: join(writer.scratchDir, 'work'), keyColumns })
  const spool = new CsvSpool({ converter, columns: COLUMNS, writer, spoolBytes })
  for (const piece of pieces) await spool.write(piece)
  const rows = await spool.finish(true)
  await converter.close()
  const manifest = await writer.commit({
    table: 't',
    batchId: 'b1',
    extractedAt: '2030-01-01T00:00:00Z',
    mode: 'full',
    rowCount: rows,
    columns: COLUMNS.map(({ name, type }) => ({ name, type })),
    sourceDescription: 'test',
  })
  const batch = await staging.openBatch('t', 'b1')
  const db = await DuckDBInstance.create(':memory:')
  const connection = await db.connect()
  const files = batch.partPaths.map((p) => `'${p}'`).join(', ')
  const read = (
    await connection.runAndReadAll(`SELECT * FROM read_parquet([${files}]) ORDER BY id`)
  ).getRowObjectsJson()
  const encodings = Object.fromEntries(
    (
      await connection.runAndReadAll(
        `SELECT path_in_schema, string_agg(DISTINCT encodings, ',') FROM parquet_metadata([${files}]) GROUP BY 1`,
      )
    ).getRows() as [string, string][],
  )
  connection.closeSync()
  db.closeSync()
  return { rows, parts: manifest.parts.length, read, encodings }
}

describe('CsvSpool', () => {
  it('cuts files only between records, even inside quoted newlines split across pieces', async () => {
    const records = Array.from({ length: 300 }, (_, i) => `${i},"line one ${i}\nline ""two"", end"\n`).join(
      '',
    )
    const bytes = Buffer.from(records)
    // Pieces of 7 bytes: boundaries fall inside quotes, inside doubled quotes and between \n of values.
    const pieces = Array.from({ length: Math.ceil(bytes.length / 7) }, (_, i) =>
      bytes.subarray(i * 7, i * 7 + 7),
    )
    const { rows, parts, read } = await stage(pieces, 1024)
    expect(rows).toBe(300)
    expect(parts).toBeGreaterThan(5)
    expect(read[299]).toEqual({ id: '299', note: 'line one 299\nline "two", end' })
    expect(read.map((r) => Number(r.id))).toEqual(Array.from({ length: 300 }, (_, i) => i))
  })

  it('an empty stream still stages one empty part with the columns', async () => {
    const { rows, parts, read } = await stage([], 1024)
    expect([rows, parts, read]).toEqual([0, 1, []])
  })

  it('a value DuckDB cannot read names the row by its key and the source column, not the CSV field', async () => {
    await expect(stage([Buffer.from('1,"a"\nnot-a-number,"b x"\n')], 1 << 20, ['note'])).rejects.toThrow(
      'the row with note="b x" has not-a-number in column id (bigint), which cannot be staged as BIGINT',
    )
  })

  it('dictionary-encodes a text column of few values, not one of many (building that dictionary is wasted writing time)', async () => {
    const few = await stage(
      [Buffer.from(Array.from({ length: 5000 }, (_, i) => `${i},segment ${i % 12}\n`).join(''))],
      undefined,
    )
    expect(few.read[4999]).toEqual({ id: '4999', note: 'segment 7' })
    expect(few.encodings.note).toMatch(/DICTIONARY/)
    await rm(root!, { recursive: true, force: true })
    const many = await stage(
      [Buffer.from(Array.from({ length: 5000 }, (_, i) => `${i},user ${i}\n`).join(''))],
      undefined,
    )
    expect(many.read[4999]).toEqual({ id: '4999', note: 'user 4999' })
    expect(many.encodings.note).not.toMatch(/DICTIONARY/)
  })

  it('without spoolBytes, files are cut at the default size (about 6 MiB), not never', async () => {
    const record = `1,"${'x'.repeat(1000)}"\n`
    const pieces = Array.from({ length: 14_000 }, () => Buffer.from(record))
    const { rows, parts } = await stage(pieces, undefined)
    expect(rows).toBe(14_000)
    expect(parts).toBe(3)
  })
})

describe('the converter leaves a CPU to the thread that reads the wire', () => {
  it.each([
    [1, 1],
    [2, 1],
    [3, 2],
    [16, 2],
  ])('%i CPUs: %i DuckDB threads', (cpus, threads) => {
    expect(defaultConverterThreads(cpus)).toBe(threads)
  })
})
