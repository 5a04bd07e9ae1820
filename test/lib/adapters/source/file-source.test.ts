import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import type { DuckDBConnection } from '@duckdb/node-api'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { sqlString, sqlStringList } from '../../../../lib/adapters/duckdb/parquet-schema.ts'
import { FileSource } from '../../../../lib/adapters/source/file-source.ts'
import { LocalStagingStore } from '../../../../lib/adapters/staging/local-staging-store.ts'
import { SourceError } from '../../../../lib/core/errors.ts'
import type { FileSourceSpec, TableSpec } from '../../../../lib/core/table-spec.ts'
import type { ExtractResult } from '../../../../lib/ports/source.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

let duck: DuckDBInstance
let db: DuckDBConnection

beforeAll(async () => {
  duck = await DuckDBInstance.create(':memory:')
  db = await duck.connect()
  await db.run(`SET TimeZone='UTC'`)
})
afterAll(() => {
  db.closeSync()
  duck.closeSync()
})

function fileTable(
  source: Partial<FileSourceSpec> & { path: string },
  extra: Partial<TableSpec> = {},
): TableSpec {
  return tableSpec({
    source: { type: 'file', format: 'csv', csv: { delimiter: ',', header: true }, ...source },
    key: ['id'],
    ...extra,
  })
}

