import { DimsyncError } from '../../lib/core/errors.ts'
import { factStagingTable, type FactSpec } from '../../lib/core/fact-spec.ts'
import type { ProjectSpec, TableSpec } from '../../lib/core/table-spec.ts'
import type { RunFactResult } from '../../lib/use-cases/run-fact.ts'

/**
 * What `dimsync run` runs: every table, then every fact table (facts resolve against the dimensions as the run
 * left them), or the one table or fact named. Facts are run as the tables their extract stages.
 */
export function selectRunnable(project: ProjectSpec, name: string | undefined): readonly TableSpec[] {
  const facts = project.facts ?? []
  if (name === undefined) return [...project.tables, ...facts.map(factStagingTable)]
  const table = project.tables.find((t) => t.name === name)
  if (table !== undefined) return [table]
  const fact = facts.find((f) => f.name === name)
  if (fact !== undefined) return [factStagingTable(fact)]
  const names = [...project.tables, ...facts].map((t) => t.name)
  throw new DimsyncError(
    `table ${name} is not in ${project.configPath} (tables and facts: ${names.join(', ')})`,
  )
}

/** The fact table a runnable name stands for, if it is one. */
export function factNamed(project: ProjectSpec, name: string): FactSpec | undefined {
  return project.facts?.find((f) => f.name === name)
}

/**
 * `orders → fact_orders: batch …, 3 rows; 3 facts loaded, 1 to the unknown member of customers`; a change feed's
 * line adds its deletes and the changes that applied nothing (`; 1 delete(s) applied, 2 change(s) not newer …`).
 */
export function describeFactRun(fact: FactSpec, result: RunFactResult): string {
  const resumed = result.resumed.length
    ? ` (first loaded ${result.resumed.length} batch(es) left by an interrupted run)`
    : ''
  if (result.load.status === 'already-applied')
    return `${fact.name}: batch ${result.batchId} was already loaded${resumed}`
  const unknown = (result.load.unknown ?? [])
    .map(
      (u) =>
        `${u.facts} to the unknown member of ${u.dimension} (${u.column})` +
        (u.inferredMembers ? `, ${u.inferredMembers} inferred member(s) added to ${u.dimension}` : ''),
    )
    .join(', ')
  const moved = result.repointed
    .filter((r) => r.facts > 0)
    .map((r) => `${r.facts} re-pointed to later versions of ${r.dimension} (${r.column})`)
    .join(', ')
  const feed = result.load.feed
  const changes = [
    feed?.deletes ? `${feed.deletes} delete(s) applied` : '',
    feed?.superseded
      ? `${feed.superseded} change(s) not newer than their fact's latest (nothing applied)`
      : '',
  ]
    .filter((part) => part !== '')
    .join(', ')
  return (
    `${fact.name} → ${fact.target}: batch ${result.batchId}, ${result.rows} rows; ` +
    `${result.load.facts ?? 0} facts loaded${unknown === '' ? '' : `, ${unknown}`}` +
    `${changes === '' ? '' : `; ${changes}`}${moved === '' ? '' : `; ${moved}`}${resumed}`
  )
}

/** What `dimsync history` answers for a fact table: history is a dimension's; where its facts and versions are. */
export function factHasNoHistory(fact: FactSpec): string {
  const dimensions = [...new Set(fact.references.map((r) => r.dimension))]
  const views = fact.references.some((r) => r.keepNaturalKey)
    ? ` (or its views ${fact.target}_as_was and ${fact.target}_as_is)`
    : ''
  return (
    `${fact.name} is a fact table, not a dimension: history shows the versions of a dimension. Query its facts in ` +
    `${fact.target}${views} in the warehouse; the versions they point at: ` +
    dimensions.map((d) => `dimsync history ${d}`).join(', ')
  )
}
