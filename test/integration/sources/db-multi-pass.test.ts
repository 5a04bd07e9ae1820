import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { LocalStagingStore } from '../../../lib/adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../../../lib/adapters/state/local-state-store.ts'
import type { BatchManifest } from '../../../lib/core/batch.ts'
import { SourceError } from '../../../lib/core/errors.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import type { Source } from '../../../lib/ports/source.ts'
import { extractPass, type ExtractPassRequest } from '../../../lib/use-cases/extract-pass.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { KITS, sourceSpec, type DbKit, type DbScratch } from './support/db-kits.ts'

/**
 * Extracts that stop before a time limit and continue in later passes (the AWS extract function), on real
 * servers and real local staging: the time budget is always spent after one round, so every round is a pass.
 */
describe.each(KITS)('$kit.label extract in several passes', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let root: string
    let staging: LocalStagingStore
    let state: LocalStateStore
    let n = 0
    const ROWS = 1000

    const spec = (over: Partial<TableSpec> = {}, chunks = 1): TableSpec =>
      tableSpec({
        name: 'items',
        key: ['id'],
        source: sourceSpec(kit, db.table('items'), { sliceRows: 100, chunks }),
        ...over,
      })
    const incremental = () =>
      spec({ extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 } })

    /**
     * Runs passes until the batch is committed; `between(pass)` runs after each suspended pass (changes on
     * the server while the extract is paused). Returns the manifest, the passes and the staged rows.
     */
    async function extractInPasses(
      table: TableSpec,
      options: { between?: (pass: number) => Promise<void>; source?: (real: Source) => Source } = {},
    ) {
      const batchId = `b${String(++n).padStart(4, '0')}`
      const deps = {
        staging,
        state,
        openSource: () => (options.source ?? ((s) => s))(kit.source(db.env)),
      }
      const base: ExtractPassRequest = {
        batchId,
        extractedAt: new Date('2030-01-01T00:00:00Z'),
        timeLeftMs: () => 0,
      }
      let pass = await extractPass(deps, table, base)
      let passes = 1
      while (!pass.complete) {
        expect(pass.checkpoint.pass).toBe(passes)
        await options.between?.(passes)
        pass = await extractPass(deps, table, { ...base, resume: true })
        passes++
      }
      return { manifest: pass.manifest, passes, rows: await stagedRows(pass.manifest) }
    }

    async function stagedRows(manifest: BatchManifest): Promise<Record<string, unknown>[]> {
      const batch = await staging.openBatch(manifest.table, manifest.batchId)
      const instance = await DuckDBInstance.create(':memory:')
      const connection = await instance.connect()
      try {
        const files = `[${batch.partPaths.map((p) => `'${p}'`).join(', ')}]`
        return (
          await connection.runAndReadAll(
            `SELECT CAST(id AS INTEGER) AS id, name FROM read_parquet(${files}) ORDER BY id`,
          )
        ).getRowObjectsJson() as Record<string, unknown>[]
      } finally {
        connection.closeSync()
        instance.closeSync()
      }
    }

    const names = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => ({ id: from + i, name: `n${from + i}` }))

    beforeAll(async () => {
      db = await kit.create()
    })
    afterAll(async () => {
      await db?.drop()
    })
    beforeEach(async () => {
      root = await mkdtemp(join(tmpdir(), 'dimsync-multi-pass-'))
      staging = new LocalStagingStore({ root: join(root, 'staging') })
      state = new LocalStateStore({ root: join(root, 'state') })
      const t = db.table('items')
      await db.sql(`DROP TABLE IF EXISTS ${t}`)
      await db.sql(
        `CREATE TABLE ${t} (id BIGINT PRIMARY KEY, name ${kit.ddl.text} NOT NULL, updated_at ${kit.ddl.timestamp} NOT NULL)`,
      )
      await insertRange(kit, db, 1, ROWS, '2024-01-01 00:00:00')
    })
    afterEach(async () => {
      await rm(root, { recursive: true, force: true })
    })

    it('a full extract read in passes stages every row once, with parts numbered across passes', async () => {
      const { manifest, passes, rows } = await extractInPasses(spec())
      expect(passes).toBe(ROWS / 100)
      expect(rows).toEqual(names(1, ROWS))
      expect(manifest.rowCount).toBe(ROWS)
      expect(manifest.extractedAt).toBe('2030-01-01T00:00:00.000Z')
      expect(manifest.parts.map((p) => p.name)).toEqual(
        manifest.parts.map((_, i) => `part-${String(i).padStart(5, '0')}.parquet`),
      )
      expect(manifest.sourceDescription).toMatch(/10 passes, snapshots .+, 10 key ranges/)
      expect(await staging.listBatches('items')).toHaveLength(1)
    })

    it('with chunks, each pass reads a round of ranges over parallel connections', async () => {
      const { passes, rows } = await extractInPasses(spec({}, 2))
      expect(passes).toBe(ROWS / 200)
      expect(rows).toEqual(names(1, ROWS))
    })

    it('each key is read as it was when its range was read: changes made between passes', async () => {
      const t = db.table('items')
      const { rows } = await extractInPasses(spec(), {
        between: async (pass) => {
          if (pass !== 1) return
          // Range 1 (ids 1-100) is read; the rest is not.
          await db.sql(`UPDATE ${t} SET name = 'changed' WHERE id IN (50, 900)`)
          await db.sql(`DELETE FROM ${t} WHERE id = 950`)
          await db.sql(`INSERT INTO ${t} (id, name, updated_at) VALUES (0, 'n0', '2024-01-01 00:00:00')`)
          await db.sql(
            `INSERT INTO ${t} (id, name, updated_at) VALUES (2000, 'n2000', '2024-01-01 00:00:00')`,
          )
        },
      })
      const byId = new Map(rows.map((r) => [Number(r.id), r.name]))
      expect(byId.get(50)).toBe('n50') // read before the change
      expect(byId.get(900)).toBe('changed') // read after it
      expect(byId.has(950)).toBe(false) // deleted before its range was read: absent, a true delete
      expect(byId.has(0)).toBe(false) // inserted into a range already read: the next extract has it
      expect(byId.get(2000)).toBe('n2000')
      expect(rows).toHaveLength(ROWS - 1 + 1)
    })

    it('incremental in passes: the watermark candidate is taken before the first range, so rows changed meanwhile are read again', async () => {
      const t = db.table('items')
      await db.sql(`UPDATE ${t} SET updated_at = '2024-01-02 00:00:00' WHERE id = 1000`)
      const first = await extractInPasses(incremental(), {
        between: async (pass) => {
          if (pass === 1)
            await db.sql(`UPDATE ${t} SET name = 'late', updated_at = '2024-01-03 00:00:00' WHERE id = 10`)
        },
      })
      expect(first.manifest.watermarkCandidate).toEqual({
        cursor: kit.name === 'mysql' ? '2024-01-02T00:00:00.000000' : '2024-01-02T00:00:00',
        key: [1000],
        column: 'updated_at',
      })
      expect(first.rows.find((r) => r.id === 10)?.name).toBe('n10')
      await state.commitWatermark('items', first.manifest.watermarkCandidate!, undefined)
      const next = await extractInPasses(incremental())
      // Row 1000 holds the watermark's cursor: it is read again (the merge drops it, unchanged).
      expect(next.rows).toEqual([
        { id: 10, name: 'late' },
        { id: 1000, name: 'n1000' },
      ])
    })

    it('a retryable failure in a later pass keeps the earlier passes; the retry continues from the checkpoint', async () => {
      let calls = 0
      const failThirdPass = (real: Source): Source => ({
        describe: (table) => real.describe(table),
        close: () => real.close(),
        async extract(request) {
          const result = await real.extract(request)
          if (++calls === 3)
            throw new SourceError('items', 'table items: connection lost', { retryable: true })
          return result
        },
      })
      const batchId = `b${String(++n).padStart(4, '0')}`
      const deps = { staging, state, openSource: () => failThirdPass(kit.source(db.env)) }
      const base = { batchId, extractedAt: new Date('2030-01-01T00:00:00Z'), timeLeftMs: () => 0 }
      expect((await extractPass(deps, spec(), base)).complete).toBe(false)
      expect((await extractPass(deps, spec(), { ...base, resume: true })).complete).toBe(false)
      await expect(extractPass(deps, spec(), { ...base, resume: true })).rejects.toThrow('connection lost')
      let passes = 3
      let pass
      do {
        pass = await extractPass(deps, spec(), { ...base, resume: true })
        passes++
      } while (!pass.complete)
      expect(passes).toBe(ROWS / 100 + 1)
      expect(pass.complete && (await stagedRows(pass.manifest))).toEqual(names(1, ROWS))
    })

    it('a column change between passes fails the extract with the table and both column lists, and removes the batch', async () => {
      const t = db.table('items')
      const attempt = extractInPasses(spec(), {
        between: async (pass) => {
          if (pass === 2) await db.sql(`ALTER TABLE ${t} ADD COLUMN extra INTEGER`)
        },
      })
      await expect(attempt).rejects.toThrow(
        /table items: the columns of .+ changed between two passes of one extract \(before: id BIGINT, name VARCHAR, updated_at TIMESTAMP; now: id BIGINT, name VARCHAR, updated_at TIMESTAMP, extra INTEGER\)/,
      )
      await expect(staging.resumeBatch('items', `b${String(n).padStart(4, '0')}`)).rejects.toThrow(
        'has no saved progress',
      )
    })

    it('without a time budget the same table is one pass and one snapshot', async () => {
      const deps = { staging, state, openSource: () => kit.source(db.env) }
      const pass = await extractPass(deps, spec(), { batchId: 'single', extractedAt: new Date() })
      expect(pass.complete).toBe(true)
      if (!pass.complete) return
      expect(pass.manifest.sourceDescription).toMatch(/, snapshot [^;]+$/)
      expect(await stagedRows(pass.manifest)).toEqual(names(1, ROWS))
    })
  })
})

async function insertRange(kit: DbKit, db: DbScratch, from: number, to: number, at: string): Promise<void> {
  const t = db.table('items')
  const series =
    kit.name === 'postgres'
      ? `SELECT g, 'n' || g, TIMESTAMP '${at}' FROM generate_series(${from}, ${to}) AS g`
      : `WITH RECURSIVE s(g) AS (SELECT ${from} UNION ALL SELECT g + 1 FROM s WHERE g < ${to}) SELECT g, CONCAT('n', g), TIMESTAMP '${at}' FROM s`
  await db.sql(`INSERT INTO ${t} (id, name, updated_at) ${series}`)
}