describe('FileSource', () => {
  let baseDir: string
  let staging: LocalStagingStore
  let batchNo = 0

  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'dimsync-file-source-'))
    await mkdir(join(baseDir, 'data'))
    staging = new LocalStagingStore({ root: join(baseDir, 'staging') })
  })
  afterEach(async () => {
    await rm(baseDir, { recursive: true, force: true })
  })

  /** Extracts into a real staged batch, commits it, and returns the result plus the verified part paths. */
  async function extract(
    spec: TableSpec,
    options: { partFileSizeBytes?: number; onProgress?: (rows: number) => void } = {},
  ): Promise<ExtractResult & { partPaths: readonly string[] }> {
    const source = new FileSource({ baseDir, threads: 2, ...options })
    const batchId = `b${++batchNo}`
    const writer = await staging.beginBatch(spec.name, batchId)
    try {
      const result = await source.extract({
        table: spec,
        batchId,
        extractedAt: new Date('2024-01-01T00:00:00Z'),
        writer,
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      })
      await writer.commit({
        table: spec.name,
        batchId,
        extractedAt: '2024-01-01T00:00:00.000Z',
        mode: 'full',
        rowCount: result.rows,
        columns: result.columns,
        sourceDescription: result.sourceDescription,
      })
      const opened = await staging.openBatch(spec.name, batchId)
      return { ...result, partPaths: opened.partPaths }
    } catch (error) {
      await writer.abort()
      throw error
    } finally {
      await source.close()
    }
  }

  async function rows(partPaths: readonly string[], select: string, orderBy: string): Promise<unknown[]> {
    const reader = await db.runAndReadAll(
      `SELECT ${select} FROM read_parquet(${sqlStringList(partPaths)}) ORDER BY ${orderBy}`,
    )
    return reader.getRowObjectsJson()
  }

  async function extractError(spec: TableSpec): Promise<SourceError> {
    const error = await extract(spec).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(SourceError)
    return error as SourceError
  }

  describe('CSV', () => {
    it('reads one file keeping BIGINT above 2^53, microsecond timestamps, NULL and empty string', async () => {
      await writeFile(
        join(baseDir, 'data', 'customers.csv'),
        [
          'id,name,updated_at,score',
          '9007199254740993,Ann,2024-01-02 03:04:05.123456,1.5',
          '-9007199254740993,,2024-01-02 03:04:05,',
          '3,"",2024-01-02 03:04:05.000001,2',
          '4,"Smith, ""Bob""",2024-12-31 23:59:59.999999,3',
          '',
        ].join('\n'),
      )
      const result = await extract(fileTable({ path: 'data/customers.csv' }))
      expect(result.rows).toBe(4)
      expect(result.columns).toEqual([
        { name: 'id', type: 'BIGINT' },
        { name: 'name', type: 'VARCHAR' },
        { name: 'updated_at', type: 'TIMESTAMP' },
        { name: 'score', type: 'DOUBLE' },
      ])
      expect(result.sourceDescription).toContain('data/customers.csv')
      expect(
        await rows(result.partPaths, `id::VARCHAR AS id, name, updated_at::VARCHAR AS ts, score`, 'id'),
      ).toEqual([
        { id: '-9007199254740993', name: null, ts: '2024-01-02 03:04:05', score: null },
        // Documented rule: unquoted empty field = NULL, quoted "" = empty string.
        { id: '3', name: '', ts: '2024-01-02 03:04:05.000001', score: 2 },
        { id: '4', name: 'Smith, "Bob"', ts: '2024-12-31 23:59:59.999999', score: 3 },
        { id: '9007199254740993', name: 'Ann', ts: '2024-01-02 03:04:05.123456', score: 1.5 },
      ])
    })

    it('detects types from the whole file, not from a sample', async () => {
      // 30k integers, then one text value: a 20k-line sample would choose BIGINT and fail at the end.
      const lines = ['id,code']
      for (let i = 0; i < 30_000; i++) lines.push(`${i},${i}`)
      lines.push('30000,X-1')
      await writeFile(join(baseDir, 'data', 'codes.csv'), `${lines.join('\n')}\n`)
      const result = await extract(fileTable({ path: 'data/codes.csv' }))
      expect(result.columns).toContainEqual({ name: 'code', type: 'VARCHAR' })
      expect(result.rows).toBe(30_001)
    })

    it('honours the delimiter and header options (no header: column0, column1, ...)', async () => {
      await writeFile(join(baseDir, 'data', 'plain.csv'), '1;a\n2;b\n')
      const result = await extract(
        fileTable({ path: 'data/plain.csv', csv: { delimiter: ';', header: false } }),
      )
      expect(result.columns.map((c) => c.name)).toEqual(['column0', 'column1'])
      expect(await rows(result.partPaths, '*', 'column0')).toEqual([
        { column0: '1', column1: 'a' },
        { column0: '2', column1: 'b' },
      ])
    })

    it('reads a glob of 3 files as one snapshot, unifying BIGINT and DOUBLE', async () => {
      await writeFile(join(baseDir, 'data', 'part-1.csv'), 'id,amount\n1,10\n2,20\n')
      await writeFile(join(baseDir, 'data', 'part-2.csv'), 'id,amount\n3,30.5\n')
      // Same columns in another order are matched by name.
      await writeFile(join(baseDir, 'data', 'part-3.csv'), 'amount,id\n40,4\n50,5\n')
      const result = await extract(fileTable({ path: 'data/part-*.csv' }))
      expect(result.rows).toBe(5)
      expect(result.columns).toEqual([
        { name: 'id', type: 'BIGINT' },
        { name: 'amount', type: 'DOUBLE' },
      ])
      expect(result.sourceDescription).toBe(
        'csv data/part-*.csv: data/part-1.csv, data/part-2.csv, data/part-3.csv',
      )
      expect(await rows(result.partPaths, '*', 'id')).toEqual([
        { id: '1', amount: 10 },
        { id: '2', amount: 20 },
        { id: '3', amount: 30.5 },
        { id: '4', amount: 40 },
        { id: '5', amount: 50 },
      ])
    })

    it('refuses a glob whose files have different columns, naming both files and the column', async () => {
      await writeFile(join(baseDir, 'data', 'a.csv'), 'id,name\n1,x\n')
      await writeFile(join(baseDir, 'data', 'b.csv'), 'id,nom\n2,y\n')
      const error = await extractError(fileTable({ path: 'data/*.csv' }))
      expect(error.message).toBe(
        'customers: data/b.csv has column "nom" which data/a.csv does not have; all files must have the same columns',
      )
    })

    it('names the file and line of a row with too many columns', async () => {
      await writeFile(
        join(baseDir, 'data', 'customers.csv'),
        'id,name,amount\n1,a,1.5\n2,b,2\n3,c,3,4\n4,d,5\n',
      )
      const error = await extractError(fileTable({ path: 'data/customers.csv' }))
      expect(error.message).toBe('customers: data/customers.csv line 4: expected 3 columns, found 4')
      expect(error.table).toBe('customers')
    })

    it('names the file and line of a malformed row far into a big file', async () => {
      const lines = ['id,name']
      for (let i = 0; i < 50_000; i++) lines.push(`${i},n${i}`)
      lines.push('50000')
      await writeFile(join(baseDir, 'data', 'big.csv'), `${lines.join('\n')}\n`)
      const error = await extractError(fileTable({ path: 'data/big.csv' }))
      expect(error.message).toBe('customers: data/big.csv line 50002: expected 2 columns, found 1')
    })

    it('names the file and line of an unterminated quote', async () => {
      await writeFile(join(baseDir, 'data', 'q.csv'), 'id,name\n1,a\n2,"b\n')
      const error = await extractError(fileTable({ path: 'data/q.csv' }))
      expect(error.message).toBe('customers: data/q.csv line 3: unterminated quoted value')
    })

    it('names the right file when the bad line is in the second file of a glob', async () => {
      await writeFile(join(baseDir, 'data', 'a.csv'), 'id,name\n1,x\n')
      await writeFile(join(baseDir, 'data', 'b.csv'), 'id,name\n2,y\n3,z,extra\n')
      const error = await extractError(fileTable({ path: 'data/*.csv' }))
      expect(error.message).toBe('customers: data/b.csv line 3: expected 2 columns, found 3')
    })

    it('refuses an empty file', async () => {
      await writeFile(join(baseDir, 'data', 'empty.csv'), '')
      const error = await extractError(fileTable({ path: 'data/empty.csv' }))
      expect(error.message).toBe('customers: data/empty.csv is empty (0 bytes)')
    })

    it('refuses a file with a header but no rows, also as one file of a glob', async () => {
      await writeFile(join(baseDir, 'data', 'header.csv'), 'id,name\n')
      expect((await extractError(fileTable({ path: 'data/header.csv' }))).message).toBe(
        'customers: data/header.csv has a header but no rows; an empty snapshot is refused (it has no column ' +
          'types, and it would look as if every key had been deleted)',
      )
      const feed = fileTable(
        { path: 'data/header.csv' },
        { changes: { operation: { column: 'op', insert: ['I'], update: ['U'], delete: ['D'] } } },
      )
      expect((await extractError(feed)).message).toBe(
        'customers: data/header.csv has a header but no rows; a file without rows has no column types; leave it ' +
          'out of the change feed',
      )
      await writeFile(join(baseDir, 'data', 'full.csv'), 'id,name\n1,a\n')
      expect((await extractError(fileTable({ path: 'data/*.csv' }))).message).toMatch(
        /^customers: data\/header\.csv has a header but no rows/,
      )
    })

    it('refuses repeated or empty header names, naming the file and the positions', async () => {
      await writeFile(join(baseDir, 'data', 'dup.csv'), 'id,name,Name\n1,a,b\n')
      expect((await extractError(fileTable({ path: 'data/dup.csv' }))).message).toBe(
        'customers: data/dup.csv: columns 2 and 3 of the header are both named "Name" (names are compared ' +
          'without case); give every column its own name',
      )
      await writeFile(join(baseDir, 'data', 'unnamed.csv'), '\ufeffid, ,region\n1,a,b\n')
      expect((await extractError(fileTable({ path: 'data/unnamed.csv' }))).message).toBe(
        'customers: data/unnamed.csv: column 2 of the header has no name; give every column a name',
      )
    })

    it('a byte that is not UTF-8 is an encoding problem, with its line', async () => {
      const lines = ['id,name', ...Array.from({ length: 3000 }, (_, i) => `${i},n${i}`)].join('\n')
      await writeFile(
        join(baseDir, 'data', 'latin1.csv'),
        Buffer.concat([Buffer.from(`${lines}\n3000,caf`), Buffer.from([0xe9]), Buffer.from('\n')]),
      )
      expect((await extractError(fileTable({ path: 'data/latin1.csv' }))).message).toBe(
        'customers: data/latin1.csv line 3002: the file is not UTF-8 text (an invalid byte sequence); save it as UTF-8',
      )
    })

    it('a 6 MB row among 30k multi-line rows loads within the memory limit', async () => {
      const lines = ['id,note']
      for (let i = 0; i < 30_000; i++)
        lines.push(`${i},"line one of ${i}\nline two ${'x'.repeat(200)}\nthree"`)
      lines.splice(15_000, 0, `999999,"${'y\n'.repeat(3 << 20)}"`)
      await writeFile(join(baseDir, 'data', 'big.csv'), `${lines.join('\n')}\n`)
      const result = await extract(fileTable({ path: 'data/big.csv' }))
      expect(result.rows).toBe(30_001)
      const [big] = await rows(result.partPaths, 'length(note) AS n', 'n DESC LIMIT 1')
      expect(big).toEqual({ n: '6291456' })
    })

    it('a row over the 8 MiB limit is named by its key and widest column', async () => {
      const lines = ['name,id,note', 'a,1,small', `b,7,"${'z'.repeat(9 << 20)}"`, 'c,8,small']
      await writeFile(join(baseDir, 'data', 'huge.csv'), `${lines.join('\n')}\n`)
      expect((await extractError(fileTable({ path: 'data/huge.csv' }))).message).toBe(
        'customers: data/huge.csv: the row with id=7 is larger than the 8 MiB a row may hold (column note holds 9 MiB)',
      )
    })

    it('a valid_from column holding text is refused in one line naming the row', async () => {
      await writeFile(join(baseDir, 'data', 'changes.csv'), 'id,changed\n1,2024-01-01\n2,yesterday\n')
      const table = fileTable(
        { path: 'data/changes.csv' },
        { validFrom: { kind: 'column', column: 'changed' } },
      )
      const expected =
        'customers: valid_from column changed of data/changes.csv is VARCHAR, not dates or timestamps (for example ' +
        'the row with id=2 holds yesterday); fix the values, or choose another valid_from column'
      expect((await extractError(table)).message).toBe(expected)
      await expect(new FileSource({ baseDir }).describe(table)).rejects.toThrow(expected)
    })
  })

  describe('missing input', () => {
    it('a missing file names the path and the folder', async () => {
      const error = await extractError(fileTable({ path: 'data/nope.csv' }))
      expect(error.message).toBe(`customers: no file matches data/nope.csv in ${baseDir}`)
    })

    it('a glob without matches names the pattern and the folder', async () => {
      const error = await extractError(fileTable({ path: 'data/*.csv' }))
      expect(error.message).toBe(`customers: no file matches data/*.csv in ${join(baseDir, 'data')}`)
      const missingFolder = await extractError(fileTable({ path: 'exports/*.csv' }))
      expect(missingFolder.message).toBe(
        `customers: no file matches exports/*.csv in ${join(baseDir, 'exports')} (the folder does not exist)`,
      )
    })

    it('refuses incremental extracts', async () => {
      await writeFile(join(baseDir, 'data', 'c.csv'), 'id\n1\n')
      const error = await extractError(
        fileTable(
          { path: 'data/c.csv' },
          { extract: { mode: 'incremental', cursor: 'id', lookbackMinutes: 0 } },
        ),
      )
      expect(error.message).toMatch(/full extracts only/)
    })
  })

  describe('Parquet', () => {
    async function writeParquet(name: string, select: string): Promise<void> {
      await db.run(`COPY (${select}) TO ${sqlString(join(baseDir, 'data', name))} (FORMAT parquet)`)
    }

    it('reads one file keeping its types', async () => {
      await writeParquet(
        'customers.parquet',
        `SELECT id, name, updated_at, seen_at, amount::DECIMAL(10,2) AS amount FROM (VALUES
           (9007199254740993::BIGINT, 'Ann', TIMESTAMP '2024-01-02 03:04:05.123456', TIMESTAMPTZ '2024-01-02 03:04:05.000001+00', 1.5::DECIMAL(10,2)),
           (2, NULL, NULL, NULL, NULL),
           (3, '', TIMESTAMP '1969-12-31 23:59:59.999999', NULL, 0)
         ) t(id, name, updated_at, seen_at, amount)`,
      )
      const result = await extract(fileTable({ path: 'data/customers.parquet', format: 'parquet' }))
      expect(result.rows).toBe(3)
      expect(result.columns).toEqual([
        { name: 'id', type: 'BIGINT' },
        { name: 'name', type: 'VARCHAR' },
        { name: 'updated_at', type: 'TIMESTAMP' },
        { name: 'seen_at', type: 'TIMESTAMP WITH TIME ZONE' },
        { name: 'amount', type: 'DECIMAL(10,2)' },
      ])
      expect(
        await rows(
          result.partPaths,
          `id::VARCHAR AS id, name, updated_at::VARCHAR AS u, seen_at::VARCHAR AS s, amount::VARCHAR AS a`,
          'id',
        ),
      ).toEqual([
        { id: '2', name: null, u: null, s: null, a: null },
        { id: '3', name: '', u: '1969-12-31 23:59:59.999999', s: null, a: '0.00' },
        {
          id: '9007199254740993',
          name: 'Ann',
          u: '2024-01-02 03:04:05.123456',
          s: '2024-01-02 03:04:05.000001+00',
          a: '1.50',
        },
      ])
    })

    it('reads a glob of 3 files as one snapshot', async () => {
      await writeParquet('p1.parquet', `SELECT range AS id, 'a' AS name FROM range(0, 10)`)
      await writeParquet('p2.parquet', `SELECT 'b' AS name, range AS id FROM range(10, 25)`)
      await writeParquet('p3.parquet', `SELECT range AS id, 'c' AS name FROM range(25, 26)`)
      const result = await extract(fileTable({ path: 'data/p*.parquet', format: 'parquet' }))
      expect(result.rows).toBe(26)
      expect(result.columns.map((c) => c.name)).toEqual(['id', 'name'])
      expect(
        await rows(result.partPaths, 'count(DISTINCT id)::INTEGER AS n, max(id)::INTEGER AS m', '1'),
      ).toEqual([{ n: 26, m: 25 }])
    })

    it('refuses files of a glob whose columns or types differ', async () => {
      await writeParquet('p1.parquet', `SELECT 1::BIGINT AS id, 'a' AS name`)
      await writeParquet('p2.parquet', `SELECT 2::BIGINT AS id, 'b' AS nom`)
      const error = await extractError(fileTable({ path: 'data/p*.parquet', format: 'parquet' }))
      expect(error.message).toBe(
        'customers: data/p2.parquet has column "nom" which data/p1.parquet does not have; all files must have the same columns',
      )
      await writeParquet('p2.parquet', `SELECT '2' AS id, 'b' AS name`)
      const typeError = await extractError(fileTable({ path: 'data/p*.parquet', format: 'parquet' }))
      expect(typeError.message).toBe(
        'customers: column "id" is VARCHAR in data/p2.parquet but BIGINT in data/p1.parquet',
      )
    })

    it('refuses a file that is not Parquet, and an empty one', async () => {
      await writeFile(join(baseDir, 'data', 'bad.parquet'), 'not parquet at all')
      const error = await extractError(fileTable({ path: 'data/bad.parquet', format: 'parquet' }))
      expect(error.message).toMatch(/^customers: data\/bad\.parquet is not a readable Parquet file: /)
      await writeFile(join(baseDir, 'data', 'empty.parquet'), '')
      const empty = await extractError(fileTable({ path: 'data/empty.parquet', format: 'parquet' }))
      expect(empty.message).toBe('customers: data/empty.parquet is empty (0 bytes)')
    })
  })

  it('describe returns the columns an extract stages, without staging anything', async () => {
    await writeFile(join(baseDir, 'data', 'a.csv'), 'id,ts,name\n1,2024-01-01 00:00:00.000001,x\n')
    const spec = fileTable({ path: 'data/a.csv' })
    const source = new FileSource({ baseDir })
    const described = await source.describe(spec)
    expect(described).toEqual([
      { name: 'id', type: 'BIGINT' },
      { name: 'ts', type: 'TIMESTAMP' },
      { name: 'name', type: 'VARCHAR' },
    ])
    expect((await extract(spec)).columns).toEqual(described)
    await expect(source.describe(fileTable({ path: 'data/none.csv' }))).rejects.toThrow(/no file matches/)
  })

  it('stages a 200k-row CSV as several parts that round-trip to the same rows', async () => {
    const csv = join(baseDir, 'data', 'big.csv')
    await db.run(
      `COPY (SELECT range AS id, 'name ' || range AS name, TIMESTAMP '2024-01-01' + INTERVAL (range) SECOND AS ts,
                    CASE WHEN range % 7 = 0 THEN NULL ELSE range * 1.5 END AS amount
             FROM range(200000)) TO ${sqlString(csv)} (FORMAT csv, HEADER)`,
    )
    const progress: number[] = []
    const result = await extract(fileTable({ path: 'data/big.csv' }), {
      partFileSizeBytes: 64 * 1024,
      onProgress: (n) => progress.push(n),
    })
    expect(result.rows).toBe(200_000)
    expect(result.partPaths.length).toBeGreaterThan(1)
    expect(progress.at(-1)).toBe(200_000)
    expect(progress).toHaveLength(result.partPaths.length)
    const [summary] = await rows(
      result.partPaths,
      `count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS ids, sum(id)::VARCHAR AS s, count(amount)::INTEGER AS a`,
      '1',
    )
    expect(summary).toEqual({
      n: 200_000,
      ids: 200_000,
      s: String((199_999 * 200_000) / 2),
      a: 200_000 - 28_572,
    })
  })
})

