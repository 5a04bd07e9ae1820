/**
 * Column names that differ only in case (`Name` and `name`) are two columns in PostgreSQL or a Parquet file but
 * one in a warehouse, which compares names without case: stored, one would overwrite or be renamed after the
 * other. Sources refuse them as they refuse a name given twice.
 */

/** The first two names of `names` that differ only in case, or undefined when there are none. */
export function caseOnlyCollision(names: Iterable<string>): readonly [string, string] | undefined {
  const seen = new Map<string, string>()
  for (const name of names) {
    const folded = name.toLowerCase()
    const earlier = seen.get(folded)
    if (earlier !== undefined && earlier !== name) return [earlier, name]
    if (earlier === undefined) seen.set(folded, name)
  }
  return undefined
}

/** Why a source with columns `a` and `b` is refused, for a message that goes on with the way out. */
export function caseOnlyCollisionText([a, b]: readonly [string, string]): string {
  return (
    `has columns ${a} and ${b}, whose names differ only in case: a warehouse compares column names without ` +
    'case, so both would be stored in one column'
  )
}
