import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { openMemoryWarehouse } from '../../lib/adapters/warehouse/duckdb-memory-warehouse.ts'
import { checkGuards } from './guard-check.ts'

/**
 * The guard check the DuckDB harnesses run every merge under: a guarded statement whose guard is false must change
 * no row, counted as the rows of the table after it that are not among those before (EXCEPT ALL).
 */
describe('checkGuards', () => {
  let warehouse: DuckDbWarehouse

  beforeEach(async () => {
    warehouse = checkGuards(await openMemoryWarehouse({ threads: 1 }))
    await warehouse.query(`CREATE TABLE t (k INTEGER, v VARCHAR, x DOUBLE)`)
    // Two equal rows: a change to one of them is still a changed row.
    await warehouse.query(`INSERT INTO t VALUES (1, 'a', 1.5), (1, 'a', 1.5), (2, NULL, NULL)`)
  })
  afterEach(() => warehouse.close())

  const run = (sql: string, onlyIf: string) =>
    warehouse.transaction((tx) => tx.execute({ label: 'step', sql, onlyIf }), { commit: true })
  const rows = () => warehouse.query(`SELECT * FROM t ORDER BY k, v, x`)

  // The renderers quote every table name; the check finds an UPDATE's target only so.
  it.each([
    ['an UPDATE that changes a value', `UPDATE "t" SET v = 'b' WHERE k = 2`, 1],
    ['an UPDATE that changes one of two equal rows', `UPDATE "t" SET x = 2 WHERE rowid = 0`, 1],
    ['an UPDATE that sets NULL', `UPDATE "t" SET x = NULL WHERE k = 1`, 2],
    ['a DELETE', `DELETE FROM t WHERE k = 1`, 2],
    ['an INSERT', `INSERT INTO t VALUES (3, 'c', 0)`, 1],
  ])('refuses %s under a false guard', async (_what, sql, changed) => {
    await expect(run(sql, 'FALSE')).rejects.toThrow(`guarded statement "step" changed ${changed} rows`)
  })

  it.each([
    ['an UPDATE that matches rows and writes their values again', `UPDATE "t" SET v = v, x = x`],
    ['an UPDATE that matches no row', `UPDATE "t" SET v = 'z' WHERE k = 9`],
    ['a DELETE that matches no row', `DELETE FROM t WHERE k = 9`],
  ])('lets %s pass under a false guard', async (_what, sql) => {
    const before = await rows()
    await run(sql, '1 = 2')
    expect(await rows()).toEqual(before)
  })

  it('runs a statement whose guard is true, whatever it changes', async () => {
    await run(`UPDATE "t" SET v = 'b' WHERE k = 2`, 'EXISTS (SELECT 1 FROM t WHERE k = 2)')
    expect((await rows()).map((r) => r.v)).toEqual(['a', 'a', 'b'])
  })

  // The check keeps a false guard's verdict while nothing changes (its statement changed nothing): the next
  // statement under the same guard is still checked, and a statement in between makes it read the guard again.
  it('refuses the second of two statements under one false guard when it changes rows', async () => {
    const guard = 'EXISTS (SELECT 1 FROM t WHERE k = 5)'
    const work = warehouse.transaction(
      async (tx) => {
        await tx.execute({ label: 'first', sql: `UPDATE "t" SET v = v`, onlyIf: guard })
        await tx.execute({ label: 'second', sql: `UPDATE "t" SET v = 'b' WHERE k = 2`, onlyIf: guard })
      },
      { commit: true },
    )
    await expect(work).rejects.toThrow('guarded statement "second" changed 1 rows')
  })

  it('reads a guard again after a statement that may have made it true', async () => {
    const guard = 'EXISTS (SELECT 1 FROM t WHERE k = 5)'
    await warehouse.transaction(
      async (tx) => {
        await tx.execute({ label: 'first', sql: `UPDATE "t" SET v = v`, onlyIf: guard })
        await tx.execute({ label: 'add key 5', sql: `INSERT INTO t VALUES (5, 'e', 0)` })
        await tx.execute({ label: 'second', sql: `UPDATE "t" SET v = 'b' WHERE k = 2`, onlyIf: guard })
      },
      { commit: true },
    )
    expect((await rows()).map((r) => r.v)).toEqual(['a', 'a', 'b', 'e'])
  })

  // The warehouses skip a run whose guard is false; the harness runs it anyway, to check what it would change.
  it('runs a guarded statement that creates a table although its guard is false', async () => {
    await warehouse.transaction(
      (tx) =>
        tx.execute({
          label: 'make u',
          sql: 'CREATE OR REPLACE TEMP TABLE "u" AS SELECT 1 AS one',
          onlyIf: 'FALSE',
        }),
      { commit: true },
    )
    expect(await warehouse.query('SELECT one FROM "u"')).toEqual([{ one: 1 }])
  })

  it.each([
    ['no guard', undefined],
    ['another guard', '1 = 1'],
  ])(
    'refuses a statement under %s that reads a temporary table created only under a guard',
    async (_what, onlyIf) => {
      const guard = 'EXISTS (SELECT 1 FROM t WHERE k = 5)'
      const work = warehouse.transaction(
        async (tx) => {
          await tx.execute({
            label: 'make u',
            sql: 'CREATE OR REPLACE TEMP TABLE "u" AS SELECT 1 AS one',
            onlyIf: guard,
          })
          await tx.execute({ label: 'read u', sql: 'SELECT * FROM "u"', ...(onlyIf ? { onlyIf } : {}) })
        },
        { commit: true },
      )
      await expect(work).rejects.toThrow(
        `statement "read u" reads the temporary table u, created only under the guard ${guard}`,
      )
    },
  )

  it('lets a statement read a temporary table created under a guard its own includes', async () => {
    const guard = 'EXISTS (SELECT 1 FROM t WHERE k = 1)'
    await warehouse.transaction(
      async (tx) => {
        await tx.execute({
          label: 'make u',
          sql: 'CREATE OR REPLACE TEMP TABLE "u" AS SELECT 1 AS one',
          onlyIf: guard,
        })
        await tx.execute({
          label: 'read u',
          sql: 'INSERT INTO t SELECT one, \'u\', 0 FROM "u"',
          onlyIf: `(${guard}) AND (TRUE)`,
        })
      },
      { commit: true },
    )
    expect((await rows()).map((r) => r.v)).toContain('u')
  })
})
