import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { PutObjectCommand } from '@aws-sdk/client-s3'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import { FileSource } from '../../../lib/adapters/source/file-source.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { extractPass, extractStep } from '../../../lib/use-cases/extract-pass.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'
import { makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * `source: { type: file, files: new_only }` through the CLI's adapters (the same `openSource` the extract
 * Lambda uses), once on a local folder and once on S3 (s3rver): each run reads only the files no earlier run
 * merged, a run with no new file writes nothing, and a run that dies between extract and merge loses nothing.
 */

let s3: S3rverHandle
beforeAll(async () => {
  s3 = await startS3rver()
})
afterAll(() => s3.stop())

interface Place {
  readonly name: string
  /** The source path for files under `folder/`. */
  path(pattern: string): Promise<string>
  put(name: string, body: string | Uint8Array): Promise<void>
}

let embedded: EmbeddedProject | undefined
afterEach(async () => {
  vi.unstubAllEnvs()
  await embedded?.dispose()
  embedded = undefined
})

const places: readonly (() => Promise<Place>)[] = [
  async () => ({
    name: 'local folder',
    path: (pattern) => Promise.resolve(pattern),
    put: (name, body) => {
      mkdirSync(join(embedded!.dir, name, '..'), { recursive: true })
      writeFileSync(join(embedded!.dir, name), body)
      return Promise.resolve()
    },
  }),
  async () => {
    const bucket = await s3.createBucket('new-files')
    // The CLI and the Lambda find the endpoint and credentials in the environment.
    vi.stubEnv('DIMSYNC_S3_ENDPOINT', s3.endpoint)
    vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId)
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey)
    vi.stubEnv('AWS_REGION', 'us-east-1')
    return {
      name: 's3',
      path: (pattern) => Promise.resolve(`s3://${bucket}/${pattern}`),
      put: async (name, body) => {
        await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: name, Body: body }))
      },
    }
  },
]

const JAN = new Date('2024-01-01T00:00:00Z')
const FEB = new Date('2024-02-01T00:00:00Z')
const MAR = new Date('2024-03-01T00:00:00Z')
const APR = new Date('2024-04-01T00:00:00Z')

