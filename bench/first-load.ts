/**
 * First-load benchmark: a staged full extract of 1,000,000 (and 10,000,000) keys, 6 columns, merged into an empty
 * dimension by dimsync (mergeBatch: checksum verify, load, checks, the merge, ledger, views) against the
 * hand-written `CREATE TABLE AS SELECT row_number() OVER (ORDER BY key), *, md5(…), metadata…` a data engineer
 * would write, on the same DuckDB with the CLI's memory limit (DEFAULT_WAREHOUSE_MEMORY_LIMIT), interleaved,
 * median of 3; and against the same CTAS with the keys numbered apart and joined back (dimsync's own shape).
 * Both produce the same rows: the benchmark compares them (surrogate keys, hash, windows) after the first repeat.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { DuckDbWarehouse } from '../lib/adapters/warehouse/duckdb-warehouse.ts'
import { DEFAULT_WAREHOUSE_MEMORY_LIMIT } from '../lib/runtime/local-deps.ts'
import { duckDbDialect } from '../lib/sql/duckdb/duckdb-dialect.ts'
import { renderRowHash } from '../lib/sql/row-hash.ts'
import { mergeBatch } from '../lib/use-cases/merge-batch.ts'
import { tableSpec } from '../test/support/table-spec-builder.ts'
import { median, STAGED_PART_OPTIONS, timed, TMP, writeResults } from './support.ts'

const SIZES = (process.env.BENCH_FIRST_LOAD_KEYS ?? '1000000,10000000').split(',').map(Number)
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3)
const MEMORY_LIMIT = process.env.DIMSYNC_DUCKDB_MEMORY_LIMIT ?? DEFAULT_WAREHOUSE_MEMORY_LIMIT
const EXTRACTED_AT = '2024-01-01T00:00:00.000Z'
const BATCH_ID = 'first-load'
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'segment', type: 'VARCHAR' },
  { name: 'score', type: 'DOUBLE' },
  { name: 'city', type: 'VARCHAR' },
]
const table = tableSpec({ deletes: 'invalidate' })

async function withDuckDb<T>(
  path: string,
  work: (run: (sql: string) => Promise<void>) => Promise<T>,
  memoryLimit = MEMORY_LIMIT,
): Promise<T> {
  const instance = await DuckDBInstance.create(path, { memory_limit: memoryLimit })
  const connection = await instance.connect()
  try {
    await connection.run(`SET TimeZone = 'UTC'`)
    return await work(async (sql) => void (await connection.run(sql)))
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

/** A full extract of `keys` rows as one staged batch (rows in no particular key order, as a source gives them). */
export async function stageFirstLoad(staging: LocalStagingStore, keys: number): Promise<string[]> {
  await staging.deleteBatch(table.name, BATCH_ID).catch(() => undefined)
  const writer = await staging.beginBatch(table.name, BATCH_ID)
  const part = join(writer.scratchDir, 'extract.parquet')
  await withDuckDb(
    ':memory:',
    async (run) => {
      await run(`COPY (
      SELECT id AS customer_id, 'name_' || id AS name, 'region_' || (id % 7) AS region, 'seg_' || (id % 13) AS segment,
        CAST(id % 1000 AS DOUBLE) / 10 AS score, CASE WHEN id % 11 = 0 THEN NULL ELSE 'city_' || (id % 101) END AS city
      FROM (SELECT (i * 7919) % ${keys} + 1 AS id FROM range(0, ${keys}) t(i))
    ) TO '${part}' (${STAGED_PART_OPTIONS})`)
      // Not measured: generating 10M shuffled rows in one ordered file needs more than the loads are given.
    },
    '2GB',
  )
  const staged = await writer.addPart(part, keys)
  await writer.commit({
    table: table.name,
    batchId: BATCH_ID,
    extractedAt: EXTRACTED_AT,
    mode: 'full',
    rowCount: keys,
    columns: COLUMNS,
    sourceDescription: 'generated',
  })
  return [join(staging.root, table.name, BATCH_ID, staged.name)]
}

function fresh(path: string): string {
  for (const f of [path, `${path}.wal`]) rmSync(f, { force: true })
  return path
}

/**
 * Both loads are timed until their database is closed: dimsync's session folds its commit into the file when it
 * closes (a copy, then a checkpoint: duckdb-checkpoint-backup.ts), where DuckDB on its own may checkpoint at COMMIT.
 */
async function dimsyncFirstLoad(db: string, staging: LocalStagingStore, keys: number): Promise<number> {
  const { seconds } = await timed(async () => {
    const warehouse = await DuckDbWarehouse.open({ path: fresh(db), memoryLimit: MEMORY_LIMIT })
    try {
      const result = await mergeBatch(
        { warehouse, staging },
        { table, schema: 'main', batchId: BATCH_ID, now: new Date() },
      )
      if (result.counts?.insertedVersions !== keys)
        throw new Error(`unexpected merge result ${JSON.stringify(result.counts)}`)
    } finally {
      await warehouse.close()
    }
  })
  return seconds
}

/**
 * The first load a data engineer would write by hand: one CREATE TABLE AS SELECT of the staged parts with dimsync's
 * surrogate keys (in key order), row hash and metadata columns. Also the floor bench/sources.ts measures. With
 * `numbering: 'keys-apart'`, the keys are numbered by a window over the key column alone and joined back, as
 * dimsync's first load does (render-first-load.ts): the same rows, for the ratio against a hand-written load that
 * knows the trick.
 */
