import type {
  ChangeDetectionSpec,
  ColumnPolicies,
  TableMode,
  TableSpec,
  TrackedSpec,
} from '../core/table-spec.ts'
import type { TableDocument } from './config-schema.ts'
import type { IssueList, Path } from './issue-list.ts'
import { show } from './messages.ts'

/** What the version column is checked against: the table's other resolved options. */
export interface ChangeDetectionContext {
  readonly at: (...rest: PropertyKey[]) => Path
  readonly issues: IssueList
  readonly mode: TableMode
  readonly key: readonly string[]
  readonly tracked: TrackedSpec
  readonly exclude: readonly string[]
  readonly policies: ColumnPolicies | undefined
  readonly changeFeed: boolean
  readonly partialUpdates: boolean
  readonly systemTime: TableSpec['systemTime']
  /** The valid_from column, when versions start at a source column's time. */
  readonly validFromColumn: string | undefined
  /** The cursor of an incremental extract. */
  readonly cursor: string | undefined
}

/**
 * `change_detection: { version_column, on_same_version }`. The version column must be a tracked column, so that
 * its growth alone changes the row hash and opens a version (an incremental extract's cursor, otherwise never
 * tracked, is tracked when it is the version column), or the valid_from column (its growth is a later change time). Change feeds are refused: each event is already a
 * change with its own time, ordered by the sequence. Partial updates are refused (a row's version would be
 * compared before its missing values are filled in), and so is overwriting in place where rows are never
 * rewritten (system_time) or where other columns derive from a version's values (previous_value, current_value).
 */
export function resolveChangeDetection(
  document: TableDocument['change_detection'],
  ctx: ChangeDetectionContext,
): ChangeDetectionSpec | undefined {
  if (document === undefined) return undefined
  const column = document.version_column
  const onSameVersion = document.on_same_version ?? 'refuse'
  const where = ctx.at('change_detection', 'version_column')
  const lower = column.toLowerCase()
  const has = (names: readonly string[]) => names.some((name) => name.toLowerCase() === lower)
  const problem = (path: Path, message: string) => ctx.issues.add(path, message)
  const isValidFrom = ctx.validFromColumn?.toLowerCase() === lower
  const isCursor = ctx.cursor?.toLowerCase() === lower
  if (ctx.mode !== 'history') {
    problem(ctx.at('change_detection'), `only applies to mode history (this table is mode ${ctx.mode})`)
    return undefined
  }
  if (ctx.changeFeed)
    problem(
      ctx.at('change_detection'),
      'does not apply to a change feed (extract: { mode: changes }): each event is a change at its own time, ' +
        'ordered by the sequence; leave change_detection out',
    )
  else if (ctx.partialUpdates)
    problem(
      ctx.at('change_detection'),
      'does not apply with partial updates (ignore_null_updates, columns_to_update): a row is compared before ' +
        'its unchanged values are filled in',
    )
  if (has(ctx.key)) problem(where, `key column ${show(column)} cannot be the version column`)
  else if (has(ctx.exclude)) problem(where, `${show(column)} is in exclude, so it is not stored`)
  else if (has(ctx.policies?.keepFirst ?? []))
    problem(where, `${show(column)} is in keep_first: it never changes, so it cannot decide a new version`)
  else if (isValidFrom || (isCursor && ctx.tracked.kind === 'all_except' && !has(ctx.tracked.columns))) {
    // Its value is the version's start (not stored), or the cursor, tracked because it is the version column.
  } else if (ctx.tracked.kind === 'list' ? !has(ctx.tracked.columns) : has(ctx.tracked.columns))
    problem(
      where,
      `${show(column)} is not tracked: the version column must be tracked, so that its growth opens a version ` +
        (ctx.tracked.kind === 'list' ? '(add it to tracked)' : '(take it out of tracked.all_except)'),
    )
  if (onSameVersion === 'overwrite') {
    const overwrite = ctx.at('change_detection', 'on_same_version')
    if (ctx.systemTime !== undefined)
      problem(
        overwrite,
        'overwrite rewrites a version in place, which a bitemporal table (system_time: true) never does; use refuse',
      )
    const derived = [...(ctx.policies?.previousValue ?? []), ...(ctx.policies?.currentValue ?? [])]
    if (derived.length > 0)
      problem(
        overwrite,
        `overwrite rewrites a version in place, but previous_value and current_value (${derived.join(', ')}) ` +
          'are derived from the values of versions; use refuse',
      )
  }
  return { versionColumn: column, onSameVersion }
}