/** A Parquet file of (customer_id BIGINT, region VARCHAR) rows. */
async function parquetBytes(rows: readonly [number, string][]): Promise<Uint8Array> {
  const dir = mkdtempSync(join(tmpdir(), 'dimsync-parquet-'))
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    const values = rows.map(([id, region]) => `(${id}::BIGINT, '${region}')`).join(', ')
    await connection.run(
      `COPY (SELECT * FROM (VALUES ${values}) t(customer_id, region)) TO '${join(dir, 'f.parquet')}' (FORMAT parquet)`,
    )
    return readFileSync(join(dir, 'f.parquet'))
  } finally {
    connection.closeSync()
    instance.closeSync()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function setUp(makePlace: () => Promise<Place>, options = '', pattern = 'exports/*.csv') {
  const place = await makePlace()
  const path = await place.path(pattern)
  embedded = await makeEmbeddedProject(
    [
      'version: 1',
      'tables:',
      '  - name: customers',
      `    source: { type: file, path: '${path}', files: new_only }`,
      '    key: customer_id',
      ...(options === '' ? [] : [`    ${options}`]),
      '',
    ].join('\n'),
  )
  const { deps, project } = embedded
  const table: TableSpec = project.tables[0]!
  const history = async () =>
    (await readHistory(await deps.openWarehouse(), { table, schema: 'main' })).map((r) => [
      r.customer_id,
      r.region,
      r.is_current,
    ])
  return { place, deps, table, history }
}

describe.each(places.map((make, i) => [i === 0 ? 'local folder' : 's3', make] as const))(
  'files: new_only on a %s',
  (_name, makePlace) => {
    it('each run reads only the new files; absence deletes nothing; a run with no new file says so and writes nothing', async () => {
      const { place, deps, table, history } = await setUp(makePlace)
      await place.put('exports/2024-01.csv', 'customer_id,region\n1,South\n2,North\n')
      await place.put('exports/ignored.txt', 'not matched by the glob\n')
      const first = await runTable(deps, table, { extractedAt: JAN })
      expect(first.rows).toBe(2)

      const nothing = await runTable(deps, table, { extractedAt: FEB })
      expect(nothing.rows).toBe(0)
      expect(nothing.merge.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
      const described = embedded!.events.filter((e) => e.step === 'extract').at(-1)
      expect(described).toMatchObject({
        rows: 0,
        source: expect.stringMatching(/no new file \(1 merged already\)/),
      })
      const watermark = await deps.state.getWatermark('customers')
      expect(watermark?.key).toHaveLength(1)

      await place.put('exports/2024-03.csv', 'customer_id,region\n1,West\n')
      const third = await runTable(deps, table, { extractedAt: MAR })
      expect(third.rows).toBe(1)
      expect(await history()).toEqual([
        [1, 'South', false],
        [1, 'West', true],
        [2, 'North', true],
      ])
      expect((await deps.state.getWatermark('customers'))?.key).toHaveLength(2)
    })

    it('describe (dimsync validate) reads the newest file only, the one a run with nothing new stages empty', async () => {
      const { place, deps, table } = await setUp(makePlace)
      await place.put('exports/a.csv', 'customer_id,region\n1,South\n')
      await new Promise((done) => setTimeout(done, 1100))
      await place.put('exports/b.csv', 'customer_id,region,tier\n1,South,gold\n')
      const columns = await deps.openSource(table).describe(table)
      expect(columns.map((c) => c.name)).toEqual(['customer_id', 'region', 'tier'])
    })

    it('a watermark some other kind of extract wrote is refused, naming the table, and nothing is staged', async () => {
      const { place, deps, table } = await setUp(makePlace)
      await place.put('exports/a.csv', 'customer_id,region\n1,South\n')
      // A first run, so that the warehouse's ledger holds a batch of the table (its watermark is checked first).
      await runTable(deps, table, { extractedAt: JAN })
      const files = await deps.state.getWatermark('customers')
      await deps.state.resetWatermark('customers', { cursor: 42, key: [7] }, files)
      await expect(runTable(deps, table, { extractedAt: FEB })).rejects.toThrow(
        /^customers: the saved watermark \{"cursor":42,"key":\[7\]\} was not written by a new-files source/,
      )
      expect(await deps.staging.listBatches('customers')).toEqual([])
    })

    it('an extract that dies before its batch is committed leaves the watermark, so the next run reads the files again', async () => {
      const { place, deps, table, history } = await setUp(makePlace)
      await place.put('exports/a.csv', 'customer_id,region\n1,South\n')
      const died = new Error('killed between extract and merge')
      await expect(
        extractStep(deps, table, {
          batchId: '20240101T000000.000Z-aaaaaa',
          extractedAt: JAN,
          beforeCommit: () => Promise.reject(died),
        }),
      ).rejects.toBe(died)
      expect(await deps.state.getWatermark('customers')).toBeUndefined()
      const next = await runTable(deps, table, { extractedAt: FEB })
      expect(next.rows).toBe(1)
      expect(await history()).toEqual([[1, 'South', true]])
    })

    it('a batch extracted but never merged is merged by the next run, which then reads only what is newer', async () => {
      const { place, deps, table, history } = await setUp(makePlace)
      await place.put('exports/a.csv', 'customer_id,region\n1,South\n')
      // The extract committed its batch, then the process died before the merge: the watermark did not move.
      await extractStep(deps, table, { batchId: '20240101T000000.000Z-aaaaaa', extractedAt: JAN })
      expect(await deps.state.getWatermark('customers')).toBeUndefined()
      await place.put('exports/b.csv', 'customer_id,region\n1,North\n')
      const next = await runTable(deps, table, { extractedAt: FEB })
      expect(next.resumed.map((r) => r.batchId)).toEqual(['20240101T000000.000Z-aaaaaa'])
      expect(next.rows).toBe(1)
      expect(await history()).toEqual([
        [1, 'South', false],
        [1, 'North', true],
      ])
      const last = await runTable(deps, table, { extractedAt: APR })
      expect(last.rows).toBe(0)
    })

    it('a file rewritten after it was merged is read again whole', async () => {
      const { place, deps, table, history } = await setUp(makePlace)
      await place.put('exports/a.csv', 'customer_id,region\n1,South\n')
      await runTable(deps, table, { extractedAt: JAN })
      // S3 keeps modified times to the second: wait past it so the rewrite is visibly newer.
      await new Promise((done) => setTimeout(done, 1100))
      await place.put('exports/a.csv', 'customer_id,region\n1,East\n')
      const again = await runTable(deps, table, { extractedAt: FEB })
      expect(again.rows).toBe(1)
      expect(await history()).toEqual([
        [1, 'South', false],
        [1, 'East', true],
      ])
    })

    it('a large extract on AWS continues over several passes, one file a round, and merges as one batch', async () => {
      const { place, deps, table, history } = await setUp(makePlace, '', 'exports/*.parquet')
      await place.put('exports/a.parquet', await parquetBytes([[1, 'South']]))
      await place.put('exports/b.parquet', await parquetBytes([[2, 'North']]))
      await place.put('exports/c.parquet', await parquetBytes([[3, 'West']]))
      const batchId = '20240101T000000.000Z-aaaaaa'
      const passes: number[] = []
      // Rounds of one file (the default groups files up to 256 MiB a round).
      const oneFileRounds = {
        ...deps,
        openSource: () => new FileSource({ baseDir: embedded!.dir, roundBytes: 1 }),
      }
      let result = await extractPass(oneFileRounds, table, { batchId, extractedAt: JAN, timeLeftMs: () => 0 })
      while (!result.complete) {
        passes.push(result.rows)
        result = await extractPass(oneFileRounds, table, {
          batchId,
          extractedAt: JAN,
          timeLeftMs: () => 0,
          resume: true,
        })
      }
      // No time left: each pass reads one file, and the last pass commits the batch.
      expect(passes).toEqual([1, 2])
      expect(result.manifest).toMatchObject({ rowCount: 3, mode: 'incremental' })
      expect(result.manifest.watermarkCandidate?.key).toHaveLength(3)
      expect(result.manifest.parts).toHaveLength(3)
      const next = await runTable(deps, table, { extractedAt: FEB })
      expect(next.resumed.map((r) => r.batchId)).toEqual([batchId])
      expect(next.rows).toBe(0)
      expect(await history()).toEqual([
        [1, 'South', true],
        [2, 'North', true],
        [3, 'West', true],
      ])
      // By default small files share a round: two new files, one pass, one part.
      await place.put('exports/d.parquet', await parquetBytes([[4, 'East']]))
      await place.put('exports/e.parquet', await parquetBytes([[5, 'East']]))
      const grouped = await extractPass(deps, table, {
        batchId: '20240301T000000.000Z-bbbbbb',
        extractedAt: MAR,
        timeLeftMs: () => 0,
      })
      expect(grouped.complete && grouped.manifest).toMatchObject({ rowCount: 2, parts: [expect.anything()] })
    })
  },
)
