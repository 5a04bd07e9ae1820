import type { ColumnRename, TableMode, TableSpec } from '../core/table-spec.ts'
import type { TableDocument } from './config-schema.ts'
import type { IssueList, Path } from './issue-list.ts'
import { show } from './messages.ts'

/** What the renames are checked against: the table's other resolved options. */
export interface RenamedContext {
  readonly at: (...rest: PropertyKey[]) => Path
  readonly issues: IssueList
  readonly mode: TableMode
  readonly key: readonly string[]
  readonly exclude: readonly string[]
  readonly validFrom: TableSpec['validFrom']
  readonly changeFeed: boolean
  readonly systemTime: TableSpec['systemTime']
}

/**
 * `renamed: { old_name: new_name }`. A key column is never renamed (it identifies the versions); two old names
 * cannot take one new name. Only history tables whose versions start at the extraction time: a capture log (a
 * valid_from column, a change feed) keeps past states as hashes over the column names, which cannot be
 * recomputed; a bitemporal table never rewrites a row, and the rename rehashes the current versions.
 */
export function resolveRenamed(
  document: TableDocument['renamed'],
  ctx: RenamedContext,
): readonly ColumnRename[] | undefined {
  if (document === undefined) return undefined
  const renames = Object.entries(document).map(([from, to]) => ({ from, to }))
  const where = ctx.at('renamed')
  const refuse = (why: string) => {
    ctx.issues.add(where, why)
    return undefined
  }
  if (renames.length === 0) return undefined
  if (ctx.mode !== 'history') return refuse(`only applies to mode history (this table is mode ${ctx.mode})`)
  if (ctx.changeFeed || ctx.validFrom.kind === 'column')
    return refuse(
      'does not apply to a table whose valid_from is a source column (or a change feed): its capture log keeps ' +
        'past states hashed with the old column name, which cannot be hashed again; load the table into a new ' +
        'target to rename a column',
    )
  if (ctx.systemTime !== undefined)
    return refuse('does not apply to a bitemporal table (system_time: true): its rows are never rewritten')
  const lower = (names: readonly string[]) => new Set(names.map((n) => n.toLowerCase()))
  const keys = lower(ctx.key)
  const excluded = lower(ctx.exclude)
  const olds = lower(renames.map((r) => r.from))
  const seen = new Map<string, string>()
  for (const { from, to } of renames) {
    const at = ctx.at('renamed', from)
    if (keys.has(from.toLowerCase()) || keys.has(to.toLowerCase()))
      ctx.issues.add(
        at,
        `key column ${show(keys.has(from.toLowerCase()) ? from : to)} cannot be renamed: the key identifies the ` +
          'versions; load the table into a new target to change its key',
      )
    else if (from.toLowerCase() === to.toLowerCase())
      ctx.issues.add(at, `renames ${show(from)} to the same name`)
    else if (olds.has(to.toLowerCase()))
      ctx.issues.add(at, `${show(to)} is itself renamed; rename each column once, to its newest name`)
    else if (excluded.has(to.toLowerCase()))
      ctx.issues.add(at, `${show(to)} is in exclude, so it is not stored`)
    const other = seen.get(to.toLowerCase())
    if (other !== undefined) ctx.issues.add(at, `${show(other)} is renamed to ${show(to)} too`)
    seen.set(to.toLowerCase(), from)
  }
  return renames
}
