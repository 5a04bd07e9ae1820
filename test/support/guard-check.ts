import type { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { CompiledStatement } from '../../lib/core/compiled-sql.ts'
import type { Row, WarehouseTransaction } from '../../lib/ports/warehouse.ts'

/**
 * Makes `warehouse` check every guard of the statements it runs (CompiledStatement.onlyIf). Warehouses skip a run
 * of guarded statements whose guard is false (guarded-runs.ts; BigQuery's script the same), so a guard that is false
 * while its statements would still change rows would skip needed work unseen. Here every statement runs, guard or
 * not: a guarded INSERT, UPDATE or DELETE whose guard is false must change no row, and no statement may read a
 * temporary table created under a guard its own does not include (a skipped creation would leave it missing, or
 * holding an earlier batch's rows); else the merge fails naming it. Every test merging through the harnesses checks
 * that on each of its batches.
 */
export function checkGuards(warehouse: DuckDbWarehouse): DuckDbWarehouse {
  const transaction = warehouse.transaction.bind(warehouse)
  warehouse.transaction = (work, options) => transaction((tx) => work(guardChecking(tx)), options)
  return warehouse
}

const DML = /^\s*(INSERT|UPDATE|DELETE)\b/i
/** A statement creating a temporary table (DuckDB's and PostgreSQL's forms), and the table's name. */
const TEMP_TABLE_CREATION = /^\s*CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+TABLE\s+"([^"]+)"/i
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
  // Temporary tables created in this transaction, with the guard each was created under ('' for none).
  const createdUnder = new Map<string, string>()
  const runRegardless = (statement: CompiledStatement) => {
    forget()
    // Without its guard, the warehouse runs the statement whatever the guard reads.
    return tx.execute({ label: statement.label, sql: statement.sql })
  }
  return {
    query(sql) {
      forget()
      return tx.query(sql)
    },
    async execute(statement: CompiledStatement) {
      const guard = statement.onlyIf
      const created = TEMP_TABLE_CREATION.exec(statement.sql)?.[1]
      for (const [table, creationGuard] of createdUnder)
        if (
          table !== created &&
          creationGuard !== '' &&
          !(guard ?? '').includes(creationGuard) &&
          statement.sql.includes(`"${table}"`)
        )
          throw new Error(
            `statement "${statement.label}" reads the temporary table ${table}, created only under the guard ` +
              `${creationGuard}, which its own guard (${guard ?? 'none'}) does not include`,
          )
      if (created !== undefined) createdUnder.set(created, guard ?? '')
      if (guard === undefined || !DML.test(statement.sql)) return runRegardless(statement)
      if (!falseGuards.has(guard)) {
        const [row] = await tx.query(`SELECT (${guard}) AS needed`)
        if (row?.needed === true) return runRegardless(statement)
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
