import { TEMP, WORK as W, type MergeSql } from './merge-sql.ts'
import type { DerivedColumn } from '../core/dimension-layout.ts'
import { HAS_CARRIED, carriedAs, changedKeysWithCarried, historyNeeded } from './render-carried-values.ts'

/**
 * Types 0, 3 and 6, applied after the versions of a batch are written, to every version of the keys the batch
 * touched (in the source batch, or given a version by it): keep-first columns take the value of the key's first
 * version, `current_<col>` the value of its newest version, `previous_<col>` the value of its newest version whose
 * `<col>` differs from the newest value. All are read from the versions themselves, so late events and
 * corrections that reorder versions are reflected the same way.
 *
 * Reading every version of those keys reads the dimension's history, so a merge first sets the values of its new
 * versions from the key's current version before the batch (the open partition, render-carried-values.ts) and
 * recomputes them from history only when that is not enough: history must be read (historyNeeded), or a type 3
 * or 6 value of the key changed, so its older versions must take it too.
 */
export function renderColumnPolicies(m: MergeSql, options: { foundsDimension: boolean }): void {
  const layout = m.p.layout
  if (layout.keepFirst.length === 0 && layout.derived.length === 0) return
  if (options.foundsDimension) return renderFirstVersionPolicies(m)
  renderNewVersionPolicies(m)
  const conditions = [historyNeeded(m), derivedValuesChange(m)].filter((c) => c !== undefined)
  if (conditions.length > 0) m.guarded(conditions.join('\nOR '), () => renderPoliciesFromHistory(m))
}

/**
 * The batch founds its dimension: every key has one version, so it keeps its own first value (type 0), has no
 * value before a change (type 3: NULL, as inserted) and its newest value is its own (type 6).
 */
function renderFirstVersionPolicies(m: MergeSql): void {
  const current = m.p.layout.derived.filter((c) => c.kind === 'current')
  if (current.length === 0) return
  m.emit(
    'column policies: newest value of the first versions (type 6)',
    `UPDATE ${m.dim} AS d SET ${current.map((c) => `${m.q(c.name)} = d.${m.q(c.from)}`).join(', ')}\n` +
      `WHERE ${m.current('d')} AND (${current.map((c) => `d.${m.q(c.name)} IS DISTINCT FROM d.${m.q(c.from)}`).join(' OR ')})`,
  )
}

/** The value of derived column `c` on the key's new version `d`, given its carried values `l`. */
function newVersionValue(m: MergeSql, c: DerivedColumn): string {
  const q = (name: string) => m.q(name)
  if (c.kind === 'current') return `d.${q(c.from)}`
  // The value before the last change: the current version's, if the new version changed it, else unchanged.
  return (
    `CASE WHEN NOT l.${q(HAS_CARRIED)} THEN NULL WHEN d.${q(c.from)} IS DISTINCT FROM l.${q(carriedAs(c.from))} ` +
    `THEN l.${q(carriedAs(c.from))} ELSE l.${q(carriedAs(c.name))} END`
  )
}

/**
 * The new (open) version of each key the batch changed takes its key's values: type 0 from the current version
 * before the batch (a new key keeps its own), types 3 and 6 from it and the new version.
 */
function renderNewVersionPolicies(m: MergeSql): void {
  const q = (name: string) => m.q(name)
  const sets: (readonly [column: string, value: string])[] = [
    ...m.p.layout.keepFirst.map(
      (c) =>
        [
          c.name,
          `CASE WHEN l.${q(HAS_CARRIED)} THEN l.${q(carriedAs(c.name))} ELSE d.${q(c.name)} END`,
        ] as const,
    ),
    ...m.p.layout.derived.map((c) => [c.name, newVersionValue(m, c)] as const),
  ]
  m.emit(
    'column policies: values of the new versions',
    `UPDATE ${m.dim} AS d SET ${sets.map(([c, v]) => `${q(c)} = ${v}`).join(', ')}\n` +
      `FROM (\n  ${changedKeysWithCarried(m)}\n) l\n` +
      `WHERE ${m.current('d')} AND d.${q(m.names.batchId)} = ${m.str(m.p.batchId)} AND ${m.keyEq('d', 'l')}\n` +
      `  AND (${sets.map(([c, v]) => `d.${q(c)} IS DISTINCT FROM (${v})`).join(' OR ')})`,
  )
}

/**
 * SQL condition over the batch's tables: a type 3 or 6 value of a key changed (its older versions must take it),
 * read after the new versions took theirs: a new version of this batch whose value differs from its key's current
 * version before the batch. A derived column of an untracked column may change without a new version: then always.
 */
