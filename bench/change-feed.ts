/**
 * Change-feed benchmark (`BENCH_ONLY=changeFeed npm run bench`, results in bench/results/change-feed.json): a
 * change feed of 1,000,000 events over 200,000 keys (5 updates per key) merged as ONE batch into a
 * 1,000,000-key dimension on DuckDB, against the same changes applied as 5 full snapshot batches (each holding
 * every key, 200,000 of them changed). Both end with the same versions (5 per changed key). Each measured merge
 * runs in a child process of its own on a fresh copy of the dimension, so its wall time and peak RSS are its own;
 * the two variants alternate, median of BENCH_REPEATS (default 3).
 */
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'

import { readParquetColumns } from '../lib/adapters/duckdb/parquet-schema.ts'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { DuckDbWarehouse } from '../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { ChangeFeedSpec, TableSpec } from '../lib/core/table-spec.ts'
import { mergeBatch } from '../lib/use-cases/merge-batch.ts'
import { tableSpec } from '../test/support/table-spec-builder.ts'
import { BENCH_ROOT, CHILD_ENV, measureProcess, median, STAGED_PART_OPTIONS, timed, TMP } from './support.ts'

const KEYS = Number(process.env.BENCH_KEYS ?? 1_000_000)
const CHANGED_KEYS = KEYS / 5
const EVENTS_PER_KEY = 5
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3)
const DMS: ChangeFeedSpec = { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } }
const SCRIPT = join(BENCH_ROOT, 'change-feed.ts')

type Variant = 'feed' | 'snapshots'

const TABLES: Record<Variant, TableSpec> = {
  feed: tableSpec({
    validFrom: { kind: 'column', column: 'changed_at' },
    changes: DMS,
    deletes: 'invalidate',
  }),
  snapshots: tableSpec(),
}

const day = (n: number | string) => `TIMESTAMPTZ '2024-01-01 00:00:00+00' + TO_DAYS(CAST(${n} AS INTEGER))`
/** The region of key `id` after its `n`-th change (0: as first loaded). */
const region = (id: string, n: string) =>
  `CASE WHEN ${n} = 0 THEN 'region_' || (${id} % 7) ELSE 'r' || ${n} || '_' || ${id} END`
/** Keys 5, 10, 15, ... change: a fifth of the keys. */
const CHANGED = (id: string) => `${id} % 5 = 0`

async function writeParquet(path: string, select: string): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    await connection.run(`SET TimeZone = 'UTC'`)
    await connection.run(`COPY (${select}) TO '${path}' (${STAGED_PART_OPTIONS})`)
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

async function stage(
  staging: LocalStagingStore,
  batchId: string,
  extractedAt: string,
  select: string,
  rows: number,
): Promise<string> {
  await staging.deleteBatch('customers', batchId).catch(() => undefined)
  const writer = await staging.beginBatch('customers', batchId)
  const part = join(writer.scratchDir, 'part.parquet')
  await writeParquet(part, select)
  const columns = await readParquetColumns([part])
  await writer.addPart(part, rows)
  await writer.commit({
    table: 'customers',
    batchId,
    extractedAt,
    mode: 'full',
    rowCount: rows,
    columns,
    sourceDescription: 'generated',
  })
  return batchId
}

/** The first load of each variant (not measured) and the batches the measured merges apply. */
async function prepare(staging: LocalStagingStore) {
  const keys = `range(1, ${KEYS + 1}) k(id)`
  const initialFeed = await stage(
    staging,
    '20240101T000000.000Z-feed00',
    '2024-01-01T00:00:00Z',
    `SELECT 'I' AS Op, id AS customer_id, 'name_' || id AS name, ${region('id', '0')} AS region, ${day(0)} AS changed_at FROM ${keys}`,
    KEYS,
  )
  const feed = await stage(
    staging,
    '20240201T000000.000Z-feed01',
    '2024-02-01T00:00:00Z',
    `SELECT 'U' AS Op, id AS customer_id, 'name_' || id AS name, ${region('id', 'n')} AS region, ${day('n')} AS changed_at ` +
      `FROM ${keys}, range(1, ${EVENTS_PER_KEY + 1}) e(n) WHERE ${CHANGED('id')}`,
    CHANGED_KEYS * EVENTS_PER_KEY,
  )
  const snapshot = (n: number) =>
    `SELECT id AS customer_id, 'name_' || id AS name, CASE WHEN ${CHANGED('id')} THEN ${region('id', String(n))} ` +
    `ELSE ${region('id', '0')} END AS region FROM ${keys}`
  const initialSnapshot = await stage(
    staging,
    '20240101T000000.000Z-snap00',
    '2024-01-01T00:00:00Z',
    snapshot(0),
    KEYS,
  )
  const snapshots: string[] = []
  for (let n = 1; n <= EVENTS_PER_KEY; n++) {
    const at = `2024-01-${String(1 + n).padStart(2, '0')}T00:00:00Z`
    snapshots.push(
      await stage(
        staging,
        `${at.slice(0, 10).replaceAll('-', '')}T000000.000Z-snap0${n}`,
        at,
        snapshot(n),
        KEYS,
      ),
    )
  }
  return { initialFeed, feed, initialSnapshot, snapshots }
}

