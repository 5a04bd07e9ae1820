/**
 * Merge benchmark: a 1,000,000-key dimension and a full extract with 5% changed, 1% new and 0.5%
 * deleted keys, on the same DuckDB in the same run:
 *  - dimsync's merge (mergeBatch: load staged Parquet, checks, diff, close, insert, ledger, views) against the
 *    hand-written two-statement SQL (load the same Parquet, UPDATE then INSERT in one transaction);
 *  - the same batch against a dimension with 10 versions per key vs 1 (cost must not grow with history depth).
 */
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { DuckDbWarehouse } from '../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { TableSpec } from '../lib/core/table-spec.ts'
import { tableSpec } from '../test/support/table-spec-builder.ts'
import { duckDbDialect } from '../lib/sql/duckdb/duckdb-dialect.ts'
import { renderRowHash } from '../lib/sql/row-hash.ts'
import { mergeBatch } from '../lib/use-cases/merge-batch.ts'
import { median, STAGED_PART_OPTIONS, timed, TMP, writeResults } from './support.ts'

const KEYS = Number(process.env.BENCH_KEYS ?? 1_000_000)
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3)
const EXTRACTED_AT = '2024-01-01T00:00:00.000Z'
const ATTRIBUTES = ['name', 'region', 'segment', 'score', 'city']
/** The tracked columns with their staged types: the row hash renders each type canonically. */
const HASHED = ATTRIBUTES.map((name) => ({ name, type: name === 'score' ? 'DOUBLE' : 'VARCHAR' }))

export const benchTable: TableSpec = tableSpec({ deletes: 'invalidate' })

const currentAttributes = (id: string) =>
  `'name_' || ${id} AS name, 'region_' || (${id} % 7) AS region, 'seg_' || (${id} % 13) AS segment, ` +
  `CAST(${id} % 1000 AS DOUBLE) / 10 AS score, 'city_' || (${id} % 101) AS city`

