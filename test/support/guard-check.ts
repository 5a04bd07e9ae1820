import type { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { CompiledStatement } from '../../lib/core/compiled-sql.ts'
import type { Row, WarehouseTransaction } from '../../lib/ports/warehouse.ts'

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

function guardChecking(tx: WarehouseTransaction): WarehouseTransaction {
  // What is known of the database as it stands: guards that read false, and tables' rows as read. A statement whose
  // guard is false runs and is shown to change nothing, so what was known before it still holds after it; any
  // other statement or query forgets it. (The merge runs its late-key steps one after another under one guard.)
  const falseGuards = new Set<string>()
  const rowsOf = new Map<string, readonly Row[]>()
  const forget = () => {
    falseGuards.clear()
    rowsOf.clear()
  }
  return {
    query(sql) {
      forget()
      return tx.query(sql)
    },
    async execute(statement: CompiledStatement) {
      const guard = statement.onlyIf
      if (guard === undefined || !DML.test(statement.sql)) {
        forget()
        return tx.execute(statement)
      }
      if (!falseGuards.has(guard)) {
        const [row] = await tx.query(`SELECT (${guard}) AS needed`)
        if (row?.needed === true) {
          forget()
          return tx.execute(statement)
        }
      }
      const target = UPDATE_TARGET.exec(statement.sql)?.[1]
      // The tables are small here: their rows read into the test compare as exactly as a copy in a temporary
      // table would (EXCEPT ALL), for fewer and cheaper statements.
      const before =
        target === undefined ? [] : (rowsOf.get(target) ?? (await tx.query(`SELECT * FROM ${target}`)))
      const [result] = await tx.query(statement.sql)
      const count = Number(result?.Count ?? 0)
      // An UPDATE that matched no row changed none: only one that matched some is read again.
      const changed =
        target === undefined || count === 0
          ? count
          : rowsNotIn(await tx.query(`SELECT * FROM ${target}`), before)
      if (changed !== 0)
        throw new Error(
          `guarded statement "${statement.label}" changed ${changed} rows although its guard is false:\n${guard}`,
        )
      falseGuards.add(guard)
      if (target !== undefined) rowsOf.set(target, before)
    },
  }
}

/** How many of `rows` are not in `others`, each row of `others` matching one at most (EXCEPT ALL). */
function rowsNotIn(rows: readonly Row[], others: readonly Row[]): number {
  const left = new Map<string, number>()
  for (const row of others) {
    const text = rowText(row)
    left.set(text, (left.get(text) ?? 0) + 1)
  }
  let missing = 0
  for (const row of rows) {
    const text = rowText(row)
    const n = left.get(text) ?? 0
    if (n === 0) missing++
    else left.set(text, n - 1)
  }
  return missing
}

/** A row's values in column order; the warehouse gives JSON values (BIGINT as a number only where exact). */
const rowText = (row: Row) => JSON.stringify(Object.values(row))

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
