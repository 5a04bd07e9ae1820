/**
 * `npx tsx bench/s3-extract.ts`: extract of a 1,000,000-row CSV table to S3 (s3rver on 127.0.0.1) against the
 * same extract to the local staging folder, in the same run. Each extract runs in a fresh child process (the
 * real FileSource → BatchWriter → manifest path, `extractStep`) that reports its wall time and peak RSS
 * (`process.resourceUsage().maxRSS`); s3rver runs in its own process and is not counted. Writes
 * bench/results/s3-extract.json. BENCH_ROWS overrides the row count, BENCH_ROUNDS the rounds (default 3).
 */
import { spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { join } from 'node:path'

import { makeS3Client } from '../lib/adapters/aws/aws-clients.ts'
import { FileSource } from '../lib/adapters/source/file-source.ts'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { S3StagingStore } from '../lib/adapters/staging/s3-staging-store.ts'
import { LocalStateStore } from '../lib/adapters/state/local-state-store.ts'
import { loadProject } from '../lib/config/index.ts'
import type { StagingStore } from '../lib/ports/staging-store.ts'
import { extractStep } from '../lib/use-cases/extract-pass.ts'
import { S3RVER_CREDENTIALS, startS3rver } from '../test/support/aws/s3rver.ts'
import { BENCH_ROOT, CHILD_ENV, median, TMP } from './support.ts'

interface ChildReport {
  readonly target: 'local' | 's3'
  readonly rows: number
  readonly bytes: number
  readonly parts: number
  readonly seconds: number
  readonly maxRssMb: number
}

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)

if (process.argv[2] === '--child')
  await child(process.argv[3] as 'local' | 's3', process.argv[4]!, process.argv[5])
else await parent()

async function parent(): Promise<void> {
  const dir = join(TMP, 's3-extract')
  await mkdir(join(dir, 'data'), { recursive: true })
  const csv = join(dir, 'data', `customers-${ROWS}.csv`)
  if (!(await stat(csv).catch(() => undefined))) await writeCsv(csv, ROWS)
  await writeFile(
    join(dir, 'dimsync.yaml'),
    `version: 1\ntables:\n  - name: customers\n    source: { type: file, path: data/customers-${ROWS}.csv }\n    key: customer_id\n`,
  )
  const s3 = await startS3rver()
  try {
    const runs: ChildReport[] = []
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of ['local', 's3'] as const) {
        const bucket = target === 's3' ? await s3.createBucket('bench') : ''
        const report = await runChild(target, dir, target === 's3' ? `${s3.endpoint}|${bucket}` : undefined)
        console.log(
          `${target}: ${report.rows} rows in ${report.seconds.toFixed(2)} s (${Math.round(report.rows / report.seconds)} rows/s), ` +
            `${report.parts} parts, ${(report.bytes / 1048576).toFixed(1)} MiB, peak RSS ${report.maxRssMb.toFixed(0)} MB`,
        )
        runs.push(report)
      }
    }
    const summary = (target: 'local' | 's3') => {
      const mine = runs.filter((r) => r.target === target)
      const seconds = median(mine.map((r) => r.seconds))
      return {
        rows: mine[0]!.rows,
        medianSeconds: Number(seconds.toFixed(3)),
        rowsPerSecond: Math.round(mine[0]!.rows / seconds),
        stagedMiB: Number((mine[0]!.bytes / 1048576).toFixed(1)),
        parts: mine[0]!.parts,
        peakRssMb: Math.round(Math.max(...mine.map((r) => r.maxRssMb))),
      }
    }
    const local = summary('local')
    const remote = summary('s3')
    const result = {
      benchmark: 'extract of a CSV table to s3rver vs to the local staging folder (FileSource, extractStep)',
      rows: ROWS,
      rounds: ROUNDS,
      local,
      s3: remote,
      throughputRatio: Number((remote.rowsPerSecond / local.rowsPerSecond).toFixed(3)),
      target: '>= 0.8 of local throughput, same bounded memory',
      peakRssRatio: Number((remote.peakRssMb / local.peakRssMb).toFixed(3)),
      notes: [
        'peak RSS is the extracting child process only (s3rver runs in its own process)',
        's3rver writes to the same local disk; real S3 adds network latency but parallel multipart uploads hide most of it',
      ],
      machine: { node: process.version, at: new Date().toISOString() },
      runs,
    }
    await mkdir(join(BENCH_ROOT, 'results'), { recursive: true })
    await writeFile(join(BENCH_ROOT, 'results', 's3-extract.json'), `${JSON.stringify(result, null, 2)}\n`)
    console.log(JSON.stringify({ local, s3: remote, throughputRatio: result.throughputRatio }, null, 2))
  } finally {
    await s3.stop()
  }
}

