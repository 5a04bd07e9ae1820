/**
 * Checks a fact table's configured columns against the columns its source really has, before anything is
 * staged: a misspelled grain or reference column is reported against the config, not as a failed load.
 */
import { SourceError } from '../core/errors.ts'
import type { FactSpec } from '../core/fact-spec.ts'
import { didYouMean } from './did-you-mean.ts'

/** Every configured column of `fact` that `sourceColumns` lacks, as one line each. */
export function checkFactAgainstSource(fact: FactSpec, sourceColumns: readonly string[]): string[] {
  const wanted: [string, string][] = [
    ...fact.grain.map((c): [string, string] => ['grain', c]),
    ['event_time', fact.eventTime],
    ...fact.measures.map((c): [string, string] => ['measures', c]),
    ...fact.references.flatMap((r) => r.key.map((c): [string, string] => [`reference to ${r.dimension}`, c])),
  ]
  if (fact.extract.mode === 'incremental') wanted.push(['extract.cursor', fact.extract.cursor])
  if (fact.changes !== undefined) {
    wanted.push(['extract.operation', fact.changes.operation.column])
    if (fact.changes.sequence !== undefined) wanted.push(['extract.sequence', fact.changes.sequence])
  }
  const present = new Set(sourceColumns)
  return wanted
    .filter(([, column]) => !present.has(column))
    .map(
      ([where, column]) =>
        `${where}: column "${column}" is not in the source${didYouMean(column, sourceColumns)}`,
    )
}

/** Throws SourceError naming the fact and every missing column. */
export function assertFactMatchesSource(fact: FactSpec, sourceColumns: readonly string[]): void {
  const problems = checkFactAgainstSource(fact, sourceColumns)
  if (problems.length > 0)
    throw new SourceError(
      fact.name,
      `fact ${fact.name}: ${problems.join('; ')} (source columns: ${sourceColumns.join(', ')})`,
    )
}
