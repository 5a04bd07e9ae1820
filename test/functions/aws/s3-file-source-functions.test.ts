import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

import { PutObjectCommand } from '@aws-sdk/client-s3'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import { createMergeHandler } from '../../../functions/shared/handlers.ts'
import { scheduledInput } from '../../../infra/constructs/table-schedules.ts'
import { buildAwsDeps, type AwsDeps } from '../../../lib/runtime/aws-deps.ts'
import { startDynalite, type DynaliteHandle } from '../../support/aws/dynalite.ts'
import {
  captureStdout,
  fakeContext,
  makeSandbox,
  stagingExtract,
  useEmulatorCredentials,
} from '../../support/aws/lambda.ts'
import { startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'

/**
 * The extract and merge functions on a file source on S3 that reads new files only (the DMS-in-a-bucket use
 * case): the functions' own environment (endpoint, role credentials) reaches the source, each scheduled pair
 * loads only the objects dropped since the last merge, and a pair with nothing new changes nothing.
 */

let s3: S3rverHandle
let dynamo: DynaliteHandle
const opened: AwsDeps[] = []

beforeAll(async () => {
  useEmulatorCredentials()
  ;[s3, dynamo] = await Promise.all([startS3rver(), startDynalite()])
})
afterEach(async () => {
  for (const deps of opened.splice(0)) await deps.close()
})
afterAll(async () => {
  await Promise.all([s3?.stop(), dynamo?.stop()])
})

describe('extract and merge functions on an S3 change feed read as new files only', () => {
  it('each pair loads the objects dropped since the last merge; a pair with nothing new changes nothing', async () => {
    const box = await makeSandbox(s3, dynamo)
    const source = await s3.createBucket('dms')
    await writeFile(
      join(box.dir, 'dimsync.yaml'),
      [
        'version: 1',
        'warehouse: { type: duckdb, path: unused.duckdb }',
        'tables:',
        '  - name: customers',
        `    source: { type: file, path: 's3://${source}/dms/public/customers/*.csv', files: new_only }`,
        '    target: dim_customer',
        '    key: customer_id',
        '    extract: { mode: changes }',
        '    valid_from: { column: changed_at }',
        '',
      ].join('\n'),
    )
    const drop = (name: string, rows: readonly string[]) =>
      s3.client.send(
        new PutObjectCommand({
          Bucket: source,
          Key: `dms/public/customers/${name}`,
          Body: ['Op,customer_id,region,changed_at', ...rows, ''].join('\n'),
        }),
      )
    const deps = await buildAwsDeps(box.env)
    opened.push(deps)
    const extract = stagingExtract({ deps: async () => deps })
    const merge = createMergeHandler({ deps: async () => deps })
    const pair = async () => {
      const staged = (await captureStdout(() => extract({ table: 'customers' }, fakeContext()))).result
      const merged = (await captureStdout(() => merge(staged, fakeContext()))).result
      return { staged, merged }
    }

    await drop('20240101-000000.csv', ['I,1,South,2024-01-01 00:00:00', 'I,2,North,2024-01-01 00:00:00'])
    const first = await pair()
    expect(first.staged.rows).toBe(2)
    expect(first.merged).toMatchObject({ status: 'merged', watermark: 'advanced' })

    await drop('20240102-000000.csv', ['U,1,West,2024-01-02 00:00:00', 'D,2,North,2024-01-02 00:00:00'])
    const second = await pair()
    expect(second.staged.rows).toBe(2)
    expect(second.merged).toMatchObject({ status: 'merged', counts: { insertedVersions: 1 } })

    const idle = await pair()
    expect(idle.staged.rows).toBe(0)
    expect(idle.merged).toMatchObject({ counts: { insertedVersions: 0, closedVersions: 0 } })

    // The schedule's own start (infra/constructs/table-schedules.ts) runs the table as configured: accepted.
    const scheduled = scheduledInput({
      name: 'customers',
      mode: 'full',
      schedule: {
        expression: 'rate(1 hour)',
        timezone: 'UTC',
        enabled: true,
        flexibleWindowMinutes: 0,
        maxIntervalMinutes: 60,
      },
    })
    const onSchedule = (await captureStdout(() => extract(scheduled, fakeContext()))).result
    expect(onSchedule.rows).toBe(0)

    // A full reload from the console cannot re-read what new_only skips: refused, naming the table and the ways out.
    await expect(
      captureStdout(() => extract({ table: 'customers', mode: 'full' }, fakeContext())),
    ).rejects.toThrow(
      'extract event: mode: table customers reads new files only (source.files: new_only), so "full" would not read the files merged already; start it without a mode to load the new files, or set files: all to read every file as one snapshot',
    )

    const warehouse = await deps.warehouse()
    const rows = await warehouse.query(
      'SELECT customer_id, region, valid_to IS NULL AS current FROM main.dim_customer ORDER BY customer_id, valid_from',
    )
    expect(rows.map((r) => [Number(r.customer_id), r.region, r.current])).toEqual([
      [1, 'South', false],
      [1, 'West', true],
      [2, 'North', false],
    ])
  })
})

describe('the S3 client of a file source on S3', () => {
  it("is one of the container's instrumented clients (traced in Lambda): every S3 call of an extract goes through them", async () => {
    const box = await makeSandbox(s3, dynamo)
    const source = await s3.createBucket('landing')
    await writeFile(
      join(box.dir, 'dimsync.yaml'),
      [
        'version: 1',
        'warehouse: { type: duckdb, path: unused.duckdb }',
        'tables:',
        '  - name: customers',
        `    source: { type: file, path: 's3://${source}/exports/*.csv' }`,
        '    target: dim_customer',
        '    key: customer_id',
        '',
      ].join('\n'),
    )
    await s3.client.send(
      new PutObjectCommand({
        Bucket: source,
        Key: 'exports/customers.csv',
        Body: 'customer_id,region\n1,South\n2,North\n',
      }),
    )
    // What X-Ray instrumentation does to a client, made visible: a middleware that records each call's bucket.
    const seen: string[] = []
    const deps = await buildAwsDeps(box.env, {
      instrumentClient: (client) => {
        type Args = { input: { Bucket?: string } }
        const stack = (client as unknown as { middlewareStack: { add(m: unknown, o: object): void } })
          .middlewareStack
        stack.add(
          (next: (args: Args) => Promise<unknown>, context: { commandName: string }) =>
            async (args: Args) => {
              seen.push(`${context.commandName}:${args.input.Bucket ?? ''}`)
              return await next(args)
            },
          { step: 'initialize', name: 'recordCalls' },
        )
        return client
      },
    })
    opened.push(deps)
    const staged = (
      await captureStdout(() =>
        stagingExtract({ deps: async () => deps })({ table: 'customers' }, fakeContext()),
      )
    ).result
    expect(staged.rows).toBe(2)
    expect(seen).toContain(`GetObjectCommand:${source}`)
    expect(seen.some((call) => call.endsWith(`:${box.bucket}`))).toBe(true)
  })
})
