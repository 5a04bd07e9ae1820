/**
 * PostgreSQL warehouse benchmark, on the PostgreSQL server of this machine (BENCH_PG_URL, default
 * postgres://postgres@127.0.0.1:5432/test), a 1,000,000-key customer table (BENCH_KEYS):
 *  - the first load: dimsync's merge of the staged full extract into a new dimension (mergeBatch: the parts read
 *    by DuckDB and copied in, checks, hash, insert, ledger, views) against a hand-written load (the same Parquet
 *    copied in the same way, then one INSERT … SELECT with the same row hash);
 *  - the merge of a full extract with 5% changed, 1% new and 0.5% deleted keys: dimsync's against the hand-written
 *    two statements (copy the batch in, then UPDATE closing changed and deleted keys, comparing the columns
 *    themselves, and INSERT the new versions with their row hash, in one transaction).
 * Each side works in a schema of its own, dropped after. Results: bench/results/postgres-warehouse.json.
 */
import { createReadStream, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { openDuckDbEngine } from '../lib/adapters/duckdb/duckdb-engine.ts'
import { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { CopyIn, PostgresWarehouse } from '../lib/adapters/warehouse/postgres-warehouse.ts'
import type { TableSpec } from '../lib/core/table-spec.ts'
import { POSTGRES_SESSION_SETUP, postgresDialect } from '../lib/sql/postgres/postgres-dialect.ts'
import { renderRowHash } from '../lib/sql/row-hash.ts'
import { mergeBatch } from '../lib/use-cases/merge-batch.ts'
import { tableSpec } from '../test/support/table-spec-builder.ts'
import { BENCH_ROOT, median, STAGED_PART_OPTIONS, timed, TMP } from './support.ts'

const URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const KEYS = Number(process.env.BENCH_KEYS ?? 1_000_000)
const REPEATS = Number(process.env.BENCH_REPEATS ?? 1)
const FIRST_AT = '2024-01-01T00:00:00.000Z'
const MERGE_AT = '2024-02-01T00:00:00.000Z'
const ATTRIBUTES = ['name', 'region', 'segment', 'score', 'city']
const HASHED = ATTRIBUTES.map((name) => ({ name, type: name === 'score' ? 'DOUBLE' : 'VARCHAR' }))
const COLUMNS = [{ name: 'customer_id', type: 'BIGINT' }, ...HASHED]
const table: TableSpec = tableSpec({ deletes: 'invalidate' })

const attributes = (id: string, region: string) =>
  `'name_' || ${id} AS name, ${region} AS region, 'seg_' || (${id} % 13) AS segment, ` +
  `CAST(${id} % 1000 AS DOUBLE) / 10 AS score, 'city_' || (${id} % 101) AS city`

/** Stages a full extract as the CLI does (one zstd Parquet part); answers its batch id and part path. */
async function stage(
  staging: LocalStagingStore,
  batchId: string,
  extractedAt: string,
  select: string,
  rows: number,
): Promise<string> {
  await staging.deleteBatch('customers', batchId).catch(() => undefined)
  const writer = await staging.beginBatch('customers', batchId)
  const part = join(writer.scratchDir, 'extract.parquet')
  const engine = await openDuckDbEngine()
  try {
    await engine.connection.run(`COPY (${select}) TO '${part}' (${STAGED_PART_OPTIONS})`)
  } finally {
    engine.close()
  }
  const staged = await writer.addPart(part, rows)
  await writer.commit({
    table: 'customers',
    batchId,
    extractedAt,
    mode: 'full',
    rowCount: rows,
    columns: COLUMNS,
    sourceDescription: 'generated',
  })
  return join(staging.root, 'customers', batchId, staged.name)
}

async function withClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: URL })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

