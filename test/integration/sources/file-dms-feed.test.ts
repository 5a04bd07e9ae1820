import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'
import { makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'
import { markdownBlocks } from '../../support/markdown-blocks.ts'

/**
 * AWS DMS output as DMS's S3 target writes it (docs.aws.amazon.com/dms/latest/userguide/CHAP_Target.S3.html), read
 * by `extract: { mode: changes, format: dms }` from a local folder and from S3 (s3rver):
 * - full-load files LOAD00000001.csv …, named by a hexadecimal counter, carry no Op column unless the endpoint sets
 *   IncludeOpForFullLoad (then the first field is I); change files are named by time (20240102-1000000000.csv) and
 *   start with Op (I, U or D);
 * - CSV has no header unless AddColumnName is set: the columns are declared in the config, in the files' order;
 * - TimestampColumnName adds a STRING column `yyyy-MM-dd HH:mm:ss.SSSSSS` (commit time of a change, transfer
 *   time of a full-load row), in Parquet files too.
 */

let s3: S3rverHandle
beforeAll(async () => {
  s3 = await startS3rver()
})
afterAll(() => s3.stop())

interface Place {
  path(pattern: string): string
  put(name: string, body: string | Uint8Array): Promise<void>
}

let embedded: EmbeddedProject | undefined
afterEach(async () => {
  vi.unstubAllEnvs()
  await embedded?.dispose()
  embedded = undefined
})

const places: readonly (readonly [string, () => Promise<Place>])[] = [
  [
    'local folder',
    () =>
      Promise.resolve({
        path: (pattern) => pattern,
        put: (name, body) => {
          mkdirSync(join(embedded!.dir, name, '..'), { recursive: true })
          writeFileSync(join(embedded!.dir, name), body)
          return Promise.resolve()
        },
      }),
  ],
  [
    's3',
    async () => {
      const bucket = await s3.createBucket('dms-output')
      vi.stubEnv('DIMSYNC_S3_ENDPOINT', s3.endpoint)
      vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId)
      vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey)
      vi.stubEnv('AWS_REGION', 'us-east-1')
      return {
        path: (pattern) => `s3://${bucket}/${pattern}`,
        put: async (name, body) => {
          await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: name, Body: body }))
        },
      }
    },
  ],
]

const FOLDER = 'dms/public/customers'
const DECLARED = 'columns: { Op: VARCHAR, dms_ts: VARCHAR, customer_id: BIGINT, region: VARCHAR }'

/** The rows of the sample: [Op (undefined in a full load without IncludeOpForFullLoad), dms_ts, id, region]. */
type DmsRow = readonly [string | undefined, string, number, string]
const FULL_LOAD: readonly DmsRow[] = [
  [undefined, '2024-01-01 00:00:00.000000', 1, 'South'],
  [undefined, '2024-01-01 00:00:00.000000', 2, 'North'],
]
const CHANGES: readonly DmsRow[] = [
  ['U', '2024-01-02 10:00:00.123456', 1, 'West'],
  ['D', '2024-01-03 09:00:00.000000', 2, 'North'],
  ['I', '2024-01-03 10:00:00.000001', 3, 'East'],
]
const withOp = (rows: readonly DmsRow[]): DmsRow[] => rows.map(([, ...rest]) => ['I', ...rest])

/** A headerless DMS CSV file: Op first when present, then the timestamp column, then the table's columns. */
function dmsCsv(rows: readonly DmsRow[]): string {
  return rows.map(([op, ts, id, region]) => [...(op ? [op] : []), ts, id, region].join(',') + '\n').join('')
}

