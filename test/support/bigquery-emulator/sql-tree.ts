import type { Proto } from './zetasql-service.ts'

/**
 * Helpers over ZetaSQL's parse tree as the gRPC service answers it: an abstract node is a wrapper
 * `{ node: 'astQueryStatementNode', astQueryStatementNode: {...} }`, a node's own fields sit next to `parent`
 * (the fields of its base classes, down to `parseLocationRange`: byte offsets in the parsed text).
 */

/** A parse tree node with its concrete kind, its fields (base classes' included) and its byte range. */
export interface TreeNode {
  readonly kind: string
  readonly fields: Readonly<Record<string, Proto>>
  readonly start: number
  readonly end: number
}

/**
 * Unwraps `{ node: kind, [kind]: ... }` chains; answers undefined for null or non-node values. Parse trees are
 * shared and never changed (see ZetaSqlService), so each value's node is built once.
 */
export function treeNode(value: Proto): TreeNode | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined
  const known = treeNodes.get(value)
  if (known !== undefined) return known ?? undefined
  const built = newTreeNode(value)
  treeNodes.set(value, built ?? null)
  return built
}
const treeNodes = new WeakMap<object, TreeNode | null>()

function newTreeNode(value: Proto): TreeNode | undefined {
  let kind = ''
  let node = value
  while (typeof node.node === 'string' && node[node.node] && typeof node[node.node] === 'object') {
    kind = node.node
    node = node[node.node]
  }
  const fields: Record<string, Proto> = {}
  let range: { start: number; end: number } | undefined
  for (let level = node; level && typeof level === 'object'; level = level.parent) {
    for (const [key, field] of Object.entries(level as Record<string, Proto>)) {
      if (key === 'parent') continue
      if (key === 'parseLocationRange') {
        range ??= { start: Number(field.start), end: Number(field.end) }
        continue
      }
      if (!(key in fields)) fields[key] = field
    }
  }
  if (range === undefined) return undefined
  return { kind, fields, start: range.start, end: range.end }
}

/** The child nodes of a node (every object-valued field, arrays flattened), in field order. */
export function children(node: TreeNode): readonly TreeNode[] {
  let out = childrenOf.get(node)
  if (out === undefined) childrenOf.set(node, (out = newChildren(node)))
  return out
}
const childrenOf = new WeakMap<TreeNode, readonly TreeNode[]>()

function newChildren(node: TreeNode): TreeNode[] {
  const out: TreeNode[] = []
  for (const field of Object.values(node.fields)) {
    if (field === null || typeof field !== 'object') continue
    for (const item of Array.isArray(field) ? field : [field]) {
      const child = treeNode(item)
      if (child !== undefined) out.push(child)
    }
  }
  return out
}

/** Calls `visit` on `node` and every descendant, depth first; `visit` answering false skips the subtree. */
export function walk(node: TreeNode, visit: (node: TreeNode) => boolean | void): void {
  if (visit(node) === false) return
  for (const child of children(node)) walk(child, visit)
}

/** The field `name` of a node as a node, or undefined. */
export function child(node: TreeNode, name: string): TreeNode | undefined {
  return treeNode(node.fields[name])
}

/** The field `name` of a node as a list of nodes (a repeated field). */
export function childList(node: TreeNode, name: string): TreeNode[] {
  const field = node.fields[name]
  if (!Array.isArray(field)) return []
  return field.map((item) => treeNode(item)).filter((n): n is TreeNode => n !== undefined)
}

/** The identifiers of a path expression node (`names[].idString`), each as written (`p.d.t` stays one). */
export function pathNames(node: TreeNode): string[] {
  return childList(node, 'names').map((n) => String(n.fields.idString))
}

/** The statement list of a script or block (`statementListNode.statementList` or a statement list node). */
export function statementList(node: TreeNode | Proto): TreeNode[] {
  const holder = 'kind' in node && 'fields' in node ? (node as TreeNode).fields : (node as Proto)
  const list = holder.statementListNode?.statementList ?? holder.statementList ?? []
  return list.map((item: Proto) => treeNode(item)).filter((n: TreeNode | undefined): n is TreeNode => !!n)
}

/** Byte offset → 1-based line and column (in bytes) of `text`. */
export function lineAndColumn(text: Buffer, offset: number): { line: number; column: number } {
  let line = 1
  let lineStart = 0
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === 0x0a) {
      line++
      lineStart = i + 1
    }
  }
  return { line, column: offset - lineStart + 1 }
}
