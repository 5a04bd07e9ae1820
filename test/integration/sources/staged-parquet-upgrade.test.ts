import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { parseProject } from '../../../lib/config/index.ts'
import type { StagedParquetVersion } from '../../../lib/core/staged-parquet.ts'
import type { ProjectSpec } from '../../../lib/core/table-spec.ts'
import { buildLocalDeps, type LocalDeps } from '../../../lib/runtime/local-deps.ts'
import { openSource } from '../../../lib/runtime/open-source.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { PG_URL, PgScratch, postgresReachable } from './support/db-services.ts'

/**
 * Invariants 4 and 10 (docs/invariants.md) across the switch of staged parts to Parquet 2.0 encodings (lib/core/staged-parquet.ts): a
 * dimension whose history was staged in V1 parts (an older dimsync), then the same snapshot staged in V2 parts,
 * must change nothing. Every value must read back from a V2 part as from a V1 part, or its row hash differs and
 * every key gets a new version. Edge values of every PostgreSQL type family, in more rows than the converter keeps
 * a dictionary for (1,000), so that each column is written in its delta or byte-stream-split encoding: int64's
 * extremes next to each other (the largest deltas), NaN, -0.0 and the infinities, dates and timestamps BC.
 */
const ROWS = 3000
const available = await postgresReachable()

