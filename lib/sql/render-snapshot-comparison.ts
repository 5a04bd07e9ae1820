import type { SqlDialect } from './dialect.ts'
import { MergeSql, type MergePlan } from './merge-sql.ts'
import { renderRowHash } from './row-hash.ts'
import { liveVersionAt } from './version-predicates.ts'

export interface SnapshotComparison {
  /** Also compare the type 1 columns: right only while no later snapshot has overwritten them. */
  readonly withType1: boolean
}

/**
 * One row, `differences`: how many keys of the staged snapshot (already loaded into the plan's stage) would change
 * the dimension as it stood at the snapshot's extraction time. Zero means merging it again changes nothing: every
 * live staged row matches, by key and row hash (and type 1 values when asked), the live version valid at that
 * instant, and, where absence or a soft delete deletes, no key live then is missing or deleted in the snapshot.
 * Set-based, in the dialect of the warehouse (the same statement on DuckDB and BigQuery).
 */
export function renderSnapshotDifferences(
  d: SqlDialect,
  plan: MergePlan,
  comparison: SnapshotComparison,
): string {
  const m = new MergeSql(d, plan)
  const { table, layout } = plan
  const at = liveVersionAt(d, table, d.timestampLiteral(plan.extractedAt), 'd')
  const soft = m.softDeleted('s')
  const live = soft === undefined ? 'TRUE' : `NOT (${soft})`
  const type1 = comparison.withType1
    ? layout.type1.map((c) => {
        const [s, v] = [m.col('s', c.name), m.col('d', c.name)]
        return ` AND (${s} = ${v} OR (${s} IS NULL AND ${v} IS NULL))`
      })
    : []
  const sameVersion =
    `${at} AND ${m.keyEq('s', 'd')} AND d.${m.q(table.columns.rowHash)} = ${renderRowHash(d, layout.tracked, 's')}` +
    type1.join('')
  const versions = versionsOf(m, comparison)
  const changed = `SELECT COUNT(*) FROM ${m.stage} s WHERE ${live} AND NOT EXISTS (SELECT 1 FROM ${versions} d WHERE ${sameVersion})`
  return `SELECT (${changed}) + (${deletedKeys(m, versions, at, live, soft)}) AS differences`
}

/**
 * The versions the dimension held. A mirror keeps only current rows: a row a later snapshot replaced or deleted
 * is in the retired-versions table, with its window, hash and deletion flag (a mirror's values are all type 1,
 * compared only while no later snapshot is merged, when every row of the snapshot's time is still current).
 */
function versionsOf(m: MergeSql, comparison: SnapshotComparison): string {
  const retired = m.p.objects.retired
  if (m.p.table.mode !== 'mirror' || retired === undefined || comparison.withType1) return m.dim
  const n = m.names
  const columns = [...m.keys, n.validFrom, n.validTo, n.isDeleted, n.rowHash].map((c) => m.q(c)).join(', ')
  return `(SELECT ${columns} FROM ${m.dim} UNION ALL SELECT ${columns} FROM ${m.d.table(retired)})`
}

/** Keys live at the instant that the snapshot would delete: absent from a full extract, or soft-deleted. */
function deletedKeys(
  m: MergeSql,
  versions: string,
  at: string,
  live: string,
  soft: string | undefined,
): string {
  const { table } = m.p
  if (table.deletes === 'ignore') return '0'
  if (m.absenceDeletes)
    return `SELECT COUNT(*) FROM ${versions} d WHERE ${at} AND NOT EXISTS (SELECT 1 FROM ${m.stage} s WHERE ${m.keyEq('s', 'd')} AND ${live})`
  if (soft === undefined) return '0'
  return `SELECT COUNT(*) FROM ${versions} d WHERE ${at} AND EXISTS (SELECT 1 FROM ${m.stage} s WHERE ${m.keyEq('s', 'd')} AND ${soft})`
}