/** Child process: merges `batchIds` in order into the dimension in `db`; prints the merge seconds and versions. */
async function mergeChild(variant: Variant, db: string, stagingRoot: string, batchIds: readonly string[]) {
  const staging = new LocalStagingStore({ root: stagingRoot })
  const warehouse = await DuckDbWarehouse.open({ path: db })
  let inserted = 0
  try {
    const { seconds } = await timed(async () => {
      for (const batchId of batchIds) {
        const result = await mergeBatch(
          { warehouse, staging },
          { table: TABLES[variant], schema: 'main', batchId, now: new Date() },
        )
        inserted += result.counts?.insertedVersions ?? 0
      }
    })
    console.log(JSON.stringify({ seconds, inserted }))
  } finally {
    await warehouse.close()
  }
}

function measure(variant: Variant, db: string, stagingRoot: string, batchIds: readonly string[]) {
  const run = measureProcess(
    process.execPath,
    ['--import', 'tsx', SCRIPT, 'merge', variant, db, stagingRoot, batchIds.join(',')],
    { cwd: join(BENCH_ROOT, '..'), env: CHILD_ENV },
  )
  const { seconds, inserted } = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
    seconds: number
    inserted: number
  }
  if (inserted !== CHANGED_KEYS * EVENTS_PER_KEY)
    throw new Error(`${variant}: ${inserted} versions inserted, expected ${CHANGED_KEYS * EVENTS_PER_KEY}`)
  return { mergeSeconds: seconds, processSeconds: run.seconds, peakRssMb: run.peakRssMb }
}

export async function runChangeFeedBenchmark(): Promise<Record<string, unknown>> {
  mkdirSync(TMP, { recursive: true })
  const stagingRoot = join(TMP, 'change-feed-staging')
  rmSync(stagingRoot, { recursive: true, force: true })
  const staging = new LocalStagingStore({ root: stagingRoot })
  console.log(`changeFeed: staging ${KEYS} keys and ${CHANGED_KEYS * EVENTS_PER_KEY} events…`)
  const batches = await prepare(staging)
  const base: Record<Variant, string> = {
    feed: join(TMP, 'change-feed-base.duckdb'),
    snapshots: join(TMP, 'change-feed-snapshots-base.duckdb'),
  }
  for (const f of Object.values(base)) rmSync(f, { force: true })
  measure0('feed', base.feed, stagingRoot, [batches.initialFeed])
  measure0('snapshots', base.snapshots, stagingRoot, [batches.initialSnapshot])
  const work = join(TMP, 'change-feed-work.duckdb')
  const runs: Record<Variant, ReturnType<typeof measure>[]> = { feed: [], snapshots: [] }
  for (let i = 0; i < REPEATS; i++) {
    for (const variant of ['feed', 'snapshots'] as const) {
      rmSync(`${work}.wal`, { force: true })
      copyFileSync(base[variant], work)
      const ids = variant === 'feed' ? [batches.feed] : batches.snapshots
      runs[variant].push(measure(variant, work, stagingRoot, ids))
      const r = runs[variant].at(-1)!
      console.log(
        `changeFeed: run ${i + 1} ${variant}: merge ${r.mergeSeconds.toFixed(2)} s, ` +
          `process ${r.processSeconds.toFixed(2)} s, peak RSS ${r.peakRssMb.toFixed(0)} MB`,
      )
    }
  }
  for (const f of [work, `${work}.wal`, ...Object.values(base)]) if (existsSync(f)) rmSync(f)
  rmSync(stagingRoot, { recursive: true, force: true })
  const summary = (variant: Variant) => ({
    mergeSeconds: median(runs[variant].map((r) => r.mergeSeconds)),
    processSeconds: median(runs[variant].map((r) => r.processSeconds)),
    peakRssMb: median(runs[variant].map((r) => r.peakRssMb)),
    runs: runs[variant],
  })
  const feed = summary('feed')
  const snapshots = summary('snapshots')
  return {
    keys: KEYS,
    changedKeys: CHANGED_KEYS,
    eventsPerKey: EVENTS_PER_KEY,
    events: CHANGED_KEYS * EVENTS_PER_KEY,
    repeats: REPEATS,
    changeFeedOneBatch: feed,
    fiveSnapshotBatches: snapshots,
    feedToSnapshotsTimeRatio: feed.mergeSeconds / snapshots.mergeSeconds,
    feedToSnapshotsPeakRssRatio: feed.peakRssMb / snapshots.peakRssMb,
    loadAverage: (await import('node:os')).loadavg(),
  }
}

/** The unmeasured first load of a variant's dimension, in a child like the measured merges. */
function measure0(variant: Variant, db: string, stagingRoot: string, batchIds: readonly string[]) {
  measureProcess(
    process.execPath,
    ['--import', 'tsx', SCRIPT, 'merge', variant, db, stagingRoot, batchIds.join(',')],
    {
      cwd: join(BENCH_ROOT, '..'),
      env: CHILD_ENV,
    },
  )
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === 'merge') {
    const [variant, db, stagingRoot, ids] = process.argv.slice(3) as [Variant, string, string, string]
    await mergeChild(variant, db, stagingRoot, ids.split(','))
  } else {
    const { writeFileSync } = await import('node:fs')
    const result = await runChangeFeedBenchmark()
    mkdirSync(join(BENCH_ROOT, 'results'), { recursive: true })
    writeFileSync(join(BENCH_ROOT, 'results', 'change-feed.json'), JSON.stringify(result, null, 2) + '\n')
    console.log(JSON.stringify(result, null, 2))
  }
}
