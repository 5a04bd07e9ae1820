import type { CompiledStatement } from '../../sql/dialect.ts'
import type { Row, WarehouseTransaction } from '../../ports/warehouse.ts'

/**
 * A transaction that runs guarded statements (CompiledStatement.onlyIf) as a BigQuery script does
 * (lib/sql/bigquery/bigquery-script.ts): consecutive statements under the same guard are one run, whose guard is
 * read once, before its first statement; the whole run is skipped when it is false. Without it, a warehouse running
 * statement after statement ran every guarded one (a batch without late keys still ran the late path's dozen
 * statements, each reading the batch), which a false guard only makes change nothing.
 *
 * `run` executes a statement (its errors translated as the warehouse does); `query` is the transaction's own;
 * `translate` turns a guard's failure into the warehouse's error, labelled after the statement it guards.
 */
export function skippingFalseGuards(
  run: (statement: CompiledStatement) => Promise<void>,
  query: (sql: string) => Promise<Row[]>,
  translate: (statement: CompiledStatement, cause: unknown) => Error,
): WarehouseTransaction {
  let current: { readonly guard: string; readonly holds: boolean } | undefined
  return {
    query(sql) {
      current = undefined
      return query(sql)
    },
    async execute(statement) {
      const guard = statement.onlyIf
      if (guard === undefined) {
        current = undefined
        return run(statement)
      }
      if (current?.guard !== guard) {
        const read = { label: `guard of ${statement.label}`, sql: `SELECT (${guard}) AS needed` }
        const [row] = await query(read.sql).catch((cause: unknown) => Promise.reject(translate(read, cause)))
        current = { guard, holds: row?.needed === true }
      }
      if (current.holds) await run(statement)
    },
  }
}