function runChild(target: 'local' | 's3', dir: string, s3Spec: string | undefined): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const args = ['--import', 'tsx', join(BENCH_ROOT, 's3-extract.ts'), '--child', target, dir]
    if (s3Spec) args.push(s3Spec)
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: CHILD_ENV })
    let out = ''
    p.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    p.on('error', reject)
    p.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (code !== 0 || !line) reject(new Error(`${target} child exited with ${code}: ${out}`))
      else resolve(JSON.parse(line) as ChildReport)
    })
  })
}

async function child(target: 'local' | 's3', dir: string, s3Spec: string | undefined): Promise<void> {
  const project = await loadProject(join(dir, 'dimsync.yaml'))
  const table = project.tables[0]!
  const work = await mkdtemp(join(dir, `run-${target}-`))
  let staging: StagingStore
  if (target === 's3') {
    const [endpoint, bucket] = s3Spec!.split('|')
    const client = makeS3Client({ endpoint, credentials: S3RVER_CREDENTIALS, region: 'us-east-1' })
    staging = new S3StagingStore({ client, bucket: bucket!, prefix: 'staging', scratchRoot: work })
  } else {
    staging = new LocalStagingStore({ root: join(work, 'staging') })
  }
  const state = new LocalStateStore({ root: join(work, 'state') })
  const started = process.hrtime.bigint()
  const { manifest, bytes } = await extractStep(
    { staging, state, openSource: () => new FileSource({ baseDir: project.baseDir }) },
    table,
    { batchId: 'bench', extractedAt: new Date() },
  )
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  const report: ChildReport = {
    target,
    rows: manifest.rowCount,
    bytes,
    parts: manifest.parts.length,
    seconds,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
  }
  await rm(work, { recursive: true, force: true })
  process.stdout.write(`${JSON.stringify(report)}\n`)
  process.exit(0)
}

/**
 * A customers table: id, name, email, region, balance, updated_at (microseconds), a nullable note and an
 * incompressible api_key (pseudo-random hex), so the staged Parquet is large enough for multipart uploads.
 */
async function writeCsv(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path)
  out.write('customer_id,name,email,region,balance,updated_at,note,api_key\n')
  let seed = 0x2545f491
  const regions = ['north', 'south', 'east', 'west']
  let chunk = ''
  for (let i = 1; i <= rows; i++) {
    const micros = String(i % 1_000_000).padStart(6, '0')
    chunk +=
      `${i},Customer ${i},customer${i}@example.com,${regions[i % 4]},${(i * 7.31) % 10000},` +
      `2024-0${1 + (i % 9)}-1${i % 10}T1${i % 10}:2${i % 10}:3${i % 10}.${micros},${i % 5 === 0 ? '' : `note ${i % 97}`},${key()}\n`
    if (i % 10_000 === 0) {
      if (!out.write(chunk)) await once(out, 'drain')
      chunk = ''
    }
  }
  out.end(chunk)
  await once(out, 'finish')

  function key(): string {
    let text = ''
    for (let k = 0; k < 2; k++) {
      // xorshift32: cheap, deterministic, and incompressible enough for Parquet.
      seed ^= seed << 13
      seed ^= seed >>> 17
      seed ^= seed << 5
      text += (seed >>> 0).toString(16).padStart(8, '0')
    }
    return text
  }
}