/** A 1 MiB tmpfs, when this process may mount one (root on Linux); undefined elsewhere. */
function mountTinyDisk(): string | undefined {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'dimsync-tiny-disk-'))
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]).status === 0
  if (mounted) return dir
  rmSync(dir, { recursive: true, force: true })
  console.warn('skipping the full-disk test: cannot mount a tmpfs here')
  return undefined
}

const tinyDisk = mountTinyDisk()

describe.skipIf(tinyDisk === undefined)('FileSource on a full disk (a real 1 MiB tmpfs)', () => {
  afterAll(() => {
    spawnSync('umount', [tinyDisk!])
    rmSync(tinyDisk!, { recursive: true, force: true })
  })

  it('says the disk is full, in one line', async () => {
    const baseDir = await mkdtemp(join(tmpdir(), 'dimsync-file-source-'))
    try {
      // Hashes do not compress: the parts need several MiB.
      const hash = (i: number) => createHash('sha256').update(String(i)).digest('hex')
      const lines = ['id,name', ...Array.from({ length: 100_000 }, (_, i) => `${i},${hash(i)}`)]
      await writeFile(join(baseDir, 'big.csv'), `${lines.join('\n')}\n`)
      const staging = new LocalStagingStore({ root: join(tinyDisk!, 'staging') })
      const writer = await staging.beginBatch('customers', 'b1')
      const error = await new FileSource({ baseDir })
        .extract({
          table: fileTable({ path: 'big.csv' }),
          batchId: 'b1',
          extractedAt: new Date('2024-01-01T00:00:00Z'),
          writer,
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        )
      await writer.abort()
      expect(error).toBeInstanceOf(SourceError)
      expect((error as Error).message).toBe(
        'customers: the disk is full: reading big.csv needs room for temporary files and Parquet parts; free disk ' +
          'space and run again',
      )
    } finally {
      await rm(baseDir, { recursive: true, force: true })
    }
  })
})
