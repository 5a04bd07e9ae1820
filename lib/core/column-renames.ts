import type { StagedColumn } from './batch.ts'
import type { ColumnRename, TableSpec } from './table-spec.ts'

/** A column of the dimension as described by the warehouse (name and type). */
interface NamedColumn {
  readonly name: string
}

/**
 * The renames (`renamed:`) a merge applies to the dimension before anything else, each column's `previous_` and
 * `current_` columns included: those whose old name the dimension still has. A rename already applied (the
 * dimension has the new name and not the old) is nothing to do, so running again with the same config changes
 * nothing. Throws, through `reject`, when the source still sends the old name or lacks the new one, when the
 * dimension has both names, or neither. A dimension not created yet has nothing to rename.
 */
export function plannedRenames(
  table: TableSpec,
  staged: readonly StagedColumn[],
  existing: readonly NamedColumn[] | undefined,
  reject: (message: string) => never,
): readonly ColumnRename[] {
  const renames = table.renamed ?? []
  if (renames.length === 0 || existing === undefined) return []
  const inSource = new Set(staged.map((c) => c.name))
  const inDimension = new Set(existing.map((c) => c.name))
  const out: ColumnRename[] = []
  for (const { from, to } of renames) {
    const way = `renamed: { ${from}: ${to} }`
    if (inSource.has(from))
      reject(
        `${way}, but the source still sends "${from}"${inSource.has(to) ? ` beside "${to}"` : ''}; nothing was ` +
          `written. Take the rename out of the config until the source renames the column`,
      )
    if (!inSource.has(to))
      reject(`${way}, but the source does not send "${to}"; nothing was written. Check the new name`)
    const hasOld = inDimension.has(from)
    const hasNew = inDimension.has(to)
    if (hasOld && hasNew)
      reject(
        `${way}, but dimension ${table.target} already has both "${from}" and "${to}": renaming would overwrite ` +
          `"${to}"; nothing was written. Take the rename out of the config (the source's "${to}" then fills the ` +
          `existing column), or drop the column "${to}" from the dimension first`,
      )
    if (!hasOld && !hasNew)
      reject(
        `${way}, but dimension ${table.target} has no column "${from}" (nor "${to}"); nothing was written. ` +
          'Check the old name',
      )
    if (!hasOld) continue
    out.push({ from, to })
    for (const prefix of ['previous_', 'current_'])
      if (inDimension.has(prefix + from) && !inDimension.has(prefix + to))
        out.push({ from: prefix + from, to: prefix + to })
  }
  return out
}

/** `existing` as it is once `renames` are applied. */
export function afterRenames<T extends NamedColumn>(
  existing: readonly T[],
  renames: readonly ColumnRename[],
): readonly T[] {
  const to = new Map(renames.map((r) => [r.from, r.to]))
  return existing.map((c) => (to.has(c.name) ? { ...c, name: to.get(c.name)! } : c))
}
