import { resolveFactReferences } from '../core/fact-layout.ts'
import type { FactSpec } from '../core/fact-spec.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { dimensionObjects } from '../sql/render-ddl.ts'
import { factObjects } from '../sql/render-fact-ddl.ts'
import { renderFactRepoint } from '../sql/render-fact-repoint.ts'
import type { UnknownMemberCount } from './load-fact-batch.ts'

export interface RepointFactsRequest {
  readonly fact: FactSpec
  readonly dimensions: readonly TableSpec[]
  readonly schema: string
}

/**
 * Re-points the stored facts of `fact` at the versions valid at their event time, as the dimensions hold them
 * now (after late events split or moved windows, or keys arrived late). Each reference is one set-based UPDATE of
 * only the facts whose surrogate key changes; running it again changes nothing. Returns how many facts each
 * reference re-pointed. Does nothing when the fact table does not exist yet.
 */
export async function repointFacts(
  deps: { readonly warehouse: Warehouse<SqlDialect> },
  request: RepointFactsRequest,
): Promise<readonly UnknownMemberCount[]> {
  const { warehouse } = deps
  const { fact, schema } = request
  const writes = [
    factObjects(fact, schema).table,
    ...request.dimensions
      .filter((t) => fact.references.some((r) => r.dimension === t.name))
      .map((t) => dimensionObjects(t, schema).dimension),
  ]
  return await warehouse.whileWriting(writes, () => repointLocked(deps, request))
}

async function repointLocked(
  deps: { readonly warehouse: Warehouse<SqlDialect> },
  request: RepointFactsRequest,
): Promise<readonly UnknownMemberCount[]> {
  const { warehouse } = deps
  const { fact, schema } = request
  const d = warehouse.dialect
  if ((await warehouse.describeTable(factObjects(fact, schema).table)) === undefined) return []
  const dimensions = await Promise.all(
    fact.references.map(async (r) => {
      const table = request.dimensions.find((t) => t.name === r.dimension)
      if (table === undefined)
        throw new Error(`fact ${fact.name}: the project has no dimension ${r.dimension}`)
      return { table, columns: await warehouse.describeTable(dimensionObjects(table, schema).dimension) }
    }),
  )
  const out: UnknownMemberCount[] = []
  for (const reference of resolveFactReferences(fact, dimensions)) {
    const { count, update } = renderFactRepoint(d, fact, reference, schema)
    const [row] = await warehouse.query(count)
    const facts = Number(row?.repointed ?? 0)
    if (facts > 0) await warehouse.query(update)
    out.push({
      dimension: reference.reference.dimension,
      column: reference.reference.surrogateKeyColumn,
      facts,
    })
  }
  return out
}
