import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { PostgresSource } from '../../../lib/adapters/source/postgres-source.ts'
import { parseProject } from '../../../lib/config/index.ts'
import { buildLocalDeps, type LocalDeps } from '../../../lib/runtime/local-deps.ts'
import { openSource } from '../../../lib/runtime/open-source.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import { PG_URL, PgScratch, postgresReachable } from './support/db-services.ts'

const available = await postgresReachable()

describe.skipIf(!available)('PostgreSQL interval and timetz are staged exactly (real PostgreSQL)', () => {
  let db: PgScratch
  let harness: ExtractHarness
  let dir: string
  let deps: LocalDeps

  beforeAll(async () => {
    db = await PgScratch.create()
    harness = await ExtractHarness.create()
    dir = await mkdtemp(join(tmpdir(), 'dimsync-pg-exact-'))
    await db.sql(
      `CREATE TABLE ${db.schema}.spans (id int PRIMARY KEY, iv interval, at_time timetz, ivs interval[])`,
    )
    await db.sql(`INSERT INTO ${db.schema}.spans VALUES
      (1, '2000 hours', '12:00:00.5+05:30', '{"1 day","-2 hours"}'),
      (2, '1 day 00:00:00.0005', '23:59:59.999999-11', NULL),
      (3, '-1 year -2 mons +3 days -04:05:06', '00:00:00+00', '{}'),
      (4, '0', NULL, NULL),
      (5, NULL, NULL, NULL)`)
  })
  afterAll(async () => {
    await deps?.close()
    await db?.drop()
    await harness?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('an interval is its ISO 8601 text (months, days and microseconds exact, negative parts kept); timetz keeps its offset', async () => {
    const table = tableSpec({
      name: 'spans',
      key: ['id'],
      source: { type: 'postgres', urlEnv: 'PG_URL', table: `${db.schema}.spans` },
    })
    const { rows, types } = await harness.extract(new PostgresSource({ env: { PG_URL } }), table)
    expect(types).toEqual({ id: 'INTEGER', iv: 'VARCHAR', at_time: 'VARCHAR', ivs: 'VARCHAR[]' })
    expect(rows.map((r) => [r.iv, r.at_time, r.ivs])).toEqual([
      ['PT2000H', '12:00:00.5+05:30', ['P1D', 'PT-2H']],
      ['P1DT0.0005S', '23:59:59.999999-11', null],
      ['P-1Y-2M3DT-4H-5M-6S', '00:00:00+00', []],
      ['PT0S', null, null],
      [null, null, null],
    ])
  })

  it('a change of half a millisecond, or of the offset only, opens a new version', async () => {
    const project = parseProject(
      `version: 1
warehouse: { type: duckdb, path: ${join(dir, 'warehouse.duckdb')} }
staging: { type: local, path: ${join(dir, 'staging')} }
state: { type: local, path: ${join(dir, 'state')} }
tables:
  - name: spans
    source: { type: postgres, url_env: PG_URL, table: ${db.schema}.spans }
    key: id
`,
      join(dir, 'dimsync.yaml'),
    )
    deps = {
      ...(await buildLocalDeps(project)),
      openSource: (t) => openSource(t, { baseDir: dir, env: { PG_URL } }),
    }
    const [spans] = project.tables
    await runTable(deps, spans!, { extractedAt: new Date('2024-01-01T00:00:00Z') })
    await db.sql(`UPDATE ${db.schema}.spans SET iv = iv + interval '0.0005 seconds' WHERE id = 2`)
    await db.sql(`UPDATE ${db.schema}.spans SET at_time = '07:30:00.5+01' WHERE id = 1`)
    const second = await runTable(deps, spans!, { extractedAt: new Date('2024-02-01T00:00:00Z') })
    expect(second.merge.counts).toMatchObject({ insertedVersions: 2, closedVersions: 2, unchangedEvents: 3 })
    const versions = await (
      await deps.openWarehouse()
    ).query(`SELECT id, iv, at_time FROM main.dim_spans WHERE id IN (1, 2) ORDER BY id, valid_from`)
    expect(versions).toEqual([
      { id: 1, iv: 'PT2000H', at_time: '12:00:00.5+05:30' },
      { id: 1, iv: 'PT2000H', at_time: '07:30:00.5+01' },
      { id: 2, iv: 'P1DT0.0005S', at_time: '23:59:59.999999-11' },
      { id: 2, iv: 'P1DT0.001S', at_time: '23:59:59.999999-11' },
    ])
  })
})
