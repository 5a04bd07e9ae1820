import type { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { CompiledStatement } from '../../lib/core/compiled-sql.ts'
import type { WarehouseTransaction } from '../../lib/ports/warehouse.ts'

/**
 * Makes `warehouse` check every guard of the statements it runs (CompiledStatement.onlyIf). DuckDB runs guarded
 * statements regardless, and only BigQuery skips them when their guard is false, so a guard that is false while
 * its statement would still change rows would go unnoticed on DuckDB (and skip needed work on BigQuery). Here a
 * guarded INSERT, UPDATE or DELETE whose guard is false must change no row, or the merge fails naming it; every
 * test merging through the harnesses checks that on each of its batches.
 */
export function checkGuards(warehouse: DuckDbWarehouse): DuckDbWarehouse {
  const transaction = warehouse.transaction.bind(warehouse)
  warehouse.transaction = (work, options) => transaction((tx) => work(guardChecking(tx)), options)
  return warehouse
}

const DML = /^\s*(INSERT|UPDATE|DELETE)\b/i
/** The target of an UPDATE: DuckDB counts the rows it matched, not those it changed, so contents are compared. */
const UPDATE_TARGET = /^\s*UPDATE\s+((?:"[^"]+"\.)*"[^"]+")/i
const SNAPSHOT = '"__dimsync_guard_check"'

function guardChecking(tx: WarehouseTransaction): WarehouseTransaction {
  return {
    query: (sql) => tx.query(sql),
    async execute(statement: CompiledStatement) {
      if (statement.onlyIf === undefined || !DML.test(statement.sql)) return tx.execute(statement)
      const [guard] = await tx.query(`SELECT (${statement.onlyIf}) AS needed`)
      if (guard?.needed === true) return tx.execute(statement)
      const target = UPDATE_TARGET.exec(statement.sql)?.[1]
      if (target !== undefined)
        await tx.query(`CREATE OR REPLACE TEMP TABLE ${SNAPSHOT} AS SELECT * FROM ${target}`)
      const [result] = await tx.query(statement.sql)
      const changed =
        target === undefined
          ? Number(result?.Count ?? 0)
          : Number(
              (
                await tx.query(
                  `SELECT COUNT(*) AS n FROM (SELECT * FROM ${target} EXCEPT ALL SELECT * FROM ${SNAPSHOT})`,
                )
              )[0]?.n,
            )
      if (changed !== 0)
        throw new Error(
          `guarded statement "${statement.label}" changed ${changed} rows although its guard is false:\n${statement.onlyIf}`,
        )
    },
  }
}

/**
 * Makes `warehouse` run `probe` in the open transaction just before each statement labelled `label`, so a test can
 * read what the merge holds at that point (a guard's verdict, a temporary table's contents).
 */
export function probeBefore(
  warehouse: DuckDbWarehouse,
  label: string,
  probe: (tx: WarehouseTransaction, statement: CompiledStatement) => Promise<void>,
): void {
  const transaction = warehouse.transaction.bind(warehouse)
  warehouse.transaction = (work, options) =>
    transaction(
      (tx) =>
        work({
          query: (sql) => tx.query(sql),
          async execute(statement: CompiledStatement) {
            if (statement.label === label) await probe(tx, statement)
            return tx.execute(statement)
          },
        }),
      options,
    )
}
