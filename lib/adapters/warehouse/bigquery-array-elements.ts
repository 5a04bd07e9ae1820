import type { StagedColumn } from '../../core/batch.ts'
import { BatchRejectedError } from '../../core/errors.ts'
import type { TableSpec } from '../../core/table-spec.ts'
import { arrayElementType } from '../../sql/bigquery/bigquery-types.ts'
import { withDuckDbEngine } from '../duckdb/duckdb-engine.ts'

/** Keys named in the message, at most. */
const KEYS_SHOWN = 3

/**
 * BigQuery's arrays hold no NULL element: a load job meeting one fails without naming the row or its key, and
 * dropping the element would lose it silently. A staged array holding one is therefore refused before anything is
 * loaded, naming the table, the column and the first keys. (A NULL array is stored as an empty one: BigQuery has
 * no NULL arrays; docs/bigquery.md says so.) Reads the parts with DuckDB only when the batch has array columns.
 */
export async function assertNoNullArrayElements(
  paths: readonly string[],
  request: { readonly table: TableSpec; readonly batchId: string; readonly columns: readonly StagedColumn[] },
): Promise<void> {
  const arrays = request.columns.filter((c) => arrayElementType(c.type) !== undefined).map((c) => c.name)
  if (arrays.length === 0 || paths.length === 0) return
  await withDuckDbEngine({ threads: 1, memoryLimit: '128MB' }, async (connection) => {
    const files = `read_parquet([${paths.map((p) => `'${p.replaceAll("'", "''")}'`).join(', ')}])`
    for (const column of arrays) {
      const found = (
        await connection.runAndReadAll(
          `SELECT ${keySelect(request.table.key)} AS k, COUNT(*) OVER () AS n FROM ${files} ` +
            `WHERE len(list_filter(${quote(column)}, dimsync_e -> dimsync_e IS NULL)) > 0 LIMIT ${KEYS_SHOWN}`,
        )
      ).getRowObjectsJson()
      if (found.length === 0) continue
      const keys = found.map((row) => String(row.k))
      const more = Number(found[0]!.n) - keys.length
      throw new BatchRejectedError(
        request.table.name,
        request.batchId,
        `table ${request.table.name}: column "${column}" holds an array with a NULL element (key ${keys.join('; ')}` +
          `${more > 0 ? ` and ${more} more` : ''}), which BigQuery cannot store: its arrays hold no NULL ` +
          `elements; nothing was loaded. Drop the NULL elements in a query source (PostgreSQL: ` +
          `array_remove(${column}, NULL)), or keep the table on DuckDB`,
      )
    }
  })
}

/** `customer_id=1, tenant=a`: the key columns of a row as text. */
function keySelect(key: readonly string[]): string {
  return key
    .map((k) => `'${`${k}=`.replaceAll("'", "''")}' || COALESCE(CAST(${quote(k)} AS VARCHAR), 'NULL')`)
    .join(` || ', ' || `)
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}
