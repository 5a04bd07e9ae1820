import { WORK as W, type MergeSql } from './merge-sql.ts'

/**
 * The first merge after the config changed what a column is (tracked or type 1, keep_first, previous_value,
 * current_value) gives every version of every key the values its policies now define, before the batch is
 * diffed: a column that stopped being tracked (or kept first) is type 1, so every version holds the key's newest
 * value; a keep_first column holds the key's first value; `current_<col>` the newest value, `previous_<col>` the
 * newest value that differs from it. Later merges then find what they rely on (every version of a key holds the
 * same type 1, keep-first and derived values), and recompute only the keys they touch. It reads the dimension's
 * whole history once.
 */
export function renderPolicyRewrite(m: MergeSql): void {
  const rewrite = m.p.policyRewrite
  if (rewrite === undefined) return
  const layout = m.p.layout
  const n = m.names
  const q = (name: string) => m.q(name)
  const ordered = (order: 'ASC' | 'DESC', columns: readonly string[]) =>
    m.d.firstPerGroup({
      select: `SELECT ${[...m.keys, ...columns].map((c) => m.col('x', c)).join(', ')} FROM ${m.dim} x WHERE TRUE`,
      separator: '\n  ',
      partitionBy: m.keyList('x'),
      orderBy: `x.${q(n.validFrom)} ${order}, x.${q(n.surrogateKey)} ${order}`,
    })
  const update = (
    label: string,
    sets: readonly (readonly [target: string, value: string])[],
    from: string,
  ) => {
    if (sets.length === 0) return
    m.emit(
      `config changed: ${label}`,
      `UPDATE ${m.dim} AS d SET ${sets.map(([t, v]) => `${q(t)} = l.${q(v)}`).join(', ')}\n` +
        `FROM (\n  ${from}\n) l\n` +
        `WHERE ${m.keyEq('d', 'l')} AND (${sets.map(([t, v]) => `d.${q(t)} IS DISTINCT FROM l.${q(v)}`).join(' OR ')})`,
    )
  }
  const type1 = layout.type1.map((c) => c.name).filter((c) => rewrite.type1.includes(c))
  update(
    'columns no longer tracked hold the newest value on every version (type 1)',
    type1.map((c) => [c, c] as const),
    ordered('DESC', type1),
  )
  if (!rewrite.policies) return
  const keepFirst = layout.keepFirst.map((c) => c.name)
  update(
    'keep the first value (type 0)',
    keepFirst.map((c) => [c, c] as const),
    ordered('ASC', keepFirst),
  )
  const current = layout.derived.filter((c) => c.kind === 'current')
  update(
    'newest value on every version (type 6)',
    current.map((c) => [c.name, c.from] as const),
    ordered(
      'DESC',
      current.map((c) => c.from),
    ),
  )
  for (const c of layout.derived.filter((d) => d.kind === 'previous')) {
    const newest = ordered('DESC', [c.from])
    const before = m.d.firstPerGroup({
      select:
        `SELECT ${m.keyList('x')}, x.${q(c.from)} AS ${q(W.before)} FROM ${m.dim} x JOIN (${newest}) nw ON ${m.keyEq('x', 'nw')}\n` +
        `    WHERE x.${q(c.from)} IS DISTINCT FROM nw.${q(c.from)}`,
      separator: '\n    ',
      partitionBy: m.keyList('x'),
      orderBy: `x.${q(n.validFrom)} DESC, x.${q(n.surrogateKey)} DESC`,
    })
    const keys = `SELECT DISTINCT ${m.keyList('k')} FROM ${m.dim} k`
    update(
      `value before the last change of ${c.from} (type 3)`,
      [[c.name, W.before] as const],
      `SELECT ${m.keyList('t')}, b.${q(W.before)} FROM (${keys}) t LEFT JOIN (\n    ${before}\n  ) b ON ${m.keyEq('b', 't')}`,
    )
  }
}
