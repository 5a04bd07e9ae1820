import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

import { parseProject } from '../../../lib/config/index.ts'
import { buildLocalDeps } from '../../../lib/runtime/local-deps.ts'
import { extractPass } from '../../../lib/use-cases/extract-pass.ts'
import { KITS, type DbScratch } from './support/db-kits.ts'

/**
 * Staged parts are written in Parquet 2.0's encodings only where the embedded DuckDB warehouse is their reader
 * (lib/core/staged-parquet.ts): they are less than half the size and cheaper to write. A BigQuery warehouse gets
 * Parquet 1.0's encodings, which every reader decodes. Each source kind, each warehouse: the encodings of the
 * staged parts, and the rows read back from them.
 */
const WAREHOUSES = {
  duckdb: (dir: string) => `{ type: duckdb, path: ${join(dir, 'warehouse.duckdb')} }`,
  bigquery: () => '{ type: bigquery, project: acme-dw, dataset: history, location: EU }',
} as const
const PARQUET_2_ENCODINGS = ['DELTA_BINARY_PACKED', 'DELTA_LENGTH_BYTE_ARRAY', 'BYTE_STREAM_SPLIT']
/** More distinct values than a converter keeps a dictionary for (1,000), so each column shows its plain encoding. */
const ROWS = Array.from({ length: 2500 }, (_, i) => [
  i + 1,
  `name ${i + 1}`,
  i % 2 ? 'South' : 'North',
  i / 4,
])

let dir: string
const scratches = new Map<string, DbScratch>()
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-staged-parquet-'))
  await writeFile(
    join(dir, 'customers.csv'),
    ['id,name,region,score', ...ROWS.map((row) => row.join(','))].join('\n') + '\n',
  )
  for (const { kit, available } of KITS) {
    if (!available) continue
    const db = await kit.create()
    scratches.set(kit.name, db)
    await db.sql(
      `CREATE TABLE ${db.table('customers')} (id BIGINT PRIMARY KEY, name ${kit.ddl.text}, region ${kit.ddl.text}, score DOUBLE PRECISION)`,
    )
    await db.sql(
      `INSERT INTO ${db.table('customers')} VALUES ${ROWS.map((r) => `(${r.map((v) => (typeof v === 'string' ? `'${v}'` : v)).join(', ')})`).join(', ')}`,
    )
    vi.stubEnv(`DIMSYNC_${kit.name.toUpperCase()}_URL`, db.env.DB_URL!)
  }
})
afterAll(async () => {
  vi.unstubAllEnvs()
  await Promise.all([...scratches.values()].map((db) => db.drop()))
  if (dir) await rm(dir, { recursive: true, force: true })
})

const SOURCES = [
  { name: 'file', available: true, source: () => '{ type: file, path: customers.csv }' },
  ...KITS.map(({ kit, available }) => ({
    name: kit.name,
    available,
    source: () =>
      `{ type: ${kit.name}, url_env: DIMSYNC_${kit.name.toUpperCase()}_URL, table: ${scratches.get(kit.name)!.table('customers')} }`,
  })),
]

/** Extracts the table into staging with the CLI's adapters; returns the encodings of each staged column and the rows. */
async function stage(source: string, warehouse: keyof typeof WAREHOUSES) {
  const yaml = `version: 1
warehouse: ${WAREHOUSES[warehouse](dir)}
staging: { type: local, path: ${join(dir, `staging-${warehouse}`)} }
state: { type: local, path: ${join(dir, `state-${warehouse}`)} }
tables:
  - name: customers
    source: ${source}
    key: id
`
  const project = parseProject(yaml, join(dir, 'dimsync.yaml'))
  const deps = await buildLocalDeps(project)
  const table = project.tables[0]!
  const batchId = `b-${warehouse}-${Date.now()}`
  try {
    await extractPass(deps, table, { batchId, extractedAt: new Date('2024-01-01T00:00:00Z') })
    const batch = await deps.staging.openBatch(table.name, batchId)
    const files = batch.partPaths.map((p) => `'${p.replaceAll("'", "''")}'`).join(', ')
    const duck = await DuckDBInstance.create(':memory:')
    const connection = await duck.connect()
    try {
      const encodings = Object.fromEntries(
        (
          await connection.runAndReadAll(
            `SELECT path_in_schema, string_agg(DISTINCT encodings, ',' ORDER BY encodings)
             FROM parquet_metadata([${files}]) GROUP BY 1`,
          )
        ).getRows(),
      ) as Record<string, string>
      const rows = (
        await connection.runAndReadAll(
          `SELECT CAST(id AS INTEGER), name, region, score FROM read_parquet([${files}]) ORDER BY id`,
        )
      ).getRows()
      return { encodings, rows }
    } finally {
      connection.closeSync()
      duck.closeSync()
    }
  } finally {
    await deps.close()
  }
}

describe.each(SOURCES)('parts staged from a $name source', ({ name, available, source }) => {
  it.skipIf(!available)(
    `are written in Parquet 2.0's encodings for the embedded DuckDB warehouse, in 1.0's for BigQuery (${name})`,
    async () => {
      const forDuckDb = await stage(source(), 'duckdb')
      expect(forDuckDb.encodings.id, 'the key').toBe('DELTA_BINARY_PACKED')
      expect(forDuckDb.encodings.name, 'a text').toBe('DELTA_LENGTH_BYTE_ARRAY')
      expect(forDuckDb.rows).toEqual(ROWS)

      const forBigQuery = await stage(source(), 'bigquery')
      const used = Object.values(forBigQuery.encodings).flatMap((e) => e.split(','))
      expect(used.length).toBeGreaterThan(0)
      expect(used.filter((e) => PARQUET_2_ENCODINGS.includes(e))).toEqual([])
      expect(forBigQuery.rows).toEqual(ROWS)
    },
  )
})