export function handWrittenFirstLoadSql(
  target: string,
  partPaths: readonly string[],
  key: string,
  columns: readonly { readonly name: string; readonly type: string }[],
  numbering: 'window' | 'keys-apart' = 'window',
): string {
  const hash = renderRowHash(
    duckDbDialect,
    columns.filter((c) => c.name !== key),
    's',
  )
  const files = `read_parquet([${partPaths.map((p) => duckDbDialect.stringLiteral(p)).join(', ')}])`
  const numbered =
    numbering === 'window'
      ? { key: `ROW_NUMBER() OVER (ORDER BY s.${key})`, join: '' }
      : {
          key: 'n.sk',
          join: ` JOIN (SELECT ${key}, ROW_NUMBER() OVER (ORDER BY ${key}) AS sk FROM ${files}) n ON n.${key} = s.${key}`,
        }
  return `CREATE TABLE ${target} AS
    SELECT ${numbered.key} AS dimsync_sk, s.*, TIMESTAMPTZ '${EXTRACTED_AT}' AS valid_from,
      CAST(NULL AS TIMESTAMPTZ) AS valid_to, TRUE AS is_current, FALSE AS is_deleted, ${hash} AS dimsync_row_hash,
      '${BATCH_ID}' AS dimsync_batch_id
    FROM ${files} s${numbered.join}`
}

async function handWrittenFirstLoad(
  db: string,
  partPaths: readonly string[],
  numbering: 'window' | 'keys-apart',
): Promise<number> {
  const sql = handWrittenFirstLoadSql('main.dim_customer', partPaths, 'customer_id', COLUMNS, numbering)
  const { seconds } = await timed(() => withDuckDb(fresh(db), (run) => run(sql)))
  return seconds
}

/** Both loads hold the same rows: same surrogate key per key, same hash, same window and flags. */
async function assertSameRows(dimsyncDb: string, handDb: string): Promise<void> {
  await withDuckDb(
    ':memory:',
    async (run) => {
      await run(`ATTACH '${dimsyncDb}' AS a (READ_ONLY)`)
      await run(`ATTACH '${handDb}' AS b (READ_ONLY)`)
      const columns =
        'dimsync_sk, customer_id, name, region, segment, score, city, valid_from, valid_to, is_current, is_deleted, dimsync_row_hash'
      await run(`CREATE TEMP TABLE diff AS
      (SELECT ${columns} FROM a.main.dim_customer EXCEPT ALL SELECT ${columns} FROM b.main.dim_customer)
      UNION ALL (SELECT ${columns} FROM b.main.dim_customer EXCEPT ALL SELECT ${columns} FROM a.main.dim_customer)`)
      await run(`SELECT CASE WHEN (SELECT COUNT(*) FROM diff) > 0 THEN error('first loads differ') END`)
      // Not measured: comparing 10M rows needs more memory than the loads are given.
    },
    '2GB',
  )
}

export async function runFirstLoadBenchmark(): Promise<Record<string, unknown>> {
  mkdirSync(TMP, { recursive: true })
  const staging = new LocalStagingStore({ root: join(TMP, 'first-load-staging') })
  const dimsyncDb = join(TMP, 'first-load-dimsync.duckdb')
  const handDb = join(TMP, 'first-load-hand.duckdb')
  const runs: Record<string, unknown>[] = []
  for (const keys of SIZES) {
    console.log(`first load: staging ${keys} keys…`)
    const partPaths = await stageFirstLoad(staging, keys)
    const dimsync: number[] = []
    const hand: number[] = []
    const handKeysApart: number[] = []
    for (let i = 0; i < REPEATS; i++) {
      hand.push(await handWrittenFirstLoad(handDb, partPaths, 'window'))
      dimsync.push(await dimsyncFirstLoad(dimsyncDb, staging, keys))
      if (i === 0) await assertSameRows(dimsyncDb, handDb)
      handKeysApart.push(await handWrittenFirstLoad(handDb, partPaths, 'keys-apart'))
      if (i === 0) await assertSameRows(dimsyncDb, handDb)
      console.log(
        `first load ${keys}: run ${i + 1}: dimsync ${dimsync.at(-1)!.toFixed(3)} s, hand-written ${hand.at(-1)!.toFixed(3)} s, ` +
          `hand-written with the keys numbered apart ${handKeysApart.at(-1)!.toFixed(3)} s`,
      )
    }
    runs.push({
      keys,
      dimsyncSeconds: median(dimsync),
      handWrittenSeconds: median(hand),
      ratioToHandWritten: median(dimsync) / median(hand),
      handWrittenKeysApartSeconds: median(handKeysApart),
      ratioToHandWrittenKeysApart: median(dimsync) / median(handKeysApart),
      dimsyncRuns: dimsync,
      handWrittenRuns: hand,
      handWrittenKeysApartRuns: handKeysApart,
    })
  }
  for (const f of [dimsyncDb, handDb]) for (const g of [f, `${f}.wal`]) if (existsSync(g)) rmSync(g)
  await staging.deleteBatch(table.name, BATCH_ID)
  const result = { memoryLimit: MEMORY_LIMIT, repeats: REPEATS, runs, targetRatioToHandWritten: 1.3 }
  writeResults('firstLoad', result)
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runFirstLoadBenchmark(), null, 2))
}
