/* The resolved tree is the ZetaSQL client's decoded protobuf (loose objects); these helpers read it structurally. */
/* eslint-disable @typescript-eslint/no-explicit-any */

/**
 * Walking ZetaSQL's resolved statements, shared by the cost model's pruning analysis (partition-pruning.ts) and
 * the emulator's `require_partition_filter` (bigquery-emulator/partition-filter.ts).
 */

/** The key an INSERT's target scan is visited under: it is written, not read. */
export const INSERT_TARGET = 'insertTarget'

/** Visits every object of the tree with the key it hangs under (an INSERT's target scan: INSERT_TARGET). */
export function walk(node: any, visit: (node: any, key: string) => void, key = ''): void {
  if (node === null || typeof node !== 'object') return
  if (Array.isArray(node)) {
    for (const item of node) walk(item, visit, key)
    return
  }
  visit(node, key)
  const isInsert = 'insertMode' in node && 'tableScan' in node
  for (const [k, v] of Object.entries(node)) walk(v, visit, isInsert && k === 'tableScan' ? INSERT_TARGET : k)
}

/** A column id, decoded from protobuf's 64-bit `{ low, high }` where it is one. */
export function columnId(id: any): number {
  return typeof id === 'object' && id !== null ? Number(id.low) : Number(id)
}

/** The concrete node under a oneof wrapper (`{ node: 'resolvedXNode', resolvedXNode: {...} }`, nested). */
export function unwrap(expr: any): { kind: string; node: any } {
  let kind = ''
  let node = expr
  while (node && typeof node.node === 'string' && node[node.node]) {
    kind = node.node
    node = node[node.node]
  }
  return { kind, node }
}

/** A function call's name (without `ZetaSQL:`) and arguments; undefined for any other expression. */
export function functionCall(expr: any): { name: string; args: any[] } | undefined {
  const { kind, node } = unwrap(expr)
  if (kind !== 'resolvedFunctionCallNode') return undefined
  let name = ''
  let args: any[] = []
  for (let x = node; x; x = x.parent) {
    if (x.function?.name && !name) name = String(x.function.name).replace(/^ZetaSQL:/, '')
    if (Array.isArray(x.argumentList) && args.length === 0) args = x.argumentList
  }
  return { name, args }
}

/** The conjuncts of a condition (`a AND b AND c`: a, b and c). */
export function conjuncts(expr: any): any[] {
  const call = functionCall(expr)
  if (call?.name === '$and') return call.args.flatMap(conjuncts)
  return [expr]
}