describe.skipIf(!available)(
  'a history staged in Parquet 1.0 parts, then the same snapshot in 2.0 parts',
  () => {
    let db: PgScratch
    let dir: string
    let project: ProjectSpec
    let deps: LocalDeps

    beforeAll(async () => {
      db = await PgScratch.create()
      dir = await mkdtemp(join(tmpdir(), 'dimsync-parquet-upgrade-'))
      const t = `${db.schema}.edges`
      await db.sql(`CREATE TABLE ${t} (id int8 PRIMARY KEY, i8 int8, i4 int4, f8 float8, f4 float4,
      num numeric(38,10), num_small numeric(5,2), d date, ts timestamp(6), tstz timestamptz(6), tm time(6),
      t text, bin bytea, u uuid, flag boolean)`)
      await db.sql(`INSERT INTO ${t} SELECT g,
      CASE g % 4 WHEN 0 THEN -9223372036854775808 WHEN 1 THEN 9223372036854775807 WHEN 2 THEN 0 ELSE g * 7919 END,
      CASE g % 3 WHEN 0 THEN -2147483648 WHEN 1 THEN 2147483647 ELSE -g END,
      CASE g % 7 WHEN 0 THEN 'NaN'::float8 WHEN 1 THEN '-0'::float8 WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity'
        WHEN 4 THEN 5e-324 WHEN 5 THEN 1.7976931348623157e308 ELSE g * 1.1 END,
      CASE g % 5 WHEN 0 THEN 'NaN'::float4 WHEN 1 THEN '-0'::float4 WHEN 2 THEN 3.4028235e38 ELSE g / 3.0 END,
      CASE g % 3 WHEN 0 THEN 9999999999999999999999999999.9999999999 WHEN 1 THEN -0.0000000001 ELSE g / 7.0 END,
      CASE WHEN g % 2 = 0 THEN -999.99 ELSE (g % 99999) / 100.0 END,
      CASE g % 4 WHEN 0 THEN '0044-03-15 BC'::date WHEN 1 THEN '9999-12-31'::date ELSE date '1970-01-01' + (g - 1500) END,
      CASE g % 3 WHEN 0 THEN '0044-03-15 12:00:00.5 BC'::timestamp WHEN 1 THEN '9999-12-31 23:59:59.999999'
        ELSE timestamp '2021-01-01' + g * interval '1.000123 second' END,
      CASE g % 3 WHEN 0 THEN '0001-01-01 00:00:00+00 BC'::timestamptz WHEN 1 THEN '1969-12-31 23:59:59.999999+00'
        ELSE timestamptz '2020-01-01' + g * interval '1 second' END,
      time '00:00:00' + g * interval '17.000001 second',
      CASE g % 5 WHEN 0 THEN NULL WHEN 1 THEN '' ELSE 'text ' || g || repeat('é', g % 13) END,
      CASE g % 4 WHEN 0 THEN NULL WHEN 1 THEN ''::bytea ELSE decode(md5(g::text), 'hex') END,
      md5(g::text)::uuid,
      CASE g % 3 WHEN 0 THEN NULL ELSE g % 2 = 0 END
      FROM generate_series(1, ${ROWS}) g`)
      const yaml = `version: 1
warehouse: { type: duckdb, path: ${join(dir, 'warehouse.duckdb')} }
staging: { type: local, path: ${join(dir, 'staging')} }
state: { type: local, path: ${join(dir, 'state')} }
tables:
  - name: edges
    source: { type: postgres, url_env: DIMSYNC_UPGRADE_URL, table: ${t} }
    key: id
`
      project = parseProject(yaml, join(dir, 'dimsync.yaml'))
      deps = await buildLocalDeps(project)
    })
    afterAll(async () => {
      await deps?.close()
      await db?.drop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    /** Runs the table with its parts staged in `version`; returns the run's counts and the staged parts' encodings. */
    async function runStagedIn(version: StagedParquetVersion, extractedAt: Date) {
      const env = { DIMSYNC_UPGRADE_URL: PG_URL }
      const encodings = new Set<string>()
      const run = await runTable(
        {
          ...deps,
          openSource: (table) => openSource(table, { baseDir: dir, env, parquetVersion: version }),
          staging: withOpenBatchSeen(deps.staging, async (batch) => {
            for (const encoding of await partEncodings(batch.partPaths)) encodings.add(encoding)
          }),
        },
        project.tables[0]!,
        { extractedAt },
      )
      return { counts: run.merge.counts, encodings }
    }

    it('changes nothing: every value reads back from a 2.0 part as from a 1.0 part', async () => {
      const first = await runStagedIn('V1', new Date('2024-01-01T00:00:00Z'))
      expect(first.counts).toMatchObject({ insertedVersions: ROWS })
      expect([...first.encodings].filter((e) => e.startsWith('DELTA') || e === 'BYTE_STREAM_SPLIT')).toEqual(
        [],
      )

      const again = await runStagedIn('V2', new Date('2024-02-01T00:00:00Z'))
      expect([...again.encodings]).toEqual(
        expect.arrayContaining(['DELTA_BINARY_PACKED', 'DELTA_LENGTH_BYTE_ARRAY', 'BYTE_STREAM_SPLIT']),
      )
      expect(again.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0, unchangedEvents: ROWS })
    })
  },
)

/** `staging`, calling `seen` with every batch the merge opens (a Proxy: the store's methods keep their `this`). */
function withOpenBatchSeen(
  staging: LocalDeps['staging'],
  seen: (batch: { readonly partPaths: readonly string[] }) => Promise<void>,
): LocalDeps['staging'] {
  return new Proxy(staging, {
    get(target, property) {
      // A run opens the batches it listed with their manifests (openListedBatch), others by id.
      if (property === 'openBatch' || property === 'openListedBatch')
        return async (...args: unknown[]) => {
          const open = Reflect.get(target, property, target) as (...a: unknown[]) => Promise<{
            readonly partPaths: readonly string[]
          }>
          const batch = await open.apply(target, args)
          await seen(batch)
          return batch
        }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
}

/** The encodings the parts' column chunks use. */
async function partEncodings(paths: readonly string[]): Promise<string[]> {
  const duck = await DuckDBInstance.create(':memory:')
  const connection = await duck.connect()
  try {
    const files = paths.map((p) => `'${p.replaceAll("'", "''")}'`).join(', ')
    const reader = await connection.runAndReadAll(
      `SELECT DISTINCT encodings FROM parquet_metadata([${files}])`,
    )
    return reader.getRows().flatMap(([e]) => String(e).split(/,\s*/))
  } finally {
    connection.closeSync()
    duck.closeSync()
  }
}
