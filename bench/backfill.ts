/**
 * Backfill benchmark: 30 daily snapshots of a 1,000,000-key table, each changing 2% of the keys, merged in order
 * into one DuckDB dimension (mergeBatch, the CLI's memory limit) as `dimsync backfill` does. A merge must not slow
 * down as history grows: the 30th snapshot's merge against the 2nd's (target ≤ 1.2×), median of the repeats
 * (each repeat a whole backfill into a new dimension). BENCH_BACKFILL_KEYS, BENCH_BACKFILL_DAYS, BENCH_REPEATS.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { DuckDbWarehouse } from '../lib/adapters/warehouse/duckdb-warehouse.ts'
import { DEFAULT_WAREHOUSE_MEMORY_LIMIT } from '../lib/runtime/local-deps.ts'
import { mergeBatch } from '../lib/use-cases/merge-batch.ts'
import { tableSpec } from '../test/support/table-spec-builder.ts'
import { median, STAGED_PART_OPTIONS, timed, TMP, writeResults } from './support.ts'

const KEYS = Number(process.env.BENCH_BACKFILL_KEYS ?? 1_000_000)
const DAYS = Number(process.env.BENCH_BACKFILL_DAYS ?? 30)
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3)
const MEMORY_LIMIT = process.env.DIMSYNC_DUCKDB_MEMORY_LIMIT ?? DEFAULT_WAREHOUSE_MEMORY_LIMIT
const table = tableSpec({ deletes: 'invalidate' })
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'segment', type: 'VARCHAR' },
  { name: 'score', type: 'DOUBLE' },
  { name: 'city', type: 'VARCHAR' },
]

const dayAt = (day: number) => new Date(Date.UTC(2024, 0, 1 + day)).toISOString()
const batchOf = (day: number) => `day-${String(day).padStart(2, '0')}`

/**
 * Day `day`'s snapshot. Key i changes once, on day ((50 - i % 50) * 29) % 50 (29 is 19's inverse mod 50 and
 * 7919 ≡ 19): each day a different 2% of the keys.
 */
async function stageDay(staging: LocalStagingStore, day: number): Promise<void> {
  const batchId = batchOf(day)
  await staging.deleteBatch(table.name, batchId).catch(() => undefined)
  const writer = await staging.beginBatch(table.name, batchId)
  const part = join(writer.scratchDir, 'snapshot.parquet')
  const instance = await DuckDBInstance.create(':memory:')
  const connection = await instance.connect()
  try {
    await connection.run(`COPY (
      SELECT i AS customer_id, 'name_' || i AS name,
        CASE WHEN ((50 - i % 50) * 29) % 50 BETWEEN 1 AND ${day} THEN 'moved_on_' || (((50 - i % 50) * 29) % 50)
          ELSE 'region_' || (i % 7) END AS region,
        'seg_' || (i % 13) AS segment, CAST(i % 1000 AS DOUBLE) / 10 AS score, 'city_' || (i % 101) AS city
      FROM range(1, ${KEYS + 1}) t(i)
    ) TO '${part}' (${STAGED_PART_OPTIONS})`)
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
  await writer.addPart(part, KEYS)
  await writer.commit({
    table: table.name,
    batchId,
    extractedAt: dayAt(day),
    mode: 'full',
    rowCount: KEYS,
    columns: COLUMNS,
    sourceDescription: 'generated',
  })
}

/** One whole backfill into a new dimension; the seconds of each day's merge. */
async function backfill(staging: LocalStagingStore, db: string): Promise<number[]> {
  for (const f of [db, `${db}.wal`]) rmSync(f, { force: true })
  const warehouse = await DuckDbWarehouse.open({ path: db, memoryLimit: MEMORY_LIMIT })
  const seconds: number[] = []
  try {
    for (let day = 1; day <= DAYS; day++) {
      const { seconds: s, result } = await timed(() =>
        mergeBatch(
          { warehouse, staging },
          { table, schema: 'main', batchId: batchOf(day), now: new Date(dayAt(day)) },
        ),
      )
      const expected = day === 1 ? KEYS : KEYS / 50
      if (result.counts?.insertedVersions !== expected)
        throw new Error(`day ${day}: unexpected merge result ${JSON.stringify(result.counts)}`)
      seconds.push(s)
    }
  } finally {
    await warehouse.close()
  }
  return seconds
}

export async function runBackfillBenchmark(): Promise<Record<string, unknown>> {
  mkdirSync(TMP, { recursive: true })
  const staging = new LocalStagingStore({ root: join(TMP, 'backfill-staging') })
  const db = join(TMP, 'backfill.duckdb')
  console.log(`backfill: staging ${DAYS} snapshots of ${KEYS} keys…`)
  for (let day = 1; day <= DAYS; day++) await stageDay(staging, day)
  const runs: number[][] = []
  for (let r = 0; r < REPEATS; r++) {
    const seconds = await backfill(staging, db)
    runs.push(seconds)
    console.log(
      `backfill run ${r + 1}: 2nd merge ${seconds[1]!.toFixed(3)} s, ${DAYS}th ${seconds.at(-1)!.toFixed(3)} s`,
    )
  }
  for (let day = 1; day <= DAYS; day++) await staging.deleteBatch(table.name, batchOf(day))
  for (const f of [db, `${db}.wal`]) rmSync(f, { force: true })
  const second = median(runs.map((s) => s[1]!))
  const last = median(runs.map((s) => s.at(-1)!))
  const result = {
    keys: KEYS,
    days: DAYS,
    changedShare: 0.02,
    memoryLimit: MEMORY_LIMIT,
    repeats: REPEATS,
    secondMergeSeconds: second,
    lastMergeSeconds: last,
    lastToSecondRatio: last / second,
    targetLastToSecondRatio: 1.2,
    mergeSecondsByDay: runs.map((s) => s.map((x) => Number(x.toFixed(3)))),
  }
  writeResults('backfill', result)
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runBackfillBenchmark(), null, 2))
}
