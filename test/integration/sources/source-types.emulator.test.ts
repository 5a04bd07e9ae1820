import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { parseProject } from '../../../lib/config/index.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../../lib/sql/dialect.ts'
import { BIGQUERY_ENDPOINT_VARIABLE, buildLocalDeps } from '../../../lib/runtime/local-deps.ts'
import { openSource } from '../../../lib/runtime/open-source.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { BigQueryEmulator } from '../../support/bigquery-emulator/bigquery-emulator.ts'
import { postgresKit, type DbScratch } from './support/db-kits.ts'

/**
 * Source types through the whole pipeline, PostgreSQL → staged Parquet → DuckDB and BigQuery: a `uuid` key and
 * column (UUID in DuckDB, STRING in BigQuery) and an `interval` (its exact ISO 8601 text). A changed UUID and a
 * changed interval each open a version on both warehouses, with the same values and the same row hashes.
 */
const available = await postgresKit.reachable()

describe.skipIf(!available)('PostgreSQL uuid and interval columns into DuckDB and BigQuery', () => {
  let db: DbScratch
  let dir: string
  let emulator: BigQueryEmulator
  const KEY = '0b6d1a52-3c55-4f2e-9f8a-2a1d5e0c7b01'

  beforeAll(async () => {
    db = await postgresKit.create()
    dir = await mkdtemp(join(tmpdir(), 'dimsync-source-types-'))
    emulator = await BigQueryEmulator.start()
    emulator.createDataset('acme-dw', 'history', { location: 'EU' })
    await db.sql(
      `CREATE TABLE ${db.table('accounts')} (id uuid PRIMARY KEY, owner uuid, term interval, name text)`,
    )
    await db.sql(
      `INSERT INTO ${db.table('accounts')} VALUES ('${KEY}', 'f3a1c2d4-0000-4000-8000-000000000001', '1 year 2 mons 3 days 04:05:06.000007', 'Ana'),
       ('0b6d1a52-3c55-4f2e-9f8a-2a1d5e0c7b02', NULL, NULL, 'Bruno')`,
    )
  })
  afterAll(async () => {
    await emulator?.stop()
    await db?.drop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  const runOn = (warehouse: 'duckdb' | 'bigquery', at: string) =>
    runPostgresTable({ db, dir, emulator }, warehouse, 'accounts', at, (d) => {
      const text = (c: string) => `${d.castToString(d.quoteIdentifier(c))} AS ${d.quoteIdentifier(c)}`
      return [...['id', 'owner', 'term', 'name', 'dimsync_row_hash'].map(text), 'is_current']
    }).then((rows) =>
      rows.sort((a, b) =>
        `${a.id}${a.is_current}${a.dimsync_row_hash}`.localeCompare(
          `${b.id}${b.is_current}${b.dimsync_row_hash}`,
        ),
      ),
    )

  it('a changed uuid and a changed interval open versions; both warehouses hold the same values and hashes', async () => {
    for (const w of ['duckdb', 'bigquery'] as const) await runOn(w, '2024-01-01T00:00:00Z')
    await db.sql(
      `UPDATE ${db.table('accounts')} SET owner = 'f3a1c2d4-0000-4000-8000-000000000002' WHERE id = '${KEY}'`,
    )
    for (const w of ['duckdb', 'bigquery'] as const) await runOn(w, '2024-02-01T00:00:00Z')
    await db.sql(
      `UPDATE ${db.table('accounts')} SET term = '1 year 2 mons 3 days 04:05:06.000008' WHERE id = '${KEY}'`,
    )
    const duckdb = await runOn('duckdb', '2024-03-01T00:00:00Z')
    const bigquery = await runOn('bigquery', '2024-03-01T00:00:00Z')
    const versions = (rows: Record<string, unknown>[]) =>
      rows
        .filter((r) => r.id === KEY)
        .map((r) => [r.owner, r.term, r.is_current])
        .sort((a, b) => String(a).localeCompare(String(b)))
    expect(versions(duckdb)).toEqual([
      ['f3a1c2d4-0000-4000-8000-000000000001', 'P1Y2M3DT4H5M6.000007S', false],
      ['f3a1c2d4-0000-4000-8000-000000000002', 'P1Y2M3DT4H5M6.000007S', false],
      ['f3a1c2d4-0000-4000-8000-000000000002', 'P1Y2M3DT4H5M6.000008S', true],
    ])
    expect(bigquery).toEqual(duckdb)
  })
})

/**
 * PostgreSQL `json`, `jsonb`, `int[]` and `text[]` through the whole pipeline into DuckDB and BigQuery (JSON and
 * ARRAY columns there). JSON is staged as its canonical text (keys sorted, no spaces: BigQuery's text of it), so a
 * `json` value rewritten with its keys reordered is no change, while a changed value, a changed array element
 * and a reordered array each open a version, on both warehouses with the same values and row hashes.
 */
describe.skipIf(!available)('PostgreSQL json, jsonb and arrays into DuckDB and BigQuery', () => {
  let db: DbScratch
  let dir: string
  let emulator: BigQueryEmulator
  const COLUMNS = { id: 'INTEGER', doc: 'JSON', docb: 'JSON', ints: 'INTEGER[]', texts: 'VARCHAR[]' }

  beforeAll(async () => {
    db = await postgresKit.create()
    dir = await mkdtemp(join(tmpdir(), 'dimsync-source-json-'))
    emulator = await BigQueryEmulator.start()
    emulator.createDataset('acme-dw', 'history', { location: 'EU' })
    await db.sql(
      `CREATE TABLE ${db.table('profiles')} (id int PRIMARY KEY, doc json, docb jsonb, ints int[], texts text[])`,
    )
    await db.sql(
      `INSERT INTO ${db.table('profiles')} VALUES
       (1, '{"b": 1,  "a": [1, 2.50, "x"]}', '{"name": "Ana", "tags": {"z": 1, "y": 2}}', '{1,2,3}', '{vip,"a, b",NULL?}'),
       (2, NULL, '[]', '{}', NULL)`.replace('NULL?', "it''s"),
    )
  })
  afterAll(async () => {
    await emulator?.stop()
    await db?.drop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  // JSON and arrays have no CAST to text on BigQuery: their canonical text (the row hash's) on both.
  const runOn = (warehouse: 'duckdb' | 'bigquery', at: string) =>
    runPostgresTable({ db, dir, emulator }, warehouse, 'profiles', at, (d) => [
      ...Object.entries({ ...COLUMNS, dimsync_row_hash: 'VARCHAR' }).map(
        ([c, type]) => `${d.canonicalText(d.quoteIdentifier(c), type)} AS ${d.quoteIdentifier(c)}`,
      ),
      'is_current',
    ]).then((rows) => rows.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))))

  it('reordered json keys are no change; a changed value, array element or array order opens a version', async () => {
    for (const w of ['duckdb', 'bigquery'] as const) await runOn(w, '2024-01-01T00:00:00Z')
    const profiles = db.table('profiles')
    await db.sql(`UPDATE ${profiles} SET doc = '{"a":[1,2.5,"x"],"b":1}' WHERE id = 1`)
    for (const w of ['duckdb', 'bigquery'] as const) await runOn(w, '2024-02-01T00:00:00Z')
    await db.sql(`UPDATE ${profiles} SET ints = '{1,2,4}' WHERE id = 1`)
    await db.sql(`UPDATE ${profiles} SET docb = '[0]' WHERE id = 2`)
    for (const w of ['duckdb', 'bigquery'] as const) await runOn(w, '2024-03-01T00:00:00Z')
    await db.sql(`UPDATE ${profiles} SET texts = '{"a, b",vip,"it''s"}' WHERE id = 1`)
    const duckdb = await runOn('duckdb', '2024-04-01T00:00:00Z')
    const bigquery = await runOn('bigquery', '2024-04-01T00:00:00Z')
    const versions = (id: number) =>
      duckdb.filter((r) => Number(r.id) === id).map((r) => [r.doc, r.docb, r.ints, r.texts, r.is_current])
    expect(versions(1)).toEqual([
      [
        '{"a":[1,2.5,"x"],"b":1}',
        '{"name":"Ana","tags":{"y":2,"z":1}}',
        '[1, 2, 3]',
        "[vip, 'a, b', 'it\\'s']",
        false,
      ],
      [
        '{"a":[1,2.5,"x"],"b":1}',
        '{"name":"Ana","tags":{"y":2,"z":1}}',
        '[1, 2, 4]',
        "['a, b', vip, 'it\\'s']",
        true,
      ],
      [
        '{"a":[1,2.5,"x"],"b":1}',
        '{"name":"Ana","tags":{"y":2,"z":1}}',
        '[1, 2, 4]',
        "[vip, 'a, b', 'it\\'s']",
        false,
      ],
    ])
    expect(versions(2)).toEqual([
      [null, '[]', '[]', null, false],
      [null, '[0]', '[]', null, true],
    ])
    // BigQuery has no NULL arrays: key 2's NULL text[] is an empty array there (docs/bigquery.md).
    const nullArrayAsEmpty = (rows: Record<string, unknown>[]) =>
      rows.map((r) => ({
        ...r,
        texts: r.texts ?? '[]',
        dimsync_row_hash: Number(r.id) === 2 ? '' : r.dimsync_row_hash,
      }))
    expect(nullArrayAsEmpty(bigquery)).toEqual(nullArrayAsEmpty(duckdb))
  })
})

/**
 * Runs PostgreSQL table `name` (target `dim_<name>`, key `id`) once into one warehouse (the BigQuery one is the
 * emulator) and reads every version back with the select list `select` gives for that warehouse's dialect.
 */
async function runPostgresTable(
  ctx: { readonly db: DbScratch; readonly dir: string; readonly emulator: BigQueryEmulator },
  warehouse: 'duckdb' | 'bigquery',
  name: string,
  at: string,
  select: (d: SqlDialect) => string[],
): Promise<Record<string, unknown>[]> {
  const { db, dir, emulator } = ctx
  const line =
    warehouse === 'duckdb'
      ? `{ type: duckdb, path: ${join(dir, 'warehouse.duckdb')} }`
      : '{ type: bigquery, project: acme-dw, dataset: history, location: EU }'
  const yaml = `version: 1
warehouse: ${line}
staging: { type: local, path: ${join(dir, warehouse, 'staging')} }
state: { type: local, path: ${join(dir, warehouse, 'state')} }
tables:
  - name: ${name}
    source: { type: postgres, url_env: DB_URL, table: ${db.table(name)} }
    target: dim_${name}
    key: id
`
  const project = parseProject(yaml, join(dir, 'dimsync.yaml'))
  const previous = process.env[BIGQUERY_ENDPOINT_VARIABLE]
  process.env[BIGQUERY_ENDPOINT_VARIABLE] = emulator.url
  const local = await buildLocalDeps(project, undefined, {}, { bigQuery: { pollIntervalMs: 20 } })
  const deps = { ...local, openSource: (t: TableSpec) => openSource(t, { baseDir: dir, env: db.env }) }
  try {
    const result = await runTable(deps, project.tables[0]!, { extractedAt: new Date(at) })
    expect(result.merge.status).toBe('merged')
    const warehouseDb = await deps.openWarehouse()
    const d = warehouseDb.dialect
    const rows = await warehouseDb.query(
      `SELECT ${select(d).join(', ')} FROM ${d.table({ schema: project.warehouse.schema, name: `dim_${name}` })}`,
    )
    return rows.map((r) => ({ ...r }))
  } finally {
    await deps.close()
    if (previous === undefined) delete process.env[BIGQUERY_ENDPOINT_VARIABLE]
    else process.env[BIGQUERY_ENDPOINT_VARIABLE] = previous
  }
}