async function dropSchema(schema: string): Promise<void> {
  await withClient((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
}

async function dimsyncRun(staging: LocalStagingStore, firstId: string, mergeId: string) {
  const schema = 'bench_dimsync'
  await dropSchema(schema)
  const warehouse = await PostgresWarehouse.open({ url: URL })
  try {
    await warehouse.createSchemaIfMissing(schema)
    const merge = (batchId: string, now: string) =>
      timed(() => mergeBatch({ warehouse, staging }, { table, schema, batchId, now: new Date(now) }))
    const first = await merge(firstId, FIRST_AT)
    if (first.result.counts?.insertedVersions !== KEYS)
      throw new Error(`unexpected first load ${JSON.stringify(first.result.counts)}`)
    const second = await merge(mergeId, MERGE_AT)
    if (second.result.counts?.insertedVersions !== KEYS / 20 + KEYS / 100)
      throw new Error(`unexpected merge ${JSON.stringify(second.result.counts)}`)
    return { firstLoad: first.seconds, merge: second.seconds }
  } finally {
    await warehouse.close()
    await dropSchema(schema)
  }
}

/** The Parquet part copied into the temporary table `stg` as a data engineer would: DuckDB writes CSV, COPY reads it. */
async function copyIn(client: pg.Client, partPath: string): Promise<void> {
  const csv = join(TMP, 'pg-bench-stage.csv')
  const engine = await openDuckDbEngine({ anyOrder: true })
  try {
    await engine.connection.run(
      `COPY (SELECT customer_id, name, region, segment, city, printf('%.17g', score) AS score FROM read_parquet('${partPath}')) ` +
        `TO '${csv}' (FORMAT csv, HEADER false, FORCE_QUOTE *)`,
    )
  } finally {
    engine.close()
  }
  await client.query(
    'DROP TABLE IF EXISTS pg_temp.stg; CREATE TEMP TABLE stg (customer_id BIGINT, name TEXT, region TEXT, segment TEXT, city TEXT, score DOUBLE PRECISION)',
  )
  const copy = new CopyIn(
    'COPY stg FROM STDIN (FORMAT csv)',
    createReadStream(csv, { highWaterMark: 1 << 20 }),
  )
  await client.query(copy as never)
  await copy.done
  await client.query('ANALYZE stg')
}

async function handWrittenRun(firstPart: string, mergePart: string) {
  const schema = 'bench_hand'
  await dropSchema(schema)
  const hash = (alias: string) => renderRowHash(postgresDialect, HASHED, alias)
  try {
    return await withClient(async (client) => {
      for (const statement of POSTGRES_SESSION_SETUP) await client.query(statement)
      await client.query(`CREATE SCHEMA "${schema}"`)
      const dim = `"${schema}".dim_customer`
      const first = await timed(async () => {
        await copyIn(client, firstPart)
        await client.query('BEGIN')
        await client.query(`CREATE TABLE ${dim} AS
          SELECT ROW_NUMBER() OVER (ORDER BY s.customer_id) AS dimsync_sk, s.customer_id, s.name, s.region, s.segment,
            s.score, s.city, TIMESTAMPTZ '${FIRST_AT}' AS valid_from, CAST(NULL AS TIMESTAMPTZ) AS valid_to,
            TRUE AS is_current, FALSE AS is_deleted, ${hash('s')} AS dimsync_row_hash, 'b1' AS dimsync_batch_id
          FROM stg s`)
        await client.query(`CREATE INDEX ON ${dim} (customer_id) WHERE is_current`)
        await client.query('COMMIT')
      })
      await client.query(`ANALYZE ${dim}`)
      const merge = await timed(async () => {
        await copyIn(client, mergePart)
        await client.query('BEGIN')
        // The columns compared as they are (no hash of the batch): the cheapest close a data engineer writes.
        await client.query(`UPDATE ${dim} AS d SET valid_to = TIMESTAMPTZ '${MERGE_AT}', is_current = FALSE
          WHERE d.is_current AND NOT EXISTS (
            SELECT 1 FROM stg s WHERE s.customer_id = d.customer_id
              AND (s.name, s.region, s.segment, s.score, s.city) IS NOT DISTINCT FROM (d.name, d.region, d.segment, d.score, d.city))`)
        await client.query(`INSERT INTO ${dim}
          SELECT (SELECT MAX(dimsync_sk) FROM ${dim}) + ROW_NUMBER() OVER (ORDER BY s.customer_id),
            s.customer_id, s.name, s.region, s.segment, s.score, s.city, TIMESTAMPTZ '${MERGE_AT}', NULL, TRUE, FALSE,
            ${hash('s')}, 'b2'
          FROM stg s WHERE NOT EXISTS (SELECT 1 FROM ${dim} d WHERE d.is_current AND d.customer_id = s.customer_id)`)
        await client.query('COMMIT')
      })
      return { firstLoad: first.seconds, merge: merge.seconds }
    })
  } finally {
    await dropSchema(schema)
  }
}

mkdirSync(TMP, { recursive: true })
const staging = new LocalStagingStore({ root: join(TMP, 'pg-staging') })
console.log(`postgres warehouse: staging ${KEYS} keys and the 5%-changed extract…`)
const firstId = 'pg-bench-first'
const mergeId = 'pg-bench-merge'
const firstPart = await stage(
  staging,
  firstId,
  FIRST_AT,
  `SELECT k.customer_id, ${attributes('k.customer_id', "'region_' || (k.customer_id % 7)")} FROM range(1, ${KEYS + 1}) k(customer_id)`,
  KEYS,
)
const mergePart = await stage(
  staging,
  mergeId,
  MERGE_AT,
  `SELECT k.customer_id, ${attributes('k.customer_id', "CASE WHEN k.customer_id % 20 = 0 THEN 'moved_' || k.customer_id ELSE 'region_' || (k.customer_id % 7) END")}
   FROM range(1, ${KEYS + 1}) k(customer_id) WHERE k.customer_id % 200 <> 7
   UNION ALL
   SELECT k.customer_id, ${attributes('k.customer_id', "'region_' || (k.customer_id % 7)")} FROM range(${KEYS + 1}, ${KEYS + 1 + KEYS / 100}) k(customer_id)`,
  KEYS - KEYS / 200 + KEYS / 100,
)
const dimsync: { firstLoad: number; merge: number }[] = []
const hand: { firstLoad: number; merge: number }[] = []
for (let i = 0; i < REPEATS; i++) {
  hand.push(await handWrittenRun(firstPart, mergePart))
  dimsync.push(await dimsyncRun(staging, firstId, mergeId))
  console.log(
    `postgres warehouse: run ${i + 1}: dimsync ${JSON.stringify(dimsync.at(-1))}, hand-written ${JSON.stringify(hand.at(-1))}`,
  )
}
await staging.deleteBatch('customers', firstId)
await staging.deleteBatch('customers', mergeId)
const of = (runs: typeof dimsync, key: 'firstLoad' | 'merge') => median(runs.map((r) => r[key]))
const result = {
  keys: KEYS,
  batch: { changed: KEYS / 20, new: KEYS / 100, deleted: KEYS / 200 },
  repeats: REPEATS,
  server: await withClient(
    async (c) => (await c.query('SHOW server_version')).rows[0].server_version as string,
  ),
  dimsyncFirstLoadSeconds: of(dimsync, 'firstLoad'),
  handWrittenFirstLoadSeconds: of(hand, 'firstLoad'),
  firstLoadRatio: of(dimsync, 'firstLoad') / of(hand, 'firstLoad'),
  dimsyncMergeSeconds: of(dimsync, 'merge'),
  handWrittenMergeSeconds: of(hand, 'merge'),
  mergeRatio: of(dimsync, 'merge') / of(hand, 'merge'),
}
writeFileSync(join(BENCH_ROOT, 'results', 'postgres-warehouse.json'), `${JSON.stringify(result, null, 2)}\n`)
console.log(result)