function derivedValuesChange(m: MergeSql): string | undefined {
  const derived = m.p.layout.derived
  if (derived.length === 0) return undefined
  const tracked = new Set(m.p.layout.tracked.map((c) => c.name))
  if (derived.some((c) => !tracked.has(c.from))) return 'TRUE'
  const q = (name: string) => m.q(name)
  return (
    `EXISTS (SELECT 1 FROM ${m.dim} d JOIN (\n  ${changedKeysWithCarried(m)}\n) l ON ${m.keyEq('d', 'l')}\n` +
    `  WHERE ${m.current('d')} AND d.${q(m.names.batchId)} = ${m.str(m.p.batchId)} AND l.${q(HAS_CARRIED)}\n` +
    `  AND (${derived.map((c) => `d.${q(c.name)} IS DISTINCT FROM l.${q(carriedAs(c.name))}`).join(' OR ')}))`
  )
}

/** Every version of the keys the batch touched takes its key's values, read from all its versions. */
function renderPoliciesFromHistory(m: MergeSql): void {
  const layout = m.p.layout
  const n = m.names
  const q = (name: string) => m.q(name)
  const touched = m.tmp(TEMP.policyKeys)
  m.emit(
    'column policies: keys the batch touched',
    m.d.createTempTableAs(
      TEMP.policyKeys,
      `SELECT DISTINCT ${m.keyList('k')} FROM (\n` +
        `  SELECT ${m.keyList('s')} FROM ${m.stage} s\n  UNION ALL\n` +
        `  SELECT ${m.keyList('d')} FROM ${m.dim} d WHERE d.${q(n.batchId)} = ${m.str(m.p.batchId)}\n) k`,
    ),
  )
  const versionsOfTouched = `${m.dim} x WHERE EXISTS (SELECT 1 FROM ${touched} t WHERE ${m.keyEq('t', 'x')})`
  const firstOrLast = (order: 'ASC' | 'DESC', columns: readonly string[]) =>
    m.d.firstPerGroup({
      select: `SELECT ${[...m.keys, ...columns].map((c) => m.col('x', c)).join(', ')} FROM ${versionsOfTouched}`,
      separator: '\n  ',
      partitionBy: m.keyList('x'),
      orderBy: `x.${q(n.validFrom)} ${order}, x.${q(n.surrogateKey)} ${order}`,
    })
  const update = (label: string, sets: readonly (readonly [target: string, value: string])[], from: string) =>
    m.emit(
      label,
      `UPDATE ${m.dim} AS d SET ${sets.map(([t, v]) => `${q(t)} = l.${q(v)}`).join(', ')}\n` +
        `FROM (\n  ${from}\n) l\n` +
        `WHERE ${m.keyEq('d', 'l')} AND (${sets.map(([t, v]) => `d.${q(t)} IS DISTINCT FROM l.${q(v)}`).join(' OR ')})`,
    )

  if (layout.keepFirst.length > 0) {
    const names = layout.keepFirst.map((c) => c.name)
    update(
      'column policies: keep the first value (type 0)',
      names.map((c) => [c, c] as const),
      firstOrLast('ASC', names),
    )
  }
  const current = layout.derived.filter((c) => c.kind === 'current')
  if (current.length > 0) {
    update(
      'column policies: newest value on every version (type 6)',
      current.map((c) => [c.name, c.from] as const),
      firstOrLast(
        'DESC',
        current.map((c) => c.from),
      ),
    )
  }
  for (const c of layout.derived.filter((d) => d.kind === 'previous')) {
    // The newest value of each touched key, then the newest of its versions holding another value (NULL if none).
    const newest = firstOrLast('DESC', [c.from])
    const before = m.d.firstPerGroup({
      select:
        `SELECT ${m.keyList('x')}, x.${q(c.from)} AS ${q(W.before)} FROM ${m.dim} x JOIN (${newest}) nw ON ${m.keyEq('x', 'nw')}\n` +
        `    WHERE x.${q(c.from)} IS DISTINCT FROM nw.${q(c.from)}`,
      separator: '\n    ',
      partitionBy: m.keyList('x'),
      orderBy: `x.${q(n.validFrom)} DESC, x.${q(n.surrogateKey)} DESC`,
    })
    const sets = [[c.name, W.before] as const]
    update(
      `column policies: value before the last change of ${c.from} (type 3)`,
      sets,
      `SELECT ${m.keyList('t')}, b.${q(W.before)} FROM ${touched} t LEFT JOIN (\n    ${before}\n  ) b ON ${m.keyEq('b', 't')}`,
    )
  }
}
