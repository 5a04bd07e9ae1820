/* The resolved tree is the ZetaSQL client's decoded protobuf (loose objects); this walk reads it structurally. */
/* eslint-disable @typescript-eslint/no-explicit-any */
import { columnId, conjuncts, INSERT_TARGET, walk } from '../zetasql/resolved-tree.ts'
import { invalidQuery } from './api-errors.ts'
import type { StoredTable } from './table-store.ts'

/**
 * BigQuery's `require_partition_filter`: a statement that reads such a table must filter it on its partitioning
 * column in a way that can prune partitions, or it is refused ("Cannot query over table 'd.t' without a filter over
 * column(s) 'c' that can be used for partition elimination"). A scan counts as filtered when some conjunct of a
 * WHERE, filter, join or MERGE condition of the statement references the scan's partitioning column and nothing
 * else: no other column and no subquery (`c IS NULL`, `c >= <constant or script variable>`, `DATE(c) = …`,
 * `c IS NULL OR c > …`). An INSERT's target is written, not read.
 *
 * `tables`: the statement's tables by the name ZetaSQL's catalog knows them by (lower case).
 */
export function assertPartitionFilters(resolved: unknown, tables: ReadonlyMap<string, StoredTable>): void {
  const required = new Map<string, { table: StoredTable; column: string }>()
  for (const [name, table] of tables) {
    const column = table.metadata.timePartitioning?.field ?? table.metadata.rangePartitioning?.field
    if (table.metadata.requirePartitionFilter === true && column !== undefined)
      required.set(name, { table, column })
  }
  if (required.size === 0) return
  const scans: { name: string; columnId: number | undefined }[] = []
  const filtered = new Set<number>()
  walk(resolved, (node, key) => {
    if (node?.table?.name !== undefined && Array.isArray(node.columnIndexList) && key !== INSERT_TARGET) {
      const name = String(node.table.name).toLowerCase()
      const need = required.get(name)
      if (need !== undefined) {
        const columns: any[] = node.parent?.columnList ?? []
        const column = columns.find((c) => String(c.name).toLowerCase() === need.column.toLowerCase())
        scans.push({ name, columnId: column === undefined ? undefined : columnId(column.columnId) })
      }
    }
    if (key === 'filterExpr' || key === 'whereExpr' || key === 'joinExpr' || key === 'mergeExpr')
      for (const conjunct of conjuncts(node)) {
        const only = onlyColumn(conjunct)
        if (only !== undefined) filtered.add(only)
      }
  })
  for (const scan of scans) {
    if (scan.columnId !== undefined && filtered.has(scan.columnId)) continue
    const { table, column } = required.get(scan.name)!
    throw invalidQuery(
      `Cannot query over table '${table.ref.datasetId}.${table.ref.tableId}' without a filter over column(s) ` +
        `'${column}' that can be used for partition elimination`,
    )
  }
}

/** The one column a conjunct references, when it references exactly one and reads no subquery. */
function onlyColumn(conjunct: any): number | undefined {
  const columns = new Set<number>()
  let subquery = false
  walk(conjunct, (node, key) => {
    if (key === 'resolvedSubqueryExprNode') subquery = true
    if (key === 'resolvedColumnRefNode' && node.column?.columnId !== undefined)
      columns.add(columnId(node.column.columnId))
  })
  if (subquery || columns.size !== 1) return undefined
  return [...columns][0]
}