async function withDuckDb<T>(
  path: string,
  work: (run: (sql: string) => Promise<void>) => Promise<T>,
): Promise<T> {
  const instance = await DuckDBInstance.create(path)
  const connection = await instance.connect()
  try {
    await connection.run(`SET TimeZone = 'UTC'`)
    return await work(async (sql) => void (await connection.run(sql)))
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

/**
 * A dimension in dimsync's layout with `depth` versions per key (the last one current), hashed as dimsync does.
 * `append`: rows in the order successive merges write them (oldest versions first, current ones last), as a real
 * dimension grows. `key`: every key's versions side by side, current rows interleaved with closed ones: the worst
 * case for skipping closed history.
 */
async function buildDimension(
  path: string,
  depth: number,
  order: 'append' | 'key' = 'append',
): Promise<void> {
  rmSync(path, { force: true })
  const hash = renderRowHash(duckDbDialect, HASHED)
  await withDuckDb(path, async (run) => {
    await run(`
      CREATE TABLE main.dim_customer AS
      SELECT ROW_NUMBER() OVER (ORDER BY customer_id, version) AS dimsync_sk, customer_id, name, region, segment, score, city,
        valid_from, valid_to, is_current, FALSE AS is_deleted, ${hash} AS dimsync_row_hash, 'base' AS dimsync_batch_id
      FROM (
        SELECT k.customer_id, v.version, ${currentAttributes('k.customer_id').replace(
          `'region_' || (k.customer_id % 7) AS region`,
          `CASE WHEN v.version = ${depth - 1} THEN 'region_' || (k.customer_id % 7) ELSE 'old_' || v.version END AS region`,
        )},
          TIMESTAMPTZ '2020-01-01 00:00:00+00' + TO_DAYS(CAST(v.version AS INTEGER)) AS valid_from,
          CASE WHEN v.version = ${depth - 1} THEN NULL ELSE TIMESTAMPTZ '2020-01-01 00:00:00+00' + TO_DAYS(CAST(v.version + 1 AS INTEGER)) END AS valid_to,
          v.version = ${depth - 1} AS is_current
        FROM range(1, ${KEYS + 1}) k(customer_id), range(0, ${depth}) v(version)
      )
      ${order === 'append' ? 'ORDER BY version, customer_id' : 'ORDER BY customer_id, version'}`)
    await run('CHECKPOINT')
  })
}

/** The full extract: 0.5% of keys absent, 5% changed, 1% new. */
async function stageBatch(staging: LocalStagingStore): Promise<{ batchId: string; partPath: string }> {
  return stageSnapshot(
    staging,
    'bench-batch',
    EXTRACTED_AT,
    `SELECT customer_id, name, CASE WHEN customer_id % 20 = 0 THEN 'moved_' || customer_id ELSE region END AS region, segment, score, city
      FROM (SELECT k.customer_id, ${currentAttributes('k.customer_id')} FROM range(1, ${KEYS + 1}) k(customer_id))
      WHERE customer_id % 200 <> 7
      UNION ALL
      SELECT k.customer_id, ${currentAttributes('k.customer_id')} FROM range(${KEYS + 1}, ${KEYS + 1 + KEYS / 100}) k(customer_id)`,
    KEYS - KEYS / 200 + KEYS / 100,
  )
}

async function stageSnapshot(
  staging: LocalStagingStore,
  batchId: string,
  extractedAt: string,
  query: string,
  rows: number,
): Promise<{ batchId: string; partPath: string }> {
  await staging.deleteBatch('customers', batchId).catch(() => undefined)
  const writer = await staging.beginBatch('customers', batchId)
  const part = join(writer.scratchDir, 'extract.parquet')
  await withDuckDb(':memory:', async (run) => {
    await run(`COPY (${query}) TO '${part}' (${STAGED_PART_OPTIONS})`)
  })
  const staged = await writer.addPart(part, rows)
  await writer.commit({
    table: 'customers',
    batchId,
    extractedAt,
    mode: 'full',
    rowCount: rows,
    columns: [{ name: 'customer_id', type: 'BIGINT' }, ...HASHED],
    sourceDescription: 'generated',
  })
  return { batchId, partPath: join(staging.root, 'customers', batchId, staged.name) }
}

/**
 * Brings the dimensions built by SQL to the state dimsync leaves a dimension in: merges a snapshot of their current
 * versions (no change) once, which records the table's contract in the batch ledger. Without it every measured merge
 * would be the first on a dimension built before contracts were recorded, and would rehash every current version
 * once more (contract-check.ts), a one-time upgrade step, not a merge's cost.
 */
async function recordContract(staging: LocalStagingStore, bases: readonly string[]): Promise<void> {
  const { batchId } = await stageSnapshot(
    staging,
    'unchanged',
    '2023-12-31T00:00:00.000Z',
    `SELECT k.customer_id, ${currentAttributes('k.customer_id')} FROM range(1, ${KEYS + 1}) k(customer_id)`,
    KEYS,
  )
  for (const base of bases) {
    const warehouse = await DuckDbWarehouse.open({ path: base })
    try {
      const result = await mergeBatch(
        { warehouse, staging },
        { table: benchTable, schema: 'main', batchId, now: new Date() },
      )
      if (result.counts?.insertedVersions !== 0)
        throw new Error(`the unchanged snapshot changed ${base}: ${JSON.stringify(result.counts)}`)
      await warehouse.query('CHECKPOINT')
    } finally {
      await warehouse.close()
    }
  }
  await staging.deleteBatch('customers', batchId)
}

/** A merge's time and the time its session then takes to close the file (fold its log in: a checkpoint). */
interface MergeTimes {
  readonly seconds: number
  readonly closeSeconds: number
}

async function dimsyncMerge(db: string, staging: LocalStagingStore, batchId: string): Promise<MergeTimes> {
  const warehouse = await DuckDbWarehouse.open({ path: db })
  let seconds: number
  try {
    const merged = await timed(() =>
      mergeBatch({ warehouse, staging }, { table: benchTable, schema: 'main', batchId, now: new Date() }),
    )
    if (merged.result.counts?.insertedVersions !== KEYS / 20 + KEYS / 100)
      throw new Error(`unexpected merge result ${JSON.stringify(merged.result.counts)}`)
    seconds = merged.seconds
  } catch (error) {
    await warehouse.close()
    throw error
  }
  // dimsync's close copies the file, then checkpoints (duckdb-checkpoint-backup.ts).
  const closed = await timed(() => warehouse.close())
  return { seconds, closeSeconds: closed.seconds }
}

/** The baseline a data engineer would hand-write: UPDATE (close changed and deleted) then INSERT, one transaction. */
async function handWrittenMerge(db: string, partPath: string): Promise<MergeTimes> {
  const hash = (alias: string) => renderRowHash(duckDbDialect, HASHED, alias)
  const instance = await DuckDBInstance.create(db)
  const connection = await instance.connect()
  const run = async (sql: string) => void (await connection.run(sql))
  let seconds: number
  try {
    await run(`SET TimeZone = 'UTC'`)
    seconds = (
      await timed(async () => {
        await run(`CREATE TEMP TABLE stg AS SELECT * FROM read_parquet('${partPath}')`)
        await run('BEGIN TRANSACTION')
        await run(`UPDATE main.dim_customer AS d SET valid_to = TIMESTAMPTZ '${EXTRACTED_AT}', is_current = FALSE
        WHERE d.is_current AND NOT EXISTS (
          SELECT 1 FROM stg s WHERE s.customer_id = d.customer_id AND ${hash('s')} = d.dimsync_row_hash)`)
        await run(`INSERT INTO main.dim_customer
        SELECT (SELECT MAX(dimsync_sk) FROM main.dim_customer) + ROW_NUMBER() OVER (ORDER BY s.customer_id),
          s.customer_id, s.name, s.region, s.segment, s.score, s.city, TIMESTAMPTZ '${EXTRACTED_AT}', NULL, TRUE, FALSE, ${hash('s')}, 'b'
        FROM stg s WHERE NOT EXISTS (SELECT 1 FROM main.dim_customer d WHERE d.is_current AND d.customer_id = s.customer_id)`)
        await run('COMMIT')
      })
    ).seconds
  } catch (error) {
    connection.closeSync()
    instance.closeSync()
    throw error
  }
  // DuckDB's own close: its checkpoint in place.
  const closed = await timed(async () => {
    connection.closeSync()
    instance.closeSync()
  })
  return { seconds, closeSeconds: closed.seconds }
}

/** Builds the two dimensions and stages the batch (also used by bench/profile-merge.ts). */
export async function prepareMergeBenchmark() {
  mkdirSync(TMP, { recursive: true })
  const staging = new LocalStagingStore({ root: join(TMP, 'merge-staging') })
  const base1 = join(TMP, 'base-depth1.duckdb')
  const base10 = join(TMP, 'base-depth10.duckdb')
  console.log(`merge: building dimensions of ${KEYS} keys (depth 1 and 10)…`)
  await buildDimension(base1, 1)
  await buildDimension(base10, 10)
  const base10Interleaved = join(TMP, 'base-depth10-interleaved.duckdb')
  await buildDimension(base10Interleaved, 10, 'key')
  await recordContract(staging, [base1, base10, base10Interleaved])
  const { batchId, partPath } = await stageBatch(staging)
  return { staging, base1, base10, base10Interleaved, batchId, partPath }
}

export async function runMergeBenchmark(): Promise<Record<string, unknown>> {
  const { staging, base1, base10, base10Interleaved, batchId, partPath } = await prepareMergeBenchmark()
  const work = join(TMP, 'work.duckdb')
  const fresh = (base: string) => {
    rmSync(`${work}.wal`, { force: true })
    copyFileSync(base, work)
    return work
  }
  const dimsync1: MergeTimes[] = []
  const baseline1: MergeTimes[] = []
  const dimsync10: MergeTimes[] = []
  const baseline10: MergeTimes[] = []
  const dimsync10i: MergeTimes[] = []
  const baseline10i: MergeTimes[] = []
  for (let i = 0; i < REPEATS; i++) {
    baseline1.push(await handWrittenMerge(fresh(base1), partPath))
    dimsync1.push(await dimsyncMerge(fresh(base1), staging, batchId))
    dimsync10.push(await dimsyncMerge(fresh(base10), staging, batchId))
    baseline10.push(await handWrittenMerge(fresh(base10), partPath))
    dimsync10i.push(await dimsyncMerge(fresh(base10Interleaved), staging, batchId))
    baseline10i.push(await handWrittenMerge(fresh(base10Interleaved), partPath))
    console.log(
      `merge: run ${i + 1}: dimsync ${dimsync1.at(-1)!.seconds.toFixed(3)} s (close ${dimsync1.at(-1)!.closeSeconds.toFixed(3)} s), ` +
        `hand-written ${baseline1.at(-1)!.seconds.toFixed(3)} s (close ${baseline1.at(-1)!.closeSeconds.toFixed(3)} s), ` +
        `dimsync depth 10 ${dimsync10.at(-1)!.seconds.toFixed(3)} s (close ${dimsync10.at(-1)!.closeSeconds.toFixed(3)} s), ` +
        `hand-written depth 10 ${baseline10.at(-1)!.seconds.toFixed(3)} s (close ${baseline10.at(-1)!.closeSeconds.toFixed(3)} s)`,
    )
  }
  const databaseFileMb = Math.round(statSync(base1).size / 2 ** 20)
  const databaseFileDepth10Mb = Math.round(statSync(base10).size / 2 ** 20)
  // A merge's time runs until its database is closed: DuckDB alone checkpoints at COMMIT when the log grows long,
  // dimsync when it closes the file (after copying it: duckdb-checkpoint-backup.ts).
  const merges = (times: readonly MergeTimes[]) => median(times.map((t) => t.seconds + t.closeSeconds))
  const closes = (times: readonly MergeTimes[]) => median(times.map((t) => t.closeSeconds))
  // History depth is the merge statements' concern; closing copies the whole file, whatever its depth.
  const statements = (times: readonly MergeTimes[]) => median(times.map((t) => t.seconds))
  for (const f of [work, `${work}.wal`, base1, base10, base10Interleaved]) if (existsSync(f)) rmSync(f)
  await staging.deleteBatch('customers', batchId)
  const result = {
    keys: KEYS,
    batch: { changed: KEYS / 20, new: KEYS / 100, deleted: KEYS / 200 },
    repeats: REPEATS,
    dimsyncSeconds: merges(dimsync1),
    handWrittenSeconds: merges(baseline1),
    ratioToHandWritten: merges(dimsync1) / merges(baseline1),
    targetRatioToHandWritten: 1.3,
    dimsyncDepth10Seconds: merges(dimsync10),
    handWrittenDepth10Seconds: merges(baseline10),
    dimsyncStatementsSeconds: statements(dimsync1),
    dimsyncDepth10StatementsSeconds: statements(dimsync10),
    depthRatio: statements(dimsync10) / statements(dimsync1),
    targetDepthRatio: 1.2,
    dimsyncDepth10InterleavedSeconds: merges(dimsync10i),
    handWrittenDepth10InterleavedSeconds: merges(baseline10i),
    depthRatioInterleaved: merges(dimsync10i) / merges(dimsync1),
    handWrittenDepthRatioInterleaved: merges(baseline10i) / merges(baseline1),
    // Of which closing the file: dimsync copies it, then checkpoints; DuckDB alone has checkpointed at COMMIT.
    dimsyncCloseSeconds: closes(dimsync1),
    handWrittenCloseSeconds: closes(baseline1),
    dimsyncDepth10CloseSeconds: closes(dimsync10),
    handWrittenDepth10CloseSeconds: closes(baseline10),
    databaseFileDepth10Mb,
    databaseFileMb,
    peakRssMbOfBenchProcess: process.resourceUsage().maxRSS / 1024,
  }
  writeResults('merge', result)
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await runMergeBenchmark())
}
