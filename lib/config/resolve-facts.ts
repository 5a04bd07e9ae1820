/**
 * Resolves the `facts:` section of dimsync.yaml against the project's dimensions: each reference must name a
 * dimension of `tables:` and give one fact column per column of its key; names and targets must not collide with
 * the dimensions' (facts are staged and tracked under their name like tables).
 */
import { DEFAULT_UNKNOWN_MEMBER_KEY, type FactReference, type FactSpec } from '../core/fact-spec.ts'
import type { ChangeFeedSpec, ExtractSpec, SourceSpec, TableSpec } from '../core/table-spec.ts'
import { didYouMean } from './did-you-mean.ts'
import { factSchema, type FactDocument } from './fact-schema.ts'
import type { IssueList, Path } from './issue-list.ts'
import { show } from './messages.ts'
import { databaseFeedCursor, resolveOperation } from './resolve-change-feed.ts'
import { resolveSource } from './resolve-source.ts'
import { fallbackErrorMap, fromZodIssues } from './zod-issues.ts'

export function resolveFacts(raw: unknown, tables: readonly TableSpec[], issues: IssueList): FactSpec[] {
  if (raw === undefined || raw === null) return []
  if (!Array.isArray(raw)) {
    issues.add(['facts'], `must be a list of fact tables (got ${show(raw)})`)
    return []
  }
  const facts: { readonly index: number; readonly spec: FactSpec }[] = []
  raw.forEach((entry, index) => {
    const parsed = factSchema.safeParse(entry, { error: fallbackErrorMap })
    if (!parsed.success) {
      for (const issue of fromZodIssues(parsed.error.issues, ['facts', index]))
        issues.add(issue.path, issue.message)
      return
    }
    const fact = resolveFact(['facts', index], parsed.data, tables, issues)
    if (fact !== undefined) facts.push({ index, spec: fact })
  })
  checkNames(facts, tables, issues)
  checkUnknownMemberKeys(facts, issues)
  return facts.map((f) => f.spec)
}

/** A resolved fact and its position in the document (for messages). */
type Placed = { readonly index: number; readonly spec: FactSpec }

function list(value: string | readonly string[]): readonly string[] {
  return typeof value === 'string' ? [value] : value
}

function resolveFact(
  base: Path,
  doc: FactDocument,
  tables: readonly TableSpec[],
  issues: IssueList,
): FactSpec | undefined {
  const before = issues.items.length
  const source = resolveSource(base, doc.source, issues)
  const grain = list(doc.grain)
  const repeated = grain.filter((g, i) => grain.indexOf(g) !== i)
  if (repeated.length > 0) issues.add([...base, 'grain'], `lists ${show(repeated[0])} twice`)
  const references = (doc.references ?? []).map((r, i): FactReference | undefined => {
    const at = [...base, 'references', i]
    const dimension = tables.find((t) => t.name === r.dimension)
    if (dimension === undefined) {
      const names = tables.map((t) => t.name)
      issues.add(
        [...at, 'dimension'],
        `no table is named ${show(r.dimension)} (tables: ${names.join(', ')})${didYouMean(r.dimension, names)}`,
      )
      return undefined
    }
    const key = list(r.key)
    if (key.length !== dimension.key.length) {
      issues.add(
        [...at, 'key'],
        `gives ${key.length} column${key.length === 1 ? '' : 's'} (${key.join(', ')}) but the key of ` +
          `${dimension.name} has ${dimension.key.length} (${dimension.key.join(', ')}); give one fact column per key column, in that order` +
          (r.inferred === true ? ' (an inferred member is a version of the whole key)' : ''),
      )
      return undefined
    }
    if (r.inferred === true && dimension.systemTime !== undefined) {
      issues.add(
        [...at, 'inferred'],
        `cannot infer members of ${dimension.name}: it is bitemporal, and a bitemporal table never updates a row ` +
          'in place, which completing a placeholder does; remove inferred (its facts go to the unknown member)',
      )
      return undefined
    }
    if (r.inferred === true && dimension.partialUpdates !== undefined) {
      issues.add(
        [...at, 'inferred'],
        `cannot infer members of ${dimension.name}: it folds partial updates into the state of a key, and a ` +
          'placeholder has none; remove inferred (its facts go to the unknown member) or the partial-update options',
      )
      return undefined
    }
    if (r.inferred === true && dimension.mode !== 'history') {
      issues.add(
        [...at, 'inferred'],
        `cannot infer members of ${dimension.name}: its mode is ${dimension.mode}, and only history tables ` +
          'complete a placeholder version in place; remove inferred or make the table mode: history',
      )
      return undefined
    }
    const alias = r.as ?? dimension.name
    return {
      dimension: dimension.name,
      key,
      surrogateKeyColumn: r.surrogate_key ?? `${alias}_sk`,
      alias,
      unknownMemberKey: r.unknown_member_key ?? DEFAULT_UNKNOWN_MEMBER_KEY,
      keepNaturalKey: r.natural_key ?? false,
      inferred: r.inferred ?? false,
    }
  })
  const resolved = references.filter((r): r is FactReference => r !== undefined)
  for (const [what, pick] of [
    ['surrogate key column', (r: FactReference) => r.surrogateKeyColumn],
    ['name (as)', (r: FactReference) => r.alias],
  ] as const) {
    const seen = new Map<string, number>()
    resolved.forEach((r, i) => {
      const value = pick(r)
      const first = seen.get(value)
      if (first !== undefined)
        issues.add(
          [...base, 'references', i],
          `${what} ${show(value)} is also that of references[${first}]; name one of them with \`as\``,
        )
      else seen.set(value, i)
    })
  }
  if (issues.items.length > before) return undefined
  const extract = doc.extract
  const feed =
    extract !== undefined && extract !== 'full' && extract.mode === 'changes'
      ? resolveFactChangeFeed([...base, 'extract'], extract, source, doc.event_time, issues)
      : undefined
  if (issues.items.length > before) return undefined
  return {
    name: doc.name,
    source,
    target: doc.target ?? `fact_${doc.name}`,
    extract:
      feed !== undefined
        ? feed.extract
        : extract === undefined || extract === 'full' || extract.mode !== 'incremental'
          ? { mode: 'full' }
          : { mode: 'incremental', cursor: extract.cursor, lookbackMinutes: extract.lookback_minutes ?? 0 },
    ...(feed !== undefined ? { changes: feed.changes } : {}),
    grain,
    eventTime: doc.event_time,
    measures: doc.measures ?? [],
    references: resolved,
  }
}

