import { TEMP, type MergeSql } from './merge-sql.ts'

/**
 * Types 0, 3 and 6, applied after the versions of a batch are written, to every version of the keys the batch
 * touched (in the source batch, or given a version by it): keep-first columns take the value of the key's first
 * version, `current_<col>` the value of its newest version, `previous_<col>` the value of its newest version whose
 * `<col>` differs from the newest value. All are read from the versions themselves, so late events and
 * corrections that reorder versions are reflected the same way.
 */
export function renderColumnPolicies(m: MergeSql): void {
  const layout = m.p.layout
  if (layout.keepFirst.length === 0 && layout.derived.length === 0) return
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
    `SELECT ${[...m.keys, ...columns].map((c) => m.col('x', c)).join(', ')} FROM ${versionsOfTouched}\n` +
    `  QUALIFY ROW_NUMBER() OVER (PARTITION BY ${m.keyList('x')} ORDER BY x.${q(n.validFrom)} ${order}, x.${q(n.surrogateKey)} ${order}) = 1`
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
    const before =
      `SELECT ${m.keyList('x')}, x.${q(c.from)} AS v FROM ${m.dim} x JOIN (${newest}) nw ON ${m.keyEq('x', 'nw')}\n` +
      `    WHERE x.${q(c.from)} IS DISTINCT FROM nw.${q(c.from)}\n` +
      `    QUALIFY ROW_NUMBER() OVER (PARTITION BY ${m.keyList('x')} ORDER BY x.${q(n.validFrom)} DESC, x.${q(n.surrogateKey)} DESC) = 1`
    const sets = [[c.name, 'v'] as const]
    update(
      `column policies: value before the last change of ${c.from} (type 3)`,
      sets,
      `SELECT ${m.keyList('t')}, b.v FROM ${touched} t LEFT JOIN (\n    ${before}\n  ) b ON ${m.keyEq('b', 't')}`,
    )
  }
}