/** A DMS Parquet file: the timestamp column is a STRING, as DMS writes it. */
async function dmsParquet(rows: readonly DmsRow[]): Promise<Uint8Array> {
  const dir = mkdtempSync(join(tmpdir(), 'dimsync-dms-parquet-'))
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    const hasOp = rows[0]![0] !== undefined
    const values = rows
      .map(([op, ts, id, region]) => `(${hasOp ? `'${op}', ` : ''}'${ts}', ${id}::INTEGER, '${region}')`)
      .join(', ')
    const names = `${hasOp ? 'Op, ' : ''}dms_ts, customer_id, region`
    await connection.run(
      `COPY (SELECT * FROM (VALUES ${values}) t(${names})) TO '${join(dir, 'f.parquet')}' (FORMAT parquet)`,
    )
    return readFileSync(join(dir, 'f.parquet'))
  } finally {
    connection.closeSync()
    instance.closeSync()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function setUp(place: Place, pattern: string, ...options: string[]) {
  const path = place.path(`${FOLDER}/${pattern}`)
  embedded = await makeEmbeddedProject(
    [
      'version: 1',
      'tables:',
      '  - name: customers',
      `    source: { type: file, path: '${path}'${options.includes('csv') ? `, header: false, ${DECLARED}` : ''} }`,
      '    key: customer_id',
      '    extract: { mode: changes, format: dms }',
      '    valid_from: { column: dms_ts }',
      '    deletes: invalidate',
      '',
    ].join('\n'),
  )
  const { deps, project } = embedded
  const table: TableSpec = project.tables[0]!
  const history = async () =>
    (await readHistory(await deps.openWarehouse(), { table, schema: 'main' })).map((r) => [
      r.customer_id,
      r.region,
      String(r.valid_from),
      r.valid_to === null ? null : String(r.valid_to),
    ])
  return { deps, table, history }
}

const EXPECTED = [
  [1, 'South', '2024-01-01 00:00:00+00', '2024-01-02 10:00:00.123456+00'],
  [1, 'West', '2024-01-02 10:00:00.123456+00', null],
  [2, 'North', '2024-01-01 00:00:00+00', '2024-01-03 09:00:00+00'],
  [3, 'East', '2024-01-03 10:00:00.000001+00', null],
]

const JAN = new Date('2024-01-10T00:00:00Z')

describe.each(places)('AWS DMS output on a %s', (_name, makePlace) => {
  it.each([
    ['without IncludeOpForFullLoad', FULL_LOAD],
    ['with IncludeOpForFullLoad', withOp(FULL_LOAD)],
  ])(
    'headerless CSV %s: full-load rows are inserts, the timestamp column is read as times to the microsecond',
    async (_what, fullLoad) => {
      const place = await makePlace()
      const { deps, table, history } = await setUp(place, '*.csv', 'csv')
      await place.put(`${FOLDER}/20240102-1000000000.csv`, dmsCsv(CHANGES))
      await place.put(`${FOLDER}/LOAD00000001.csv`, dmsCsv(fullLoad))
      const run = await runTable(deps, table, { extractedAt: JAN })
      expect(run.rows).toBe(5)
      expect(await history()).toEqual(EXPECTED)
      // DMS's order: the full load first, then the change files by name.
      const extract = embedded!.events.find((e) => e.step === 'extract')
      expect(extract).toMatchObject({
        source: expect.stringMatching(/LOAD00000001\.csv, .*20240102-1000000000\.csv$/),
      })
    },
  )

  it('CSV with AddColumnName: the header names the columns, the full load header has no Op', async () => {
    const place = await makePlace()
    const { deps, table, history } = await setUp(place, '*.csv')
    await place.put(`${FOLDER}/LOAD00000001.csv`, 'dms_ts,customer_id,region\n' + dmsCsv(FULL_LOAD))
    await place.put(`${FOLDER}/20240102-1000000000.csv`, 'Op,dms_ts,customer_id,region\n' + dmsCsv(CHANGES))
    expect((await runTable(deps, table, { extractedAt: JAN })).rows).toBe(5)
    expect(await history()).toEqual(EXPECTED)
  })

  it.each([
    ['without IncludeOpForFullLoad', FULL_LOAD],
    ['with IncludeOpForFullLoad', withOp(FULL_LOAD)],
  ])('Parquet %s: the STRING timestamp column is read as times', async (_what, fullLoad) => {
    const place = await makePlace()
    const { deps, table, history } = await setUp(place, '*.parquet')
    await place.put(`${FOLDER}/LOAD00000001.parquet`, await dmsParquet(fullLoad))
    await place.put(`${FOLDER}/20240102-1000000000.parquet`, await dmsParquet(CHANGES))
    const run = await runTable(deps, table, { extractedAt: JAN })
    expect(run.rows).toBe(5)
    expect(await history()).toEqual(EXPECTED)
  })
})

describe('docs/sources.md', () => {
  it('the dimsync.yaml shown beside the DMS endpoint settings reads what those settings make DMS write, on S3', async () => {
    const page = join(import.meta.dirname, '..', '..', '..', 'docs', 'sources.md')
    const blocks = markdownBlocks('docs/sources.md', readFileSync(page, 'utf8'))
    const yaml = blocks.find((b) => b.lang === 'yaml' && b.text.includes('format: dms'))!.text
    const settings = JSON.parse(
      blocks.find((b) => b.lang === 'json' && b.text.includes('TimestampColumnName'))!.text,
    ) as {
      BucketName: string
      TimestampColumnName: string
      IncludeOpForFullLoad: boolean
      AddColumnName: boolean
    }
    expect(settings).toMatchObject({
      TimestampColumnName: 'dms_ts',
      IncludeOpForFullLoad: false,
      AddColumnName: false,
    })
    await s3.client.send(new CreateBucketCommand({ Bucket: settings.BucketName }))
    vi.stubEnv('DIMSYNC_S3_ENDPOINT', s3.endpoint)
    vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId)
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey)
    vi.stubEnv('AWS_REGION', 'us-east-1')
    const put = (key: string, body: string) =>
      s3.client.send(new PutObjectCommand({ Bucket: settings.BucketName, Key: key, Body: body }))
    embedded = await makeEmbeddedProject(yaml)
    const { deps, project } = embedded
    const table = project.tables[0]!
    await put('public/customers/LOAD00000001.csv', dmsCsv(FULL_LOAD))
    await put('public/customers/20240102-1000000000.csv', dmsCsv(CHANGES))
    expect((await runTable(deps, table, { extractedAt: JAN })).rows).toBe(5)
    const rows = await readHistory(await deps.openWarehouse(), { table, schema: 'main' })
    expect(rows.map((r) => [r.customer_id, r.region, r.is_current])).toEqual([
      [1, 'South', false],
      [1, 'West', true],
      [2, 'North', false],
      [3, 'East', true],
    ])
  })
})

