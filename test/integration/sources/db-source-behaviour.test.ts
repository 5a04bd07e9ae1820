import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { SourceError } from '../../../lib/core/errors.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { KITS, sourceSpec, type DbScratch } from './support/db-kits.ts'
import { ExtractHarness } from './support/extract-harness.ts'

const T0 = '2024-05-01 10:00:00.000001'
const T1 = '2024-05-01 10:00:00.000002'

describe.each(KITS)('$kit.label source against a real server', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let harness: ExtractHarness
    const spec = (over: Partial<TableSpec> = {}, sourceOver = {}): TableSpec =>
      tableSpec({
        name: 'items',
        key: ['id'],
        source: sourceSpec(kit, db.table('items'), sourceOver),
        ...over,
      })
    const incremental = (lookbackMinutes = 0, over: Partial<TableSpec> = {}) =>
      spec({ extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes }, ...over })

    beforeAll(async () => {
      db = await kit.create()
      harness = await ExtractHarness.create()
      const { timestamp, text } = kit.ddl
      await db.sql(
        `CREATE TABLE ${db.table('items')} (id BIGINT PRIMARY KEY, name ${text}, updated_at ${timestamp} NULL, is_deleted SMALLINT NOT NULL DEFAULT 0)`,
      )
      await db.sql(
        `INSERT INTO ${db.table('items')} (id, name, updated_at) VALUES (1, 'a', '${T0}'), (2, 'b', '${T0}'), (3, 'c', '${T0}'), (4, 'd', '${T1}')`,
      )
    })
    afterAll(async () => {
      await db?.drop()
      await harness?.close()
    })

    it('describe: the staged columns without reading rows', async () => {
      expect(await kit.source(db.env).describe(spec({ softDeleteColumn: 'is_deleted' }))).toEqual([
        { name: 'id', type: 'BIGINT' },
        { name: 'name', type: 'VARCHAR' },
        { name: 'updated_at', type: 'TIMESTAMP' },
        { name: 'is_deleted', type: 'BOOLEAN' },
      ])
      await expect(kit.source(db.env).describe(spec({ key: ['nope'] }))).rejects.toThrow(
        'table items: key column nope is not a column of',
      )
    })

    it('full extract: every row, counted in the same snapshot, described with the snapshot it read', async () => {
      const { rows, result } = await harness.extract(kit.source(db.env), spec())
      expect(rows.map((r) => [r.id, r.name])).toEqual([
        ['1', 'a'],
        ['2', 'b'],
        ['3', 'c'],
        ['4', 'd'],
      ])
      expect(result.rows).toBe(4)
      expect(result.watermarkCandidate).toBeUndefined()
      expect(result.sourceDescription).toMatch(
        new RegExp(`${db.table('items').replace('.', '\\.')}, snapshot \\S`),
      )
    })

    it('incremental: every row at the watermark cursor is read again, so a row committed late with that cursor and a lower key is never skipped', async () => {
      const source = kit.source(db.env)
      await db.sql(
        `CREATE TABLE ${db.table('ties')} (id BIGINT PRIMARY KEY, updated_at ${kit.ddl.timestamp})`,
      )
      await db.sql(`INSERT INTO ${db.table('ties')} VALUES (1, '${T0}'), (5, '${T0}')`)
      const ties = tableSpec({
        name: 'ties',
        key: ['id'],
        source: sourceSpec(kit, db.table('ties')),
        extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
      })
      // A writer stamps T0 on key 3 but commits only after the first extract read (T0, 5) as its watermark.
      const pending = await kit.openTransaction(db, [`INSERT INTO ${db.table('ties')} VALUES (3, '${T0}')`])
      const first = await harness.extract(source, ties)
      expect(first.rows.map((r) => r.id)).toEqual(['1', '5'])
      expect(first.result.watermarkCandidate).toEqual({
        cursor: '2024-05-01T10:00:00.000001',
        key: [5],
        column: 'updated_at',
      })
      await pending.commit()

      const second = await harness.extract(source, ties, { watermark: first.result.watermarkCandidate })
      // Rows 1 and 5 are read again (the merge drops them: unchanged); row 3 is no longer lost.
      expect(second.rows.map((r) => r.id)).toEqual(['1', '3', '5'])
      expect(second.result.watermarkCandidate).toEqual(first.result.watermarkCandidate)
      expect(second.result.sourceDescription).toContain(
        'rows at or after updated_at 2024-05-01T10:00:00.000001',
      )

      await db.sql(`INSERT INTO ${db.table('ties')} VALUES (2, '${T1}')`)
      const third = await harness.extract(source, ties, { watermark: second.result.watermarkCandidate })
      expect(third.rows.map((r) => r.id)).toEqual(['1', '2', '3', '5'])
      // Only the newest cursor value is read again from now on.
      const fourth = await harness.extract(source, ties, { watermark: third.result.watermarkCandidate })
      expect(fourth.rows.map((r) => r.id)).toEqual(['2'])
      expect(fourth.result.watermarkCandidate).toEqual({
        cursor: '2024-05-01T10:00:00.000002',
        key: [2],
        column: 'updated_at',
      })
    })

    it('look-back: a transaction that commits late with an older cursor is read again within the window', async () => {
      const source = kit.source(db.env)
      await db.sql(
        `CREATE TABLE ${db.table('late')} (id BIGINT PRIMARY KEY, updated_at ${kit.ddl.timestamp})`,
      )
      await db.sql(`INSERT INTO ${db.table('late')} VALUES (1, '2024-05-01 09:00:00')`)
      const late = (lookbackMinutes: number) =>
        tableSpec({
          name: 'late',
          key: ['id'],
          source: sourceSpec(kit, db.table('late')),
          extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes },
        })
      // A writer stamps 09:55 but has not committed yet; a later write (10:00) commits first.
      const pending = await kit.openTransaction(db, [
        `INSERT INTO ${db.table('late')} VALUES (2, '2024-05-01 09:55:00')`,
      ])
      await db.sql(`INSERT INTO ${db.table('late')} VALUES (3, '2024-05-01 10:00:00')`)
      const first = await harness.extract(source, late(10))
      expect(first.rows.map((r) => r.id)).toEqual(['1', '3'])
      await pending.commit()
      const without = await harness.extract(source, late(0), { watermark: first.result.watermarkCandidate })
      // Without a look-back only the watermark's own cursor value (row 3) is read again: row 2 is older.
      expect(without.rows.map((r) => r.id)).toEqual(['3'])
      const within = await harness.extract(source, late(10), { watermark: first.result.watermarkCandidate })
      // Row 3 is read again (harmless: the merge drops unchanged rows); row 2 is no longer lost.
      expect(within.rows.map((r) => r.id)).toEqual(['2', '3'])
      expect(within.result.watermarkCandidate).toEqual(first.result.watermarkCandidate)
      expect(within.result.sourceDescription).toContain('10-minute look-back')
    })

    it('parallel chunks read the same rows as one chunk, in several parts', async () => {
      await db.sql(`CREATE TABLE ${db.table('wide')} (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)`)
      const values = Array.from({ length: 5000 }, (_, i) => `(${i * 3 + 1}, ${i})`).join(', ')
      await db.sql(`INSERT INTO ${db.table('wide')} VALUES ${values}`)
      const wide = (chunks: number) =>
        tableSpec({ name: 'wide', key: ['id'], source: sourceSpec(kit, db.table('wide'), { chunks }) })
      const one = await harness.extract(kit.source(db.env), wide(1))
      const four = await harness.extract(kit.source(db.env, { spoolBytes: 4096 }), wide(4))
      expect(four.rows).toEqual(one.rows)
      expect(four.result.rows).toBe(5000)
      expect(four.parts).toBeGreaterThanOrEqual(4)
      expect(four.result.sourceDescription).toContain('4 chunks')
    })

    it('parallel chunks share one snapshot: concurrent transfers never break the invariant', async () => {
      const t = db.table('accounts')
      await db.sql(`CREATE TABLE ${t} (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, pad ${kit.ddl.text})`)
      const values = Array.from({ length: 20000 }, (_, i) => `(${i + 1}, 100, '${'x'.repeat(60)}')`).join(
        ', ',
      )
      await db.sql(`INSERT INTO ${t} VALUES ${values}`)
      let stop = false
      let transfers = 0
      const writer = (async () => {
        while (!stop) {
          // Money moves from the first key range to the last one, in one transaction.
          const tx = await kit.openTransaction(db, [
            `UPDATE ${t} SET balance = balance - 1 WHERE id = 1`,
            `UPDATE ${t} SET balance = balance + 1 WHERE id = 20000`,
          ])
          await tx.commit()
          transfers++
        }
      })()
      try {
        for (let i = 0; i < 3; i++) {
          const { rows } = await harness.extract(
            kit.source(db.env, { spoolBytes: 64 * 1024 }),
            tableSpec({ name: 'accounts', key: ['id'], source: sourceSpec(kit, t, { chunks: 4 }) }),
          )
          expect(rows).toHaveLength(20000)
          expect(rows.reduce((sum, r) => sum + Number(r.balance), 0)).toBe(2_000_000)
        }
      } finally {
        stop = true
        await writer
      }
      expect(transfers).toBeGreaterThan(0)
    })

    it('an integer soft-delete flag is staged as BOOLEAN (non-zero = deleted)', async () => {
      await db.sql(`UPDATE ${db.table('items')} SET is_deleted = 1 WHERE id = 2`)
      const { rows, types } = await harness.extract(
        kit.source(db.env),
        spec({ softDeleteColumn: 'is_deleted' }),
      )
      expect(types.is_deleted).toBe('BOOLEAN')
      expect(rows.map((r) => [r.id, r.is_deleted])).toEqual([
        ['1', false],
        ['2', true],
        ['3', false],
        ['4', false],
      ])
      await db.sql(`UPDATE ${db.table('items')} SET is_deleted = 0`)
    })

    describe('bad input gives a clear SourceError and stages nothing', () => {
      async function failure(table: TableSpec, env = db.env, options = {}): Promise<SourceError> {
        const error = await harness.extract(kit.source(env, options), table).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(error).toBeInstanceOf(SourceError)
        expect(await harness.leftovers(table.name)).toEqual([])
        return error as SourceError
      }

      it('unreachable server: host and port, retryable, no password', async () => {
        const error = await failure(spec(), { DB_URL: kit.unreachableUrl })
        expect(error.message).toContain('127.0.0.1:1')
        expect(error.message).toContain('connection refused')
        expect(error.message).toContain('DB_URL')
        expect(error.message).not.toContain('sekret')
        expect(String((error.cause as Error | undefined)?.message ?? '')).not.toContain('sekret-pw@')
        expect(error.retryable).toBe(true)
      })

      it('connection URL variable not set', async () => {
        const error = await failure(spec(), {})
        expect(error.message).toBe(
          `table items: environment variable DB_URL (source.url_env) is not set; set it to a URL like ${kit.name}://user:password@host:${kit.name === 'postgres' ? 5432 : 3306}/database`,
        )
      })

      it('missing table', async () => {
        const error = await failure(
          tableSpec({ name: 'items', key: ['id'], source: sourceSpec(kit, db.table('nope')) }),
        )
        expect(error.message).toContain(`source table ${db.table('nope')} does not exist`)
      })

      it('missing key or cursor column, with the columns that exist', async () => {
        const key = await failure(spec({ key: ['item_id'] }))
        expect(key.message).toBe(
          `table items: key column item_id is not a column of ${db.table('items')} (${key.message.split('(')[1]!.split(')')[0]}); its columns are id, name, updated_at, is_deleted`,
        )
        const cursor = await failure(
          spec({ extract: { mode: 'incremental', cursor: 'Updated_At', lookbackMinutes: 0 } }),
        )
        expect(cursor.message).toContain('cursor column Updated_At is not a column of')
        expect(cursor.message).toContain('did you mean updated_at (names are case-sensitive)?')
      })

      it('a cursor column with NULLs', async () => {
        await db.sql(`INSERT INTO ${db.table('items')} (id, name, updated_at) VALUES (99, 'nul', NULL)`)
        try {
          const error = await failure(incremental())
          expect(error.message).toContain('cursor column updated_at of')
          expect(error.message).toContain('has 1 NULL values')
        } finally {
          await db.sql(`DELETE FROM ${db.table('items')} WHERE id = 99`)
        }
      })

      it('a key that is not unique in the source', async () => {
        await db.sql(`CREATE TABLE ${db.table('dups')} (code ${kit.ddl.text}, n INT)`)
        await db.sql(
          `INSERT INTO ${db.table('dups')} VALUES ('x', 1), ('x', 2), ('y', 1), ('z', 1), ('z', 2), ('z', 3)`,
        )
        const error = await failure(
          tableSpec({ name: 'dups', key: ['code'], source: sourceSpec(kit, db.table('dups')) }),
        )
        expect(error.message).toContain(`the key (code) is not unique in ${db.table('dups')}`)
        expect(error.message).toContain('for example (x) 2 times; (z) 3 times')
      })

      it('a statement timeout', async () => {
        const error = await failure(
          tableSpec({
            name: 'items',
            key: ['id'],
            source: sourceSpec(kit, undefined as unknown as string, {
              table: undefined,
              query: kit.sleepingQuery(db.table('items'), 0.6),
              statementTimeoutSeconds: 1,
            }),
          }),
        )
        expect(error.message).toContain('ran longer than source.statement_timeout_seconds (1 s)')
        expect(error.retryable).toBe(true)
      })

      it('a connection dropped mid-extract: the batch is discarded, retryable', async () => {
        const t = db.table('big')
        await db.sql(`CREATE TABLE ${t} (id BIGINT PRIMARY KEY, pad ${kit.ddl.text})`)
        const values = Array.from({ length: 10000 }, (_, i) => `(${i + 1}, '${'p'.repeat(100)}')`)
        await db.sql(`INSERT INTO ${t} VALUES ${values.join(', ')}`)
        // 160,000 rows (16 MB): more than the socket buffers hold, so the server is still sending when killed.
        for (const offset of [10000, 20000, 40000, 80000]) {
          await db.sql(`INSERT INTO ${t} SELECT id + ${offset}, pad FROM ${t}`)
        }
        const relation =
          kit.name === 'postgres' ? `"${t.split('.')[0]}"."big"` : `\`${t.split('.')[0]}\`.\`big\``
        // The server pauses half-way through the rows, so the kill always lands while the extract is reading.
        const pause = kit.name === 'postgres' ? 'pg_sleep(2)::text' : 'SLEEP(2)'
        const query = `SELECT id, pad, CASE WHEN id = 80000 THEN ${pause} END AS pause FROM ${relation}`
        const table = tableSpec({
          name: 'big',
          key: ['id'],
          source: sourceSpec(kit, t, { table: undefined, query }),
        })
        // One kill at a time, until one found the session; a later call finding none must not hide that one did.
        let killed = 0
        let killing: Promise<void> | undefined
        const error = await harness
          .extract(kit.source(db.env, { spoolBytes: 256 * 1024 }), table, {
            onProgress: () => {
              if (killed > 0 || killing) return
              killing = db.killSessionsRunning(`FROM ${relation}`).then((n) => {
                killed = Math.max(killed, n)
                killing = undefined
              })
            },
          })
          .then(
            () => undefined,
            (e: unknown) => e,
          )
        expect(killed).toBeGreaterThan(0)
        expect(error).toBeInstanceOf(SourceError)
        expect((error as SourceError).message).toContain(
          'the connection was lost while reading 160000 rows of query',
        )
        expect((error as SourceError).message).toContain('the batch was discarded and nothing was merged')
        expect((error as SourceError).retryable).toBe(true)
        expect(await harness.leftovers('big')).toEqual([])
      })
    })
  })
})
