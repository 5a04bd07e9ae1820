import type { CompiledScript } from '../../core/compiled-sql.ts'

/**
 * Merge statements that read the dimension without a filter on valid_to that can prune partitions. Every
 * statement a merge always runs filters the dimension to its open versions (test/lib/sql/bigquery-partition-filters
 * checks each one on ZetaSQL's resolved tree); those it runs only under a guard (the late path, type 1, 3 and 6
 * overwrites of every version of a key) and the mirror's and bitemporal tables' reads must see closed versions.
 */
// change_detection's check (render-version-column.ts) compares a row with the versions of its key before and after it.
const READS_CLOSED_VERSIONS = ['mirror: ', 'system time: ', 'version column: ']

/**
 * Guarded statements that run only on a dimension an earlier dimsync version created (it has no surrogate key
 * record yet): a dimension created since never runs them.
 */
const ONLY_ON_OLD_DIMENSIONS = ['surrogate keys: record the highest key given out']

/** Labels of the statements of `script` that read `dimension` (its SQL name) and may read closed versions. */
export function closedVersionReads(script: CompiledScript, dimension: string): string[] {
  return [...script.ddl, ...script.merge, ...script.after]
    .filter(
      (s) =>
        (s.sql.includes(dimension) || (s.onlyIf ?? '').includes(dimension)) &&
        !ONLY_ON_OLD_DIMENSIONS.some((prefix) => s.label.startsWith(prefix)) &&
        (s.onlyIf !== undefined || READS_CLOSED_VERSIONS.some((prefix) => s.label.startsWith(prefix))),
    )
    .map((s) => s.label)
}

/**
 * Why a dimension with BigQuery's `require_partition_filter` cannot be merged into: BigQuery refuses a statement
 * that reads it without a partition filter, and `reads` must read closed versions. Undefined when none does.
 */
export function partitionFilterProblem(
  table: string,
  dimension: { readonly project: string; readonly dataset: string; readonly name: string },
  reads: readonly string[],
): string | undefined {
  if (reads.length === 0) return undefined
  const name = `${dimension.project}.${dimension.dataset}.${dimension.name}`
  const quoted = [dimension.project, dimension.dataset, dimension.name].map((p) => `\`${p}\``).join('.')
  return (
    `table ${table}: dimension ${name} has require_partition_filter set, and ${reads.length === 1 ? 'this merge statement reads' : 'these merge statements read'} ` +
    `closed versions, which BigQuery refuses without a filter on valid_to: ${reads.join('; ')}; nothing was merged. ` +
    `Remove the option (ALTER TABLE ${quoted} SET OPTIONS (require_partition_filter = FALSE)); queries of the ` +
    'current versions can read the _current view, which filters valid_to'
  )
}
