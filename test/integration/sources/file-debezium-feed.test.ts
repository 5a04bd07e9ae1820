import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'
import { makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'
import { markdownBlocks } from '../../support/markdown-blocks.ts'

/**
 * Debezium change events as an S3 sink connector writes them (JSON lines, one record value per line, with or
 * without the schema envelope), read by extract: { mode: changes, format: debezium }: `after` for c, u and r,
 * the key of `before` for d, t a truncate, tombstones (a null value) skipped, events ordered by source.lsn.
 */

let embedded: EmbeddedProject | undefined
afterEach(async () => {
  vi.unstubAllEnvs()
  await embedded?.dispose()
  embedded = undefined
})

const DAY = 86_400_000
const T0 = Date.parse('2024-01-01T00:00:00Z')

interface Change {
  readonly op: 'c' | 'u' | 'd' | 'r' | 't'
  readonly day: number
  readonly lsn: number
  readonly before?: Record<string, unknown> | null
  readonly after?: Record<string, unknown> | null
}
const envelope = (c: Change) => ({
  before: c.before ?? null,
  after: c.after ?? null,
  source: {
    version: '2.5.0.Final',
    connector: 'postgresql',
    name: 'shop',
    ts_ms: T0 + c.day * DAY,
    db: 'shop',
    schema: 'public',
    table: 'customers',
    lsn: c.lsn,
  },
  op: c.op,
  ts_ms: T0 + c.day * DAY + 250,
  transaction: null,
})
const lines = (changes: readonly (Change | null)[], withSchema = false) =>
  changes
    .map((c) =>
      c === null
        ? 'null'
        : JSON.stringify(
            withSchema
              ? { schema: { type: 'struct', name: 'shop.public.customers.Envelope' }, payload: envelope(c) }
              : envelope(c),
          ),
    )
    .join('\n') + '\n'

async function setUp() {
  embedded = await makeEmbeddedProject(
    [
      'version: 1',
      'tables:',
      '  - name: customers',
      "    source: { type: file, path: 'topics/shop.public.customers/*.json' }",
      '    key: customer_id',
      '    extract: { mode: changes, format: debezium, sequence: source_lsn }',
      '    valid_from: { column: source_ts_ms }',
      '',
    ].join('\n'),
  )
  const { deps, project, dir } = embedded
  const table = project.tables[0]!
  const put = (name: string, text: string) => {
    mkdirSync(join(dir, 'topics', 'shop.public.customers'), { recursive: true })
    writeFileSync(join(dir, 'topics', 'shop.public.customers', name), text)
  }
  const history = async () =>
    (await readHistory(await deps.openWarehouse(), { table, schema: 'main' })).map((r) => [
      r.customer_id,
      r.region,
      String(r.valid_from).slice(0, 10),
      r.valid_to === null ? null : String(r.valid_to).slice(0, 10),
    ])
  return { deps, table, put, history }
}

const JAN = new Date('2024-01-31T00:00:00Z')

describe('Debezium JSON lines (format: debezium)', () => {
  it.each([false, true])(
    'snapshot reads, creates, updates and deletes become versions; a tombstone is skipped (schema envelope: %s)',
    async (withSchema) => {
      const { deps, table, put, history } = await setUp()
      put(
        'shop.public.customers+0+0000000000.json',
        lines(
          [
            { op: 'r', day: 0, lsn: 100, after: { customer_id: 1, region: 'South' } },
            { op: 'c', day: 1, lsn: 200, after: { customer_id: 2, region: 'East' } },
            {
              op: 'u',
              day: 2,
              lsn: 300,
              before: { customer_id: 1, region: 'South' },
              after: { customer_id: 1, region: 'North' },
            },
            // A delete's before holds the key only (REPLICA IDENTITY DEFAULT), then the tombstone of the key.
            { op: 'd', day: 3, lsn: 400, before: { customer_id: 2, region: null } },
            null,
          ],
          withSchema,
        ),
      )
      const run = await runTable(deps, table, { extractedAt: JAN })
      expect(run.rows).toBe(4)
      expect(await history()).toEqual([
        [1, 'South', '2024-01-01', '2024-01-03'],
        [1, 'North', '2024-01-03', null],
        [2, 'East', '2024-01-02', '2024-01-04'],
      ])
    },
  )

  it('two changes of a key in one transaction (same commit time) are ordered by source.lsn; t truncates', async () => {
    const { deps, table, put, history } = await setUp()
    put(
      'shop.public.customers+0+0000000000.json',
      lines([
        { op: 'c', day: 0, lsn: 100, after: { customer_id: 1, region: 'South' } },
        { op: 'c', day: 0, lsn: 110, after: { customer_id: 3, region: 'West' } },
        { op: 'u', day: 1, lsn: 300, after: { customer_id: 1, region: 'East' } },
        { op: 'u', day: 1, lsn: 200, after: { customer_id: 1, region: 'North' } },
        { op: 't', day: 5, lsn: 500 },
      ]),
    )
    await runTable(deps, table, { extractedAt: JAN })
    expect(await history()).toEqual([
      [1, 'South', '2024-01-01', '2024-01-02'],
      [1, 'East', '2024-01-02', '2024-01-06'],
      [3, 'West', '2024-01-01', '2024-01-06'],
    ])
  })
})

describe('docs/sources.md', () => {
  let s3: S3rverHandle
  beforeAll(async () => {
    s3 = await startS3rver()
  })
  afterAll(() => s3.stop())

  it('the dimsync.yaml beside the S3 sink settings reads what that sink writes, on S3', async () => {
    const page = join(import.meta.dirname, '..', '..', '..', 'docs', 'sources.md')
    const blocks = markdownBlocks('docs/sources.md', readFileSync(page, 'utf8'))
    const yaml = blocks.find((b) => b.lang === 'yaml' && b.text.includes('format: debezium'))!.text
    const sink = JSON.parse(
      blocks.find((b) => b.lang === 'json' && b.text.includes('S3SinkConnector'))!.text,
    ) as Record<string, string>
    expect(sink['value.converter.schemas.enable']).toBe('false')
    await s3.client.send(new CreateBucketCommand({ Bucket: sink['s3.bucket.name'] }))
    vi.stubEnv('DIMSYNC_S3_ENDPOINT', s3.endpoint)
    vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId)
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey)
    vi.stubEnv('AWS_REGION', 'us-east-1')
    embedded = await makeEmbeddedProject(yaml)
    const { deps, project } = embedded
    const table = project.tables[0]!
    // The sink's default partitioner: <topics.dir>/<topic>/partition=<n>/<topic>+<n>+<start offset>.json
    const topic = sink.topics!
    await s3.client.send(
      new PutObjectCommand({
        Bucket: sink['s3.bucket.name'],
        Key: `${sink['topics.dir']}/${topic}/partition=0/${topic}+0+0000000000.json`,
        Body: lines([
          { op: 'r', day: 0, lsn: 100, after: { customer_id: 1, region: 'South' } },
          { op: 'u', day: 2, lsn: 300, after: { customer_id: 1, region: 'North' } },
        ]),
      }),
    )
    expect((await runTable(deps, table, { extractedAt: JAN })).rows).toBe(2)
    const rows = await readHistory(await deps.openWarehouse(), { table, schema: 'main' })
    expect(rows.map((r) => [r.customer_id, r.region, r.is_current])).toEqual([
      [1, 'South', false],
      [1, 'North', true],
    ])
  })
})
