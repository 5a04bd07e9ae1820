import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { tableSpec } from '../../support/table-spec-builder.ts'
import { KITS, sourceSpec, type DbScratch } from './support/db-kits.ts'
import { ExtractHarness } from './support/extract-harness.ts'

/**
 * Column names that collide with the aliases an extract generates (`n` for counts, `k0` for chunk bounds, `w0`
 * for watermarks, `dimsync_rn`), or that need quoting. The tables have no primary key, so the key is checked by
 * a query rather than proven by the catalog.
 */
describe.each(KITS)(
  '$kit.label source: column names that look like generated aliases',
  ({ kit, available }) => {
    describe.skipIf(!available)(kit.name, () => {
      let db: DbScratch
      let harness: ExtractHarness
      const q = (name: string) =>
        kit.name === 'postgres' ? `"${name.replaceAll('"', '""')}"` : `\`${name.replaceAll('`', '``')}\``

      beforeAll(async () => {
        db = await kit.create()
        harness = await ExtractHarness.create()
        const columns = ['n', 'k0', 'k1', 'w0', 'w1', 'dimsync_rn', 'count', 'we"ird`name']
        await db.sql(
          `CREATE TABLE ${db.table('hostile')} (${columns.map((c) => `${q(c)} BIGINT NOT NULL`).join(', ')})`,
        )
        const rows = Array.from(
          { length: 3000 },
          (_, i) => `(${[i, 3000 - i, i % 7, i, i, i, i, i].join(', ')})`,
        )
        await db.sql(`INSERT INTO ${db.table('hostile')} VALUES ${rows.join(', ')}`)
        await db.sql(
          `CREATE TABLE ${db.table('stamps')} (w0 BIGINT NOT NULL, w1 ${kit.ddl.timestamp} NOT NULL)`,
        )
        await db.sql(`CREATE TABLE ${db.table('dups')} (n BIGINT NOT NULL, v BIGINT)`)
        await db.sql(`INSERT INTO ${db.table('dups')} VALUES (1, 1), (1, 2), (2, 3), (3, 4), (3, 5), (3, 6)`)
        // Ordered by key text, key 9 would come last; by cursor, key 1 (the newest change) does.
        await db.sql(
          `INSERT INTO ${db.table('stamps')} VALUES (1, '2024-01-03 00:00:00'), (9, '2024-01-01 00:00:00')`,
        )
      })
      afterAll(async () => {
        await db?.drop()
        await harness?.close()
      })

      const spec = (key: string[], over = {}) =>
        tableSpec({ name: 'hostile', key, source: sourceSpec(kit, db.table('hostile')), ...over })

      it('a key named n, count or w0 is checked for uniqueness by query', async () => {
        for (const key of [['n'], ['count'], ['w0', 'k0']]) {
          const { result } = await harness.extract(kit.source(db.env), spec(key))
          expect(result.rows).toBe(3000)
        }
      })

      it('duplicates of a key named n are reported with their counts', async () => {
        const failure = await harness
          .extract(
            kit.source(db.env),
            tableSpec({ name: 'dups', key: ['n'], source: sourceSpec(kit, db.table('dups')) }),
          )
          .catch((e: unknown) => e)
        expect((failure as Error).message).toMatch(
          /^table dups: the key \(n\) is not unique in \S+ \([^)]+\), for example \(1\) 2 times; \(3\) 3 times; fix the key/,
        )
      })

      it('chunks over a key named k0 read every row once, whatever the other columns are called', async () => {
        const one = await harness.extract(kit.source(db.env), spec(['k0']))
        const three = await harness.extract(
          kit.source(db.env, { spoolBytes: 4096 }),
          spec(['k0'], { source: sourceSpec(kit, db.table('hostile'), { chunks: 3 }) }),
        )
        expect(three.result.sourceDescription).toContain('3 chunks')
        expect(three.rows).toEqual(one.rows)
        expect(three.rows).toHaveLength(3000)
      })

      it('the watermark of a cursor named w1 with a key named w0 is the newest (cursor, key)', async () => {
        const { result } = await harness.extract(
          kit.source(db.env),
          tableSpec({
            name: 'stamps',
            key: ['w0'],
            source: sourceSpec(kit, db.table('stamps')),
            extract: { mode: 'incremental', cursor: 'w1', lookbackMinutes: 0 },
          }),
        )
        expect(result.watermarkCandidate).toEqual({
          cursor: kit.name === 'mysql' ? '2024-01-03T00:00:00.000000' : '2024-01-03T00:00:00',
          key: [1],
          column: 'w1',
        })
      })
    })
  },
)
