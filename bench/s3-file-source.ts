/**
 * `npx tsx bench/s3-file-source.ts`: a file source read from S3 (s3rver on 127.0.0.1: each object listed, streamed
 * to the batch's scratch folder, then read by DuckDB) against the same Parquet files read from a local folder,
 * staged to the local staging folder (`extractStep`, the real FileSource path). 1,000,000 rows in 4 files by
 * default (BENCH_ROWS, BENCH_FILES); each extract in a fresh child process reporting its wall time and peak RSS;
 * local and S3 alternate, BENCH_ROUNDS rounds (default 3), medians. Writes bench/results/s3-file-source.json.
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

import { PutObjectCommand } from '@aws-sdk/client-s3'
import { DuckDBInstance } from '@duckdb/node-api'

import { makeS3Client } from '../lib/adapters/aws/aws-clients.ts'
import { FileSource } from '../lib/adapters/source/file-source.ts'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../lib/adapters/state/local-state-store.ts'
import { parseProject } from '../lib/config/index.ts'
import { extractStep } from '../lib/use-cases/extract-pass.ts'
import { S3RVER_CREDENTIALS, startS3rver } from '../test/support/aws/s3rver.ts'
import { BENCH_ROOT, CHILD_ENV, median, TMP } from './support.ts'

type Where = 'local' | 's3'

interface ChildReport {
  readonly where: Where
  readonly rows: number
  readonly seconds: number
  readonly maxRssMb: number
}

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000)
const FILES = Number(process.env.BENCH_FILES ?? 4)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DIR = join(TMP, 's3-file-source')

if (process.argv[2] === '--child') await child(process.argv[3] as Where, process.argv[4]!)
else await parent()

async function parent(): Promise<void> {
  await mkdir(join(DIR, 'data'), { recursive: true })
  const files: string[] = []
  for (let i = 0; i < FILES; i++) {
    const path = join(DIR, 'data', `part-${ROWS}-${i}.parquet`)
    if (!(await stat(path).catch(() => undefined))) await writeParquet(path, i)
    files.push(path)
  }
  const s3 = await startS3rver()
  try {
    const bucket = await s3.createBucket('bench')
    let bytes = 0
    for (const [i, path] of files.entries()) {
      const body = await readFile(path)
      bytes += body.length
      await s3.client.send(
        new PutObjectCommand({ Bucket: bucket, Key: `exports/part-${ROWS}-${i}.parquet`, Body: body }),
      )
    }
    const runs: ChildReport[] = []
    for (let round = 0; round < ROUNDS; round++) {
      for (const where of ['local', 's3'] as const) {
        const path =
          where === 'local' ? `data/part-${ROWS}-*.parquet` : `s3://${bucket}/exports/part-${ROWS}-*.parquet`
        const report = await runChild(where, path, s3.endpoint)
        console.log(
          `${where}: ${report.rows} rows in ${report.seconds.toFixed(2)} s, peak RSS ${report.maxRssMb.toFixed(0)} MB`,
        )
        runs.push(report)
      }
    }
    const summary = (where: Where) => {
      const mine = runs.filter((r) => r.where === where)
      return {
        medianSeconds: Number(median(mine.map((r) => r.seconds)).toFixed(3)),
        medianPeakRssMb: Math.round(median(mine.map((r) => r.maxRssMb))),
      }
    }
    const local = summary('local')
    const remote = summary('s3')
    const { loadavg } = await import('node:os')
    const result = {
      benchmark:
        'file source: Parquet files read from s3rver (download to scratch, then DuckDB) vs from a local folder',
      rows: ROWS,
      files: FILES,
      inputMiB: Number((bytes / 1048576).toFixed(1)),
      rounds: ROUNDS,
      local,
      s3: remote,
      timeRatio: Number((remote.medianSeconds / local.medianSeconds).toFixed(3)),
      peakRssRatio: Number((remote.medianPeakRssMb / local.medianPeakRssMb).toFixed(3)),
      loadAverage: loadavg(),
      machine: { node: process.version, at: new Date().toISOString() },
      runs,
    }
    await mkdir(join(BENCH_ROOT, 'results'), { recursive: true })
    await writeFile(
      join(BENCH_ROOT, 'results', 's3-file-source.json'),
      `${JSON.stringify(result, null, 2)}\n`,
    )
    console.log(JSON.stringify({ local, s3: remote, timeRatio: result.timeRatio }, null, 2))
  } finally {
    await s3.stop()
  }
}

function runChild(where: Where, path: string, endpoint: string): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const args = ['--import', 'tsx', join(BENCH_ROOT, 's3-file-source.ts'), '--child', where, path]
    const env = {
      ...CHILD_ENV,
      DIMSYNC_S3_ENDPOINT: endpoint,
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
    }
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env })
    let out = ''
    p.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    p.on('error', reject)
    p.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (code !== 0 || !line) reject(new Error(`${where} child exited with ${code}: ${out}`))
      else resolve(JSON.parse(line) as ChildReport)
    })
  })
}

async function child(where: Where, path: string): Promise<void> {
  const project = parseProject(
    `version: 1\ntables:\n  - name: customers\n    source: { type: file, path: '${path}' }\n    key: customer_id\n`,
    join(DIR, 'dimsync.yaml'),
  )
  const work = await mkdtemp(join(DIR, `run-${where}-`))
  const staging = new LocalStagingStore({ root: join(work, 'staging') })
  const state = new LocalStateStore({ root: join(work, 'state') })
  const started = process.hrtime.bigint()
  const { manifest } = await extractStep(
    {
      staging,
      state,
      openSource: () =>
        new FileSource({
          baseDir: project.baseDir,
          s3Client: makeS3Client({
            endpoint: process.env.DIMSYNC_S3_ENDPOINT,
            credentials: S3RVER_CREDENTIALS,
          }),
        }),
    },
    project.tables[0]!,
    { batchId: 'bench', extractedAt: new Date() },
  )
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  const report: ChildReport = {
    where,
    rows: manifest.rowCount,
    seconds,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
  }
  await rm(work, { recursive: true, force: true })
  process.stdout.write(`${JSON.stringify(report)}\n`)
  process.exit(0)
}

/** One Parquet file of ROWS / FILES customers (ids disjoint between files), with an incompressible column. */
async function writeParquet(path: string, index: number): Promise<void> {
  const per = Math.ceil(ROWS / FILES)
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    await connection.run(
      `COPY (SELECT i AS customer_id, 'Customer ' || i AS name, 'customer' || i || '@example.com' AS email, ` +
        `['north','south','east','west'][1 + i % 4] AS region, (i * 7.31) % 10000 AS balance, ` +
        `TIMESTAMPTZ '2024-01-01 00:00:00+00' + TO_MICROSECONDS(i * 1000) AS updated_at, md5(i::VARCHAR) AS api_key ` +
        `FROM range(${index * per + 1}, ${(index + 1) * per + 1}) t(i)) TO '${path}' (FORMAT parquet, COMPRESSION zstd)`,
    )
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}