describe('AWS DMS output: refusals', () => {
  const local = places[0]![1]

  it('a headerless file whose column count is not the declared one is refused, naming the file and the counts', async () => {
    const place = await local()
    const { deps, table } = await setUp(place, '*.csv', 'csv')
    await place.put(`${FOLDER}/LOAD00000001.csv`, dmsCsv(FULL_LOAD))
    await place.put(`${FOLDER}/20240102-1000000000.csv`, 'U,2024-01-02 10:00:00.000000,1,West,gold\n')
    await expect(runTable(deps, table, { extractedAt: JAN })).rejects.toThrow(
      'customers: dms/public/customers/20240102-1000000000.csv has 5 columns, but columns: declares 4 (Op, dms_ts, ' +
        'customer_id, region); declare every column of the files, in their order',
    )
    expect(await deps.staging.listBatches('customers')).toEqual([])
  })

  it('a change file without its Op column is refused: only full-load files may lack it', async () => {
    const place = await local()
    const { deps, table } = await setUp(place, '*.csv', 'csv')
    await place.put(`${FOLDER}/20240102-1000000000.csv`, '2024-01-02 10:00:00.000000,1,West\n')
    await expect(runTable(deps, table, { extractedAt: JAN })).rejects.toThrow(
      'customers: dms/public/customers/20240102-1000000000.csv has 3 columns, but columns: declares 4 (Op, dms_ts, ' +
        'customer_id, region); only a full-load file (LOAD00000001.csv …) may lack the operation column Op',
    )
  })

  it('a timestamp that is not DMS`s yyyy-MM-dd HH:mm:ss.SSSSSS is refused, naming the key and the value', async () => {
    const place = await local()
    const { deps, table } = await setUp(place, '*.parquet')
    await place.put(
      `${FOLDER}/20240102-1000000000.parquet`,
      await dmsParquet([
        ['I', '2024-01-02 10:00:00.000000', 1, 'West'],
        ['U', '02/01/2024 11:00', 1, 'East'],
      ]),
    )
    await expect(runTable(deps, table, { extractedAt: JAN })).rejects.toThrow(
      /^customers: valid_from column dms_ts holds "02\/01\/2024 11:00" \(customer_id=1\), which is not an AWS DMS timestamp \(yyyy-MM-dd HH:mm:ss\.SSSSSS\)/,
    )
    expect(await deps.staging.listBatches('customers')).toEqual([])
  })
})
