import type { ResolvedFactReference } from '../core/fact-layout.ts'
import type { FactSpec } from '../core/fact-spec.ts'
import type { SqlDialect } from './dialect.ts'
import { dimensionObjects } from './render-ddl.ts'
import { versionAtInJoin } from './fact-version-join.ts'

/** Working column holding a fact's re-resolved surrogate key (the reserved prefix keeps it apart from sources). */
const RESOLVED = '__dimsync_resolved_sk'

/**
 * Re-pointing one reference of the stored facts after late dimension changes (a late event splits or moves a
 * window facts already point through, a key arrives after facts that went to the unknown member): every fact's
 * key is resolved again at its event time, and only facts whose stored surrogate key differs are rewritten.
 * The key is the stored natural key when the reference keeps it, else the key of the version the fact points at
 * (so a fact at the unknown member without a stored key stays there). `count` selects how many would change,
 * `update` rewrites them; both are set-based and may be run again (a second run changes nothing).
 */
export function renderFactRepoint(
  d: SqlDialect,
  fact: FactSpec,
  r: ResolvedFactReference,
  schema: string,
): { readonly count: string; readonly update: string } {
  const q = (name: string) => d.quoteIdentifier(name)
  const table = d.table({ schema, name: fact.target })
  const sk = q(r.reference.surrogateKeyColumn)
  const resolved = resolvedKeys(d, fact, r, schema)
  const grainEq = fact.grain.map((g) => `f.${q(g)} = x.${q(g)}`).join(' AND ')
  return {
    count: `SELECT COUNT(*) AS repointed FROM (\n${resolved}\n) x WHERE x.${sk} <> x.${q(RESOLVED)}`,
    update:
      `UPDATE ${table} f SET ${sk} = x.${q(RESOLVED)}\nFROM (\n${resolved}\n) x\n` +
      `WHERE ${grainEq} AND f.${sk} <> x.${q(RESOLVED)}`,
  }
}

function resolvedKeys(d: SqlDialect, fact: FactSpec, r: ResolvedFactReference, schema: string): string {
  const q = (name: string) => d.quoteIdentifier(name)
  const dim = d.table(dimensionObjects(r.dimension, schema).dimension)
  const dsk = q(r.dimension.columns.surrogateKey)
  const sk = q(r.reference.surrogateKeyColumn)
  const eventTime = d.castToTimestamp(`f.${q(fact.eventTime)}`)
  const live = versionAtInJoin(d, r.dimension, eventTime, 'r')
  const via = r.reference.keepNaturalKey ? '' : `\n  JOIN ${dim} v ON v.${dsk} = f.${sk}`
  const keyEq = r.dimensionKey.map((k, j) =>
    r.reference.keepNaturalKey
      ? `r.${q(k.name)} = f.${q(r.reference.key[j]!)}`
      : `r.${q(k.name)} = v.${q(k.name)}`,
  )
  return (
    `  SELECT ${fact.grain.map((g) => `f.${q(g)}`).join(', ')}, f.${sk}, ` +
    `COALESCE(r.${dsk}, ${r.reference.unknownMemberKey}) AS ${q(RESOLVED)}\n` +
    `  FROM ${d.table({ schema, name: fact.target })} f${via}\n` +
    `  LEFT JOIN ${dim} r ON ${keyEq.join(' AND ')} AND ${live}`
  )
}
