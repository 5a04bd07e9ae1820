/* The resolved tree is the analyzer client's decoded protobuf (loose objects); this walk reads it structurally. */
/* eslint-disable @typescript-eslint/no-explicit-any */
import { columnId, conjuncts, functionCall, INSERT_TARGET, unwrap, walk } from './resolved-tree.ts'

/**
 * The scans of table `table` in a resolved statement (ZetaSQL's tree, as ZetaSqlAnalyzer.analyze returns it) that
 * BigQuery cannot prune to the open versions' partition: the scan's `partitionColumn` is not constrained by a
 * conjunct of a WHERE, filter or join condition of the form `column IS NULL` or `column = <literal>`. Statements that
 * only define objects (views, table functions) read nothing when they run and have no scans here.
 * Returns one line per unpruned scan, naming its alias.
 */
export function unprunedScans(resolved: unknown, table: string, partitionColumn: string): string[] {
  return tableScans(resolved, { table, column: partitionColumn })
    .filter((s) => s.table.toLowerCase() === table.toLowerCase() && !s.pruned)
    .map((s) => `scan of ${table} (as ${s.alias}) without a filter on ${partitionColumn}`)
}

/** One read of a table in a resolved statement. */
export interface TableScan {
  /** The table's name as the catalog holds it (last part of its path). */
  readonly table: string
  readonly alias: string
  /** The columns the scan reads (all of the table's unless the analyzer pruned unused columns), with their types. */
  readonly columns: readonly { readonly name: string; readonly typeKind: string }[]
  /** The partition column of `partition.table` is pinned to one partition (always false for other tables). */
  readonly pruned: boolean
  /** The scan is the target of an UPDATE or DELETE (whose partitions it rewrites). */
  readonly rewritten: boolean
  /**
   * The partition column of `readFrom.table`, or of `partition.table`, is bounded below by a constant (`column >=
   * <literal, script variable or function of them>`): BigQuery reads the partitions from that value on (and, for a
   * column holding a sentinel above every instant, that sentinel's partition; never its NULL partition). Always
   * false for other tables.
   */
  readonly readFrom: boolean
}

/**
 * Every read of a table in a resolved statement (the INSERT target is not a read); `partition` names the table
 * whose scans are checked for a filter pinning its partition column (see unprunedScans) or bounding it below,
 * `readFrom` another table whose scans are checked for a lower bound.
 */
export function tableScans(
  resolved: unknown,
  partition: { readonly table: string; readonly column: string },
  readFrom?: { readonly table: string; readonly column: string },
): TableScan[] {
  const root = resolved as any
  const kind = unwrap(root).kind
  if (/Create(View|TableFunction|MaterializedView)/i.test(kind)) return []
  const rewrites = /Update|Delete/i.test(kind)
  const scans: (Omit<TableScan, 'pruned' | 'readFrom'> & {
    pinned: number | undefined
    from: number | undefined
  })[] = []
  const pruned = new Set<number>()
  const bounded = new Set<number>()
  walk(root, (node, key) => {
    if (node?.table?.name !== undefined && Array.isArray(node.columnIndexList) && key !== INSERT_TARGET) {
      const columns: any[] = node.parent?.columnList ?? []
      const isPartitioned = node.table.name.toLowerCase() === partition.table.toLowerCase()
      const column = isPartitioned
        ? columns.find((c) => c.name?.toLowerCase() === partition.column.toLowerCase())
        : undefined
      const isReadFrom = node.table.name.toLowerCase() === readFrom?.table.toLowerCase()
      const fromColumn = isReadFrom
        ? columns.find((c) => c.name?.toLowerCase() === readFrom!.column.toLowerCase())
        : column
      scans.push({
        table: String(node.table.name),
        alias: node.alias || node.table.name,
        columns: columns.map((c) => ({ name: String(c.name), typeKind: String(c.type?.typeKind) })),
        pinned: column === undefined ? undefined : columnId(column.columnId),
        from: fromColumn === undefined ? undefined : columnId(fromColumn.columnId),
        rewritten: rewrites && key === 'tableScan',
      })
    }
    if (key === 'filterExpr' || key === 'whereExpr' || key === 'joinExpr')
      for (const conjunct of conjuncts(node)) {
        const pinned = pinnedColumn(conjunct)
        if (pinned !== undefined) pruned.add(pinned)
        const from = lowerBoundedColumn(conjunct)
        if (from !== undefined) bounded.add(from)
      }
  })
  return scans.map(({ pinned, from, ...s }) => ({
    ...s,
    pruned: pinned !== undefined && pruned.has(pinned),
    readFrom: from !== undefined && bounded.has(from),
  }))
}

/** The column a conjunct pins to one partition: `col IS NULL`, `col = literal` or `literal = col`. */
function pinnedColumn(conjunct: any): number | undefined {
  const call = functionCall(conjunct)
  if (call === undefined) return undefined
  const parts = call.args.map(unwrap)
  const column = (p: { kind: string; node: any }) =>
    p.kind === 'resolvedColumnRefNode' ? columnId(p.node.column.columnId) : undefined
  if (call.name === '$is_null' && parts.length === 1) return column(parts[0]!)
  if (call.name === '$equal' && parts.length === 2) {
    const [a, b] = parts as [{ kind: string; node: any }, { kind: string; node: any }]
    if (b.kind === 'resolvedLiteralNode') return column(a)
    if (a.kind === 'resolvedLiteralNode') return column(b)
  }
  return undefined
}

/** The column a conjunct bounds below by a constant: `col >= c`, `col > c`, `c <= col` or `c < col`. */
function lowerBoundedColumn(conjunct: any): number | undefined {
  const call = functionCall(conjunct)
  if (call === undefined || call.args.length !== 2) return undefined
  const [a, b] = call.args.map(unwrap) as [{ kind: string; node: any }, { kind: string; node: any }]
  const column = (p: { kind: string; node: any }) =>
    p.kind === 'resolvedColumnRefNode' ? columnId(p.node.column.columnId) : undefined
  if (/^\$greater(_or_equal)?$/.test(call.name) && constant(b)) return column(a)
  if (/^\$less(_or_equal)?$/.test(call.name) && constant(a)) return column(b)
  return undefined
}

/**
 * A literal, a script variable, or a function of them (`TIMESTAMP_ADD(variable, INTERVAL -1 MILLISECOND)`): BigQuery
 * evaluates it before reading, so a filter comparing the partition column with it prunes.
 */
function constant(p: { kind: string; node: any }): boolean {
  if (p.kind === 'resolvedLiteralNode' || p.kind === 'resolvedConstantNode') return true
  const call =
    p.kind === 'resolvedFunctionCallNode' ? functionCall({ node: p.kind, [p.kind]: p.node }) : undefined
  return call !== undefined && call.args.length > 0 && call.args.map(unwrap).every(constant)
}

/**
 * Window function groups of a resolved statement that number rows with `ROW_NUMBER()` and no `PARTITION BY`: one
 * worker computes them over every input row.
 */
export function serialRowNumbers(resolved: unknown): number {
  let found = 0
  walk(resolved, (node) => {
    if (!Array.isArray(node.analyticFunctionList) || !('partitionBy' in node) || node.partitionBy) return
    if (JSON.stringify(node.analyticFunctionList).includes('ZetaSQL:row_number')) found++
  })
  return found
}
