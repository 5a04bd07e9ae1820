import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { SourceError } from '../../../lib/core/errors.ts'
import { openSource } from '../../../lib/runtime/open-source.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { KITS, sourceSpec, type DbScratch } from './support/db-kits.ts'
import { ExtractHarness } from './support/extract-harness.ts'

const MiB = 1024 * 1024

describe.each(KITS)('$kit.label source: large rows and the spool', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let harness: ExtractHarness
    const pg = kit.name === 'postgres'
    const repeat = (text: string, times: number) =>
      pg ? `repeat(${text}, ${times})` : `REPEAT(${text}, ${times})`
    const newline = pg ? 'chr(10)' : 'CHAR(10)'
    const concat = (...parts: string[]) => (pg ? parts.join(' || ') : `CONCAT(${parts.join(', ')})`)
    /** `count` rows of about 2 KB of text on three lines each, keys 1..count. */
    const fill = async (table: string, count: number) => {
      const series = pg
        ? `SELECT i FROM generate_series(1, ${count}) AS s(i)`
        : `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${count}) SELECT i FROM s`
      if (!pg) await db.sql(`SET SESSION max_recursive_iterations = ${count + 1}`).catch(() => undefined)
      await db.sql(
        `CREATE TABLE ${db.table(table)} (id BIGINT PRIMARY KEY, note ${pg ? 'text' : 'LONGTEXT'})`,
      )
      await db.sql(
        `INSERT INTO ${db.table(table)} SELECT i, ${concat(`'line one of '`, 'i', newline, repeat(`'x'`, 2000), newline, `'three'`)} FROM (${series}) AS n`,
      )
    }
    const spec = (table: string) =>
      tableSpec({ name: table, key: ['id'], source: sourceSpec(kit, db.table(table)) })

    beforeAll(async () => {
      db = await kit.create()
      harness = await ExtractHarness.create()
    })
    afterAll(async () => {
      await db?.drop()
      await harness?.close()
    })

    it('with the default options, rows are spooled in files of about 6 MiB: a 20 MB table stages several parts', async () => {
      await fill('spooled', 10_000)
      const { result, parts } = await harness.extract(kit.source(db.env), spec('spooled'))
      expect(result.rows).toBe(10_000)
      expect(parts).toBeGreaterThanOrEqual(3)
    })

    it('a 6 MB value of three million lines among multi-line rows loads within the converter memory limit', async () => {
      await fill('big_row', 30_000)
      await db.sql(
        `INSERT INTO ${db.table('big_row')} VALUES (999999, ${repeat(concat(`'y'`, newline), 3 * MiB)})`,
      )
      const { result, rows } = await harness.extract(kit.source(db.env), spec('big_row'))
      expect(result.rows).toBe(30_001)
      expect(String(rows.at(-1)!.note)).toHaveLength(6 * MiB)
    })

    it('a row over the 8 MiB limit fails naming the table, the key and the column', async () => {
      await db.sql(
        `CREATE TABLE ${db.table('too_big')} (id BIGINT PRIMARY KEY, a ${kit.ddl.text}, note ${pg ? 'text' : 'LONGTEXT'})`,
      )
      await db.sql(
        `INSERT INTO ${db.table('too_big')} VALUES (1, 'small', 'small'), (7, 'small', ${repeat(`'z'`, 9 * MiB)})`,
      )
      const failure = await harness.extract(kit.source(db.env), spec('too_big')).catch((e: unknown) => e)
      expect(failure).toBeInstanceOf(SourceError)
      expect((failure as Error).message).toMatch(
        new RegExp(
          `^table too_big: ${kit.label === 'PostgreSQL' ? 'PostgreSQL' : 'M\\w+'} at [^:]+:\\d+/\\w+: the row with id=7 of \\S+too_big is ` +
            `larger than the 8 MiB a row may hold \\(column note holds 9 MiB\\); the batch was discarded and nothing was merged$`,
        ),
      )
      expect(await harness.leftovers('too_big')).toEqual([])
    })

    it('the converter memory limit follows DIMSYNC_SOURCE_MEMORY_LIMIT, and running out of it says which variable to raise', async () => {
      await fill('tight', 10_000)
      const source = openSource(spec('tight'), {
        baseDir: '.',
        env: { ...db.env, DIMSYNC_SOURCE_MEMORY_LIMIT: '1MB' },
      })
      const failure = await harness.extract(source, spec('tight')).catch((e: unknown) => e)
      expect((failure as Error).message).toMatch(
        /^table tight: .*: converting rows to Parquet ran out of memory \(DIMSYNC_SOURCE_MEMORY_LIMIT is 1MB\); raise DIMSYNC_SOURCE_MEMORY_LIMIT/,
      )
    })
  })
})
