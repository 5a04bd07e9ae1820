import { DimsyncError } from '../../lib/core/errors.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'

export interface RunTablesHandlers {
  /** Runs one table; throws when it fails. */
  readonly run: (table: TableSpec) => Promise<void>
  /** Called with one line naming the table and what went wrong, as soon as a table fails. */
  readonly onFailure: (line: string, error: unknown) => void
}

/**
 * Runs tables one after another. One table failing (an unreachable source, a refused batch) does not keep the
 * others from loading: each failure is reported as one line when it happens, and the whole fails at the end,
 * naming the tables that failed. A single table fails with its own error.
 */
export async function runTables(tables: readonly TableSpec[], handlers: RunTablesHandlers): Promise<void> {
  if (tables.length === 1) return await handlers.run(tables[0]!)
  const failed: string[] = []
  for (const table of tables) {
    try {
      await handlers.run(table)
    } catch (error) {
      failed.push(table.name)
      handlers.onFailure(failureLine(table.name, error), error)
    }
  }
  if (failed.length > 0)
    throw new DimsyncError(`${failed.length} of ${tables.length} tables failed: ${failed.join(', ')}`)
}

/** The error's message, prefixed with the table unless the message already names it. */
function failureLine(table: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const named = new RegExp(`(^|[^\\w])${table}([^\\w]|$)`).test(message)
  return named ? message : `table ${table}: ${message}`
}
