import { expect } from 'vitest'
import type { Warehouse } from '../../lib/ports/warehouse.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'

/**
 * The guarded-run contract of a warehouse that runs statement after statement (DuckDB, PostgreSQL), as a BigQuery
 * script runs them: consecutive statements under one guard are a run, its guard read once before its first
 * statement; a run whose guard is false does not run at all (here one of its statements would fail if it ran).
 * Leaves the temporary tables `guard_rows` and `guard_ran` behind (the caller's warehouse is its own).
 */
export async function expectFalseGuardsSkipRuns(warehouse: Warehouse<SqlDialect>): Promise<void> {
  await warehouse.query('CREATE TEMP TABLE guard_rows (n INTEGER)')
  await warehouse.query('CREATE TEMP TABLE guard_ran (label VARCHAR)')
  const guard = 'EXISTS (SELECT 1 FROM guard_rows)'
  const ran = await warehouse.transaction(
    async (tx) => {
      const mark = (label: string, onlyIf?: string) =>
        tx.execute({ label, sql: `INSERT INTO guard_ran VALUES ('${label}')`, ...(onlyIf ? { onlyIf } : {}) })
      await mark('skipped first of a run', guard)
      await tx.execute({ label: 'would fail', sql: `SELECT CAST('not a number' AS INTEGER)`, onlyIf: guard })
      await tx.execute({ label: 'make the guard true', sql: 'INSERT INTO guard_rows VALUES (1)' })
      // The guard holds when the run starts: the run goes on after its first statement makes it false.
      await tx.execute({ label: 'make the guard false', sql: 'DELETE FROM guard_rows', onlyIf: guard })
      await mark('rest of the run', guard)
      await mark('unguarded')
      await mark('next run', guard)
      await mark('nested guard', `(${guard}) AND (1 = 1)`)
      return tx.query('SELECT label FROM guard_ran ORDER BY label')
    },
    { commit: true },
  )
  expect(ran.map((row) => row.label)).toEqual(['rest of the run', 'unguarded'])
  await expect(
    warehouse.transaction(
      (tx) =>
        tx.execute({
          label: 'guarded by a missing table',
          sql: 'SELECT 1',
          onlyIf: 'EXISTS (SELECT 1 FROM guard_missing_table)',
        }),
      { commit: false },
    ),
    'a guard that cannot be read names the statement it guards',
  ).rejects.toThrow(/guard of guarded by a missing table/)
}
