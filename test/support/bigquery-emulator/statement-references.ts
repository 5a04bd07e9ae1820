import { child, childList, pathNames, walk, type TreeNode } from './sql-tree.ts'

/** Where a table name appears, which decides how its text may be replaced. */
export type ReferencePlace =
  /** A FROM item or a DML target that may carry an alias (`FROM t`, `UPDATE t`, `DELETE t`). */
  | 'aliasable'
  /** A target that takes no alias (`INSERT INTO t`, `TRUNCATE TABLE t`). */
  | 'bare'
  /** A table function call `f(args)`. */
  | 'call'

/** A table, view or table function named by a statement, with the byte range of its name. */
export interface TableReference {
  readonly start: number
  readonly end: number
  /** The path split at dots, as BigQuery reads it (`\`p.d.t\`` and `p.d.t` are both [p, d, t]). */
  readonly parts: readonly string[]
  readonly place: ReferencePlace
  readonly aliased: boolean
  /** Table function calls: the end of the argument list (after `)`) and each argument's expression. */
  readonly callEnd?: number
  readonly args?: readonly TreeNode[]
}

export interface SystemVariableReference {
  readonly start: number
  readonly end: number
  readonly path: readonly string[]
}

export interface StatementReferences {
  readonly tables: readonly TableReference[]
  readonly systemVariables: readonly SystemVariableReference[]
  /** Names that are not tables in this statement: WITH aliases and range variables (aliases). */
  readonly localNames: ReadonlySet<string>
}

/**
 * The tables (FROM items, DML targets, table function calls) and system variables (`@@error.message`) a
 * statement or expression names, from its parse tree. DDL names (`CREATE TABLE x`, `DROP TABLE x`) are not
 * table references: they are read from the DDL's own fields.
 */
export function collectReferences(roots: readonly TreeNode[]): StatementReferences {
  const tables: TableReference[] = []
  const systemVariables: SystemVariableReference[] = []
  const localNames = new Set<string>()
  const reference = (
    path: TreeNode,
    place: ReferencePlace,
    aliased: boolean,
    extra: Partial<TableReference> = {},
  ) =>
    tables.push({
      start: path.start,
      end: path.end,
      parts: pathNames(path).flatMap((name) => name.split('.')),
      place,
      aliased,
      ...extra,
    })
  const alias = (node: TreeNode | undefined) => {
    // An alias is an ASTAlias (`AS x`, holding an identifier) or, in WITH, the identifier itself.
    const id =
      node === undefined ? undefined : (child(node, 'identifier')?.fields.idString ?? node.fields.idString)
    if (typeof id === 'string') localNames.add(id.toLowerCase())
    return node !== undefined
  }
  for (const root of roots) {
    walk(root, (node) => {
      switch (node.kind) {
        case 'astTablePathExpressionNode': {
          const path = child(node, 'pathExpr')
          const aliased = alias(child(node, 'alias'))
          if (path !== undefined) reference(path, 'aliasable', aliased)
          return true
        }
        case 'astTvfNode': {
          const name = child(node, 'name')
          const aliasNode = child(node, 'alias')
          alias(aliasNode)
          const args = childList(node, 'argumentEntries')
            .map((entry) => child(entry, 'expr'))
            .filter((e): e is TreeNode => e !== undefined)
          if (name !== undefined)
            reference(name, 'call', aliasNode !== undefined, { callEnd: callEnd(node, aliasNode), args })
          return true
        }
        case 'astUpdateStatementNode':
        case 'astDeleteStatementNode':
        case 'astMergeStatementNode': {
          const target = child(node, 'targetPath')
          const aliased = alias(child(node, 'alias'))
          if (target !== undefined) reference(target, 'aliasable', aliased)
          return true
        }
        case 'astAlterTableStatementNode': {
          // ZetaSQL resolves ALTER TABLE only against a table it can find.
          const target = child(node, 'path')
          if (target !== undefined) reference(target, 'bare', false)
          return true
        }
        case 'astInsertStatementNode':
        case 'astTruncateStatementNode': {
          const target = child(node, 'targetPath')
          if (target !== undefined) reference(target, 'bare', false)
          return true
        }
        case 'astTableSubqueryNode':
        case 'astUnnestExpressionWithOptAliasAndOffsetNode':
          alias(child(node, 'alias'))
          return true
        case 'astSystemVariableExprNode': {
          const path = child(node, 'path')
          systemVariables.push({
            start: node.start,
            end: node.end,
            path: path === undefined ? [] : pathNames(path),
          })
          return false
        }
        default: {
          // WITH entries are typed fields (no node kind): found through the query that holds them.
          const withClause = child(node, 'withClause')
          for (const entry of withClause === undefined ? [] : childList(withClause, 'with'))
            alias(child(entry, 'alias'))
          return true
        }
      }
    })
  }
  return { tables, systemVariables, localNames }
}

/** A call's text ends at its `)`: before its alias when it has one, else at the end of the node. */
function callEnd(call: TreeNode, alias: TreeNode | undefined): number {
  return alias === undefined ? call.end : alias.start
}
