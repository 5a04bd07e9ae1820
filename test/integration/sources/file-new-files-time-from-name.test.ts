import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'
import { makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * `files: new_only` with `time_from_name`: the new files are read in the order of the time in their names, not
 * in the order they were uploaded; a file dated before the last merged one is refused on a snapshot table (its
 * values would replace newer ones) and slotted in on a table whose versions start at a change time. On a local
 * folder (the embedded path) and on S3 (s3rver), through the CLI's adapters.
 */

let s3: S3rverHandle
beforeAll(async () => {
  s3 = await startS3rver()
})
afterAll(() => s3.stop())

interface Place {
  /** The source path for files matching `pattern`. */
  path(pattern: string): string
  put(name: string, body: string): Promise<void>
  remove(name: string): Promise<void>
}

let embedded: EmbeddedProject | undefined
afterEach(async () => {
  vi.unstubAllEnvs()
  await embedded?.dispose()
  embedded = undefined
})

const places: Record<string, () => Promise<Place>> = {
  'local folder': () =>
    Promise.resolve({
      path: (pattern) => pattern,
      put: (name, body) => {
        mkdirSync(join(embedded!.dir, name, '..'), { recursive: true })
        writeFileSync(join(embedded!.dir, name), body)
        return Promise.resolve()
      },
      remove: (name) => Promise.resolve(rmSync(join(embedded!.dir, name))),
    }),
  s3: async () => {
    const bucket = await s3.createBucket('dated-files')
    vi.stubEnv('DIMSYNC_S3_ENDPOINT', s3.endpoint)
    vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId)
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey)
    vi.stubEnv('AWS_REGION', 'us-east-1')
    return {
      path: (pattern) => `s3://${bucket}/${pattern}`,
      put: async (name, body) => {
        await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: name, Body: body }))
      },
      remove: async (name) => {
        await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: name }))
      },
    }
  },
}

const at = (day: number) => new Date(Date.UTC(2024, 5, day))

async function setUp(makePlace: () => Promise<Place>, source: string, options: readonly string[]) {
  const place = await makePlace()
  embedded = await makeEmbeddedProject(
    [
      'version: 1',
      'tables:',
      '  - name: customers',
      `    source: { type: file, path: '${place.path('exports/*.csv')}', files: new_only, ${source} }`,
      '    key: customer_id',
      ...options.map((o) => `    ${o}`),
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
  const lastSource = () => embedded!.events.filter((e) => e.step === 'extract').at(-1)
  return { place, deps, table, history, lastSource }
}

describe.each(Object.entries(places))('files: new_only with time_from_name on a %s', (_name, makePlace) => {
  it('a snapshot table reads its new files in the order of their names; a file dated before the last merged one is refused, naming it, and nothing is written', async () => {
    const { place, deps, table, history, lastSource } = await setUp(
      makePlace,
      "time_from_name: 'customers_%Y-%m-%d.csv'",
      ['deletes: ignore'],
    )
    const csv = (region: string) => `customer_id,region\n1,${region}\n`
    await place.put('exports/customers_2024-06-01.csv', csv('a0'))
    await runTable(deps, table, { extractedAt: at(10) })
    // Uploaded newest date first: read oldest date first.
    await place.put('exports/customers_2024-06-03.csv', 'customer_id,region\n2,b3\n')
    await place.put('exports/customers_2024-06-02.csv', 'customer_id,region\n3,c2\n')
    await runTable(deps, table, { extractedAt: at(11) })
    expect(lastSource()).toMatchObject({
      source: expect.stringMatching(/customers_2024-06-02\.csv, .*customers_2024-06-03\.csv$/),
    })
    const before = await deps.state.getWatermark('customers')

    // A late file: uploaded last, dated before the newest merged one.
    await place.put('exports/customers_2024-05-31.csv', csv('a-1'))
    const refused = await runTable(deps, table, { extractedAt: at(12) }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(Error)
    expect((refused as Error).message).toMatch(
      /^customers: file \S*customers_2024-05-31\.csv is dated 2024-05-31T00:00:00\.000Z by its name \(time_from_name "customers_%Y-%m-%d\.csv"\), before the last merged file \(dated 2024-06-03T00:00:00\.000Z\)/,
    )
    expect(await deps.state.getWatermark('customers')).toEqual(before)
    expect(await deps.staging.listBatches('customers')).toEqual([])
    expect(await history()).toEqual([
      [1, 'a0', true],
      [2, 'b3', true],
      [3, 'c2', true],
    ])

    // A name the pattern does not read is refused too, naming the file and the pattern.
    await place.remove('exports/customers_2024-05-31.csv')
    await place.put('exports/customers_2024-06-02b.csv', csv('late'))
    const unnamed = await runTable(deps, table, { extractedAt: at(12) }).catch((e: unknown) => e)
    expect((unnamed as Error).message).toMatch(
      /^customers: file \S*customers_2024-06-02b\.csv has no time in its name that time_from_name "customers_%Y-%m-%d\.csv" reads/,
    )
    await place.remove('exports/customers_2024-06-02b.csv')

    // Once the late files are gone, the next file goes on.
    await place.put('exports/customers_2024-06-04.csv', csv('a4'))
    await runTable(deps, table, { extractedAt: at(13) })
    expect(await history()).toEqual([
      [1, 'a0', false],
      [1, 'a4', true],
      [2, 'b3', true],
      [3, 'c2', true],
    ])
  })

  it('a change feed slots a late file in at the change times it holds', async () => {
    const { place, deps, table, history, lastSource } = await setUp(
      makePlace,
      "time_from_name: 'changes_%Y-%m-%d.csv'",
      ['extract: { mode: changes }', 'valid_from: { column: changed_at }'],
    )
    const csv = (op: string, region: string, day: number) =>
      `Op,customer_id,region,changed_at\n${op},1,${region},2024-06-0${day} 00:00:00\n`
    await place.put('exports/changes_2024-06-01.csv', csv('I', 'a1', 1))
    await place.put('exports/changes_2024-06-03.csv', csv('U', 'a3', 3))
    await runTable(deps, table, { extractedAt: at(10) })
    await place.put('exports/changes_2024-06-02.csv', csv('U', 'a2', 2))
    await runTable(deps, table, { extractedAt: at(11) })
    expect(lastSource()).toMatchObject({ source: expect.stringMatching(/changes_2024-06-02\.csv$/) })
    expect(await history()).toEqual([
      [1, 'a1', false],
      [1, 'a2', false],
      [1, 'a3', true],
    ])
  })
})
