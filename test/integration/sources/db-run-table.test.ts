import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { parseProject } from '../../../lib/config/index.ts'
import { SourceError } from '../../../lib/core/errors.ts'
import type { ProjectSpec, TableSpec } from '../../../lib/core/table-spec.ts'
import { buildLocalDeps, type LocalDeps } from '../../../lib/runtime/local-deps.ts'
import { openSource } from '../../../lib/runtime/open-source.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { KITS, type DbScratch } from './support/db-kits.ts'

const JAN = new Date('2024-01-01T09:00:00Z')
const MAR = new Date('2024-03-01T09:00:00Z')
const MAY = new Date('2024-05-01T09:00:00Z')

/** [id, name, region, valid_from, valid_to, is_current, is_deleted], times shortened to 'YYYY-MM-DD'. */
type Version = [string | number, string, string, string, string | null, boolean, boolean]

describe.each(KITS)('dimsync run against a real $kit.label table', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let dir: string
    let project: ProjectSpec
    let deps: LocalDeps
    const env: Record<string, string | undefined> = {}

    // PostgreSQL's ISO text drops zero microseconds, MySQL's DATETIME(6) text keeps them.
    const iso = (text: string) => (kit.name === 'mysql' ? `${text}.000000` : text)
    const table = (name: string): TableSpec => project.tables.find((t) => t.name === name)!
    const run = (name: string, at: Date) => runTable(deps, table(name), { extractedAt: at })
    async function history(target: string): Promise<Version[]> {
      const warehouse = await deps.openWarehouse()
      const rows = await warehouse.query(
        `SELECT id, name, region, CAST(valid_from AS VARCHAR) AS f, CAST(valid_to AS VARCHAR) AS t, is_current, is_deleted
         FROM main.${target} ORDER BY id, valid_from`,
      )
      return rows.map((r) => [
        Number(r.id),
        String(r.name),
        String(r.region),
        String(r.f).slice(0, 10),
        r.t === null ? null : String(r.t).slice(0, 10),
        Boolean(r.is_current),
        Boolean(r.is_deleted),
      ])
    }

    beforeAll(async () => {
      db = await kit.create()
      dir = await mkdtemp(join(tmpdir(), 'dimsync-db-run-'))
      const t = db.table('customers')
      await db.sql(
        `CREATE TABLE ${t} (id BIGINT PRIMARY KEY, name ${kit.ddl.text} NOT NULL, region ${kit.ddl.text} NOT NULL,
          updated_at ${kit.ddl.timestamp} NOT NULL, deleted_at ${kit.ddl.timestamp} NULL)`,
      )
      await db.sql(
        `INSERT INTO ${t} VALUES (1, 'Ana', 'South', '2024-01-01 08:00:00.000001', NULL),
         (2, 'Bruno', 'North', '2024-01-01 08:00:00.000001', NULL), (3, 'Carla', 'South', '2024-01-01 08:00:00.000001', NULL)`,
      )
      const common = `key: id\n    tracked: [name, region]\n    deletes: invalidate\n    soft_delete_column: deleted_at`
      const yaml = `version: 1
warehouse: { type: duckdb, path: ${join(dir, 'warehouse.duckdb')} }
staging: { type: local, path: ${join(dir, 'staging')} }
state: { type: local, path: ${join(dir, 'state')} }
tables:
  - name: full_one
    source: { type: ${kit.name}, url_env: DIMSYNC_E2E_URL, table: ${t} }
    target: dim_full_one
    ${common}
  - name: full_chunked
    source: { type: ${kit.name}, url_env: DIMSYNC_E2E_URL, table: ${t}, chunks: 3 }
    target: dim_full_chunked
    ${common}
  - name: delta
    source: { type: ${kit.name}, url_env: DIMSYNC_E2E_URL, query: 'SELECT id, name, region, updated_at, deleted_at FROM ${t}' }
    target: dim_delta
    extract: { mode: incremental, cursor: updated_at }
    ${common}
`
      project = parseProject(yaml, join(dir, 'dimsync.yaml'))
      env.DIMSYNC_E2E_URL = db.env.DB_URL
      const local = await buildLocalDeps(project)
      deps = { ...local, openSource: (t) => openSource(t, { baseDir: dir, env }) }
    })
    afterAll(async () => {
      await deps?.close()
      await db?.drop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    it('inserts, updates, hard and soft deletes between runs become history; chunks change nothing', async () => {
      const t = db.table('customers')
      for (const name of ['full_one', 'full_chunked', 'delta']) await run(name, JAN)

      await db.sql(`UPDATE ${t} SET region = 'North', updated_at = '2024-02-01 00:00:00.000002' WHERE id = 1`)
      await db.sql(
        `UPDATE ${t} SET deleted_at = '2024-02-01 00:00:00', updated_at = '2024-02-01 00:00:00.000002' WHERE id = 2`,
      )
      await db.sql(`DELETE FROM ${t} WHERE id = 3`)
      await db.sql(`INSERT INTO ${t} VALUES (4, 'Diego', 'West', '2024-02-01 00:00:00.000002', NULL)`)
      for (const name of ['full_one', 'full_chunked', 'delta']) await run(name, MAR)

      await db.sql(
        `UPDATE ${t} SET deleted_at = NULL, region = 'East', updated_at = '2024-04-01 00:00:00' WHERE id = 2`,
      )
      await db.sql(`UPDATE ${t} SET region = 'East', updated_at = '2024-04-01 00:00:00' WHERE id = 4`)
      for (const name of ['full_one', 'full_chunked', 'delta']) await run(name, MAY)

      const full = await history('dim_full_one')
      expect(full).toEqual([
        [1, 'Ana', 'South', '2024-01-01', '2024-03-01', false, false],
        [1, 'Ana', 'North', '2024-03-01', null, true, false],
        [2, 'Bruno', 'North', '2024-01-01', '2024-03-01', false, false],
        [2, 'Bruno', 'East', '2024-05-01', null, true, false],
        [3, 'Carla', 'South', '2024-01-01', '2024-03-01', false, false],
        [4, 'Diego', 'West', '2024-03-01', '2024-05-01', false, false],
        [4, 'Diego', 'East', '2024-05-01', null, true, false],
      ])
      expect(await history('dim_full_chunked')).toEqual(full)
      // A delta cannot see a hard delete (Carla stays current); everything else matches the full extracts.
      expect(await history('dim_delta')).toEqual([
        ...full.slice(0, 4),
        [3, 'Carla', 'South', '2024-01-01', null, true, false],
        ...full.slice(5),
      ])
      expect(await deps.state.getWatermark('delta')).toMatchObject({
        cursor: iso('2024-04-01T00:00:00'),
        key: [4],
        column: 'updated_at',
      })
    })

    it('a failed extract merges nothing and keeps the watermark; the next run picks the changes up', async () => {
      const t = db.table('customers')
      const before = await history('dim_delta')
      const watermark = await deps.state.getWatermark('delta')
      await db.sql(`UPDATE ${t} SET name = 'Ana Maria', updated_at = '2024-06-01 00:00:00' WHERE id = 1`)
      const url = env.DIMSYNC_E2E_URL
      env.DIMSYNC_E2E_URL = kit.unreachableUrl
      const failed = await run('delta', new Date('2024-06-02T00:00:00Z')).then(
        () => undefined,
        (e: unknown) => e,
      )
      env.DIMSYNC_E2E_URL = url
      expect(failed).toBeInstanceOf(SourceError)
      expect((failed as SourceError).message).not.toContain('sekret')
      expect(await history('dim_delta')).toEqual(before)
      expect(await deps.state.getWatermark('delta')).toEqual(watermark)
      expect(await deps.staging.listBatches('delta')).toEqual([])

      const result = await run('delta', new Date('2024-06-03T00:00:00Z'))
      // Ana's change, and rows 2 and 4 read again at the watermark's cursor (unchanged: no version).
      expect(result.rows).toBe(3)
      expect(result.merge.counts).toMatchObject({
        insertedVersions: 1,
        closedVersions: 1,
        unchangedEvents: 2,
      })
      expect((await history('dim_delta')).filter((v) => v[0] === 1)).toEqual([
        [1, 'Ana', 'South', '2024-01-01', '2024-03-01', false, false],
        [1, 'Ana', 'North', '2024-03-01', '2024-06-03', false, false],
        [1, 'Ana Maria', 'North', '2024-06-03', null, true, false],
      ])
      expect(await deps.state.getWatermark('delta')).toMatchObject({
        cursor: iso('2024-06-01T00:00:00'),
        key: [1],
        column: 'updated_at',
      })
    })
  })
})