type ChangesDocument = Extract<NonNullable<FactDocument['extract']>, { mode: 'changes' }>

/**
 * A change feed of facts: the operation column and values (AWS DMS by default), the column ordering the changes
 * of one fact within a batch (`sequence`, else the cursor), how it is read (database sources after the cursor,
 * by default the sequence; files whole: re-applying a file's changes gives the same facts).
 */
function resolveFactChangeFeed(
  at: Path,
  doc: ChangesDocument,
  source: SourceSpec,
  eventTime: string,
  issues: IssueList,
): { extract: ExtractSpec; changes: ChangeFeedSpec } {
  const operation = resolveOperation(doc, (where, message) => issues.add([...at, ...where], message))
  if (operation.truncate !== undefined)
    issues.add(
      [...at, 'ops', 'truncate'],
      'a fact keeps every change it was given; a truncate of the source deletes no fact: list the value in ops.ignore',
    )
  if (doc.sequence !== undefined && doc.sequence === operation.column)
    issues.add([...at, 'sequence'], `${show(doc.sequence)} is also the operation column`)
  const changes: ChangeFeedSpec = {
    operation,
    ...(doc.sequence !== undefined ? { sequence: doc.sequence } : {}),
  }
  if (source.type === 'file') {
    for (const option of ['cursor', 'lookback_minutes'] as const)
      if (doc[option] !== undefined)
        issues.add(
          [...at, option],
          `a file change feed is read whole on every run (re-applying its changes gives the same facts); ${option} applies to database sources only`,
        )
    if (source.files === 'new_only' && doc.sequence === undefined)
      issues.add(
        at,
        'a change feed read with files: new_only needs a sequence: a file that arrives late holds changes older ' +
          'than some already loaded, and only the sequence tells them apart; set sequence: <column> (the change ' +
          'sequence the CDC tool writes), or read every file (files: all)',
      )
    return { extract: { mode: 'full' }, changes }
  }
  const cursor = databaseFeedCursor(
    doc,
    { column: eventTime, role: 'event time' },
    (...rest) => [...at.slice(0, -1), ...rest],
    '',
    (where, message) => issues.add(where, message),
  )
  if (cursor === undefined) return { extract: { mode: 'full' }, changes }
  return { extract: { mode: 'incremental', cursor, lookbackMinutes: doc.lookback_minutes ?? 0 }, changes }
}

/** Facts share staging, state and the warehouse schema with tables: names and targets must all differ. */
function checkNames(facts: readonly Placed[], tables: readonly TableSpec[], issues: IssueList): void {
  const names = new Map<string, string>(tables.map((t, i) => [t.name, `tables[${i}]`]))
  const targets = new Map<string, string>(tables.map((t, i) => [t.target.toLowerCase(), `tables[${i}]`]))
  facts.forEach(({ index: i, spec: f }) => {
    const name = names.get(f.name)
    if (name !== undefined)
      issues.add(['facts', i, 'name'], `${show(f.name)} is also the name of ${name}; names must differ`)
    else names.set(f.name, `facts[${i}]`)
    for (const [what, object] of [
      ['target', f.target],
      ['view', `${f.target}_as_was`],
      ['view', `${f.target}_as_is`],
    ] as const) {
      const other = targets.get(object.toLowerCase())
      if (other !== undefined)
        issues.add(['facts', i, 'target'], `${what} ${show(object)} is also the target of ${other}`)
    }
    targets.set(f.target.toLowerCase(), `facts[${i}]`)
  })
}

/** A dimension has one unknown member: every reference to it must agree on its key. */
function checkUnknownMemberKeys(facts: readonly Placed[], issues: IssueList): void {
  const first = new Map<string, { key: number; where: string }>()
  facts.forEach(({ index: i, spec: f }) =>
    f.references.forEach((r, j) => {
      const where = `facts[${i}].references[${j}]`
      const seen = first.get(r.dimension)
      if (seen === undefined) first.set(r.dimension, { key: r.unknownMemberKey, where })
      else if (seen.key !== r.unknownMemberKey)
        issues.add(
          ['facts', i, 'references', j, 'unknown_member_key'],
          `is ${r.unknownMemberKey} but ${seen.where} gives ${r.dimension}'s unknown member the key ${seen.key}; a dimension has one unknown member`,
        )
    }),
  )
}
