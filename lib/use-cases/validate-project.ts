import { checkTableAgainstSource } from '../config/index.ts'
import { checkFactAgainstSource } from '../config/fact-source-check.ts'
import { eventTimeTypeProblem, referenceKeyTypeProblem } from '../core/fact-layout.ts'
import { factStagingTable, type FactSpec } from '../core/fact-spec.ts'
import type { StagedColumn } from '../core/batch.ts'
import { ConfigError } from '../core/errors.ts'
import type { ProjectSpec, TableSpec } from '../core/table-spec.ts'
import type { SourceTypes } from '../core/source-types.ts'
import type { Source } from '../ports/source.ts'
import { dimensionObjects } from '../sql/render-ddl.ts'
import type { WarehouseChecks } from '../core/warehouse-checks.ts'

/** How often a value occurs in a column of staged rows. */
export interface ValueCount {
  readonly value: string | null
  readonly rows: number
}

export interface ValidateOptions {
  /**
   * The distinct values, as text, of `column` in what the next run would extract from `source` for `table` (whose
   * `exclude` leaves the columns the extract needs and `column`), most frequent first. Given, a change feed's
   * operation values are checked as run checks them; absent, they are not.
   */
  readonly stagedValues?: (source: Source, table: TableSpec, column: string) => Promise<readonly ValueCount[]>
  /**
   * How the table's CSV columns were read by its merged loads (the state store's record): a source is described
   * with them, as the next run reads it, so a type a first load settled is not guessed again.
   */
  readonly sourceTypes?: (table: TableSpec) => Promise<SourceTypes | undefined>
}

/** How many values not configured a message shows. */
const SHOWN_VALUES = 5

/** Name prefixes of dimsync's own objects (staging tables, the merge's temporary tables, the ledger). */
const RESERVED_PREFIXES = ['__dimsync_', '_dimsync_']

/**
 * Checks every table's and every fact's source against its config (key, tracked, grain, event time, reference
 * ... columns exist) and against what the project's warehouse can store and compare (`warehouse`, from its
 * bundle) without staging anything. Returns one line per table and fact; throws one ConfigError listing every
 * problem of every one of them.
 */
export async function validateProject(
  project: ProjectSpec,
  openSource: (table: TableSpec) => Source,
  warehouse: WarehouseChecks,
  options: ValidateOptions = {},
): Promise<string[]> {
  const issues: string[] = [...objectNameConflicts(project)]
  const lines: string[] = []
  /** The columns each table's source described: what its dimension's key will be, for the facts' references. */
  const described = new Map<string, readonly StagedColumn[]>()
  for (const [index, table] of project.tables.entries()) {
    const source = openSource(table)
    try {
      const columns = await source.describe(table, await options.sourceTypes?.(table))
      described.set(table.name, columns)
      // The source refuses an excluded column it lacks and describes the others without it: it had them all.
      const problems = checkTableAgainstSource(project, index, [
        ...columns.map((c) => c.name),
        ...table.exclude,
      ])
      problems.push(
        ...warehouse
          .unstorableColumns(columns)
          .map(
            (c) =>
              `tables[${index}] (${table.name}): column "${c.name}" has type ${c.type}, which ` +
              `${warehouse.name} cannot store`,
          ),
        ...warehouse
          .uncomparableColumns(table, columns)
          .map((problem) => `tables[${index}] (${table.name}): ${problem}`),
      )
      if (problems.length === 0)
        problems.push(
          ...(await operationProblems(source, table, columns, options)).map(
            (problem) => `tables[${index}] (${table.name}): ${problem}`,
          ),
        )
      const merge = problems.length === 0 ? warehouse.mergeReport(table, columns) : {}
      if (merge.problem !== undefined) problems.push(`tables[${index}] (${table.name}): ${merge.problem}`)
      issues.push(...problems)
      if (problems.length === 0)
        lines.push(
          `${table.name}: ok (${columns.map((c) => `${c.name} ${c.type}`).join(', ')})${merge.line ?? ''}`,
        )
    } catch (error) {
      issues.push(
        `tables[${index}] (${table.name}): ${error instanceof Error ? error.message : String(error)}`,
      )
    } finally {
      await source.close()
    }
  }
  for (const [index, fact] of (project.facts ?? []).entries()) {
    const source = openSource(factStagingTable(fact))
    try {
      const columns = await source.describe(factStagingTable(fact))
      const problems = [
        ...checkFactAgainstSource(
          fact,
          columns.map((c) => c.name),
        ),
        ...warehouse
          .unstorableColumns(columns)
          .map((c) => `column "${c.name}" has type ${c.type}, which ${warehouse.name} cannot store`),
        ...factTypeProblems(project, fact, columns, described),
      ]
      if (problems.length === 0)
        problems.push(...(await operationProblems(source, factStagingTable(fact), columns, options)))
      issues.push(...problems.map((problem) => `facts[${index}] (${fact.name}): ${problem}`))
      if (problems.length === 0)
        lines.push(`${fact.name}: ok (${columns.map((c) => `${c.name} ${c.type}`).join(', ')})`)
    } catch (error) {
      issues.push(`facts[${index}] (${fact.name}): ${error instanceof Error ? error.message : String(error)}`)
    } finally {
      await source.close()
    }
  }
  if (issues.length > 0) throw new ConfigError(project.configPath, issues)
  return lines
}

/**
 * What the load of a fact's batch would refuse in its source's types (planFactLayout): an event time that is not
 * a timestamp or a date, a reference key whose type cannot equal the dimension's key as its source describes it.
 * A dimension whose source could not be described has its own issue and is not compared.
 */
function factTypeProblems(
  project: ProjectSpec,
  fact: FactSpec,
  columns: readonly StagedColumn[],
  described: ReadonlyMap<string, readonly StagedColumn[]>,
): string[] {
  const byName = new Map(columns.map((c) => [c.name, c]))
  const eventTime = byName.get(fact.eventTime)
  const problems = eventTime === undefined ? [] : [eventTimeTypeProblem(eventTime)]
  for (const reference of fact.references) {
    const dimension = project.tables.find((t) => t.name === reference.dimension)
    const keyColumns = described.get(reference.dimension)
    if (dimension === undefined || keyColumns === undefined) continue
    reference.key.forEach((name, k) => {
      const column = byName.get(name)
      const key = keyColumns.find((c) => c.name === dimension.key[k])
      if (column !== undefined && key !== undefined)
        problems.push(referenceKeyTypeProblem(reference, column, key, dimension))
    })
  }
  return problems.filter((p) => p !== undefined)
}

/**
 * A change feed's operation values that are none of the configured ones (compared exactly, as text: the merge and
 * the fact load refuse such a batch), read from what the next run would extract. Only the columns the extract
 * needs and the operation column are read.
 */
async function operationProblems(
  source: Source,
  table: TableSpec,
  columns: readonly StagedColumn[],
  options: ValidateOptions,
): Promise<string[]> {
  const feed = table.changes
  if (feed === undefined || options.stagedValues === undefined) return []
  const { operation } = feed
  const needed = new Set([
    ...table.key,
    operation.column,
    ...(feed.sequence !== undefined ? [feed.sequence] : []),
    ...(table.extract.mode === 'incremental' ? [table.extract.cursor] : []),
    ...(table.validFrom.kind === 'column' ? [table.validFrom.column] : []),
  ])
  const narrowed: TableSpec = {
    ...table,
    exclude: [...table.exclude, ...columns.map((c) => c.name).filter((name) => !needed.has(name))],
  }
  const known = [...operation.insert, ...operation.update, ...operation.delete, ...(operation.truncate ?? [])]
  const unknown = (await options.stagedValues(source, narrowed, operation.column)).filter(
    (v) => v.value === null || !known.includes(v.value),
  )
  if (unknown.length === 0) return []
  const shown = unknown
    .slice(0, SHOWN_VALUES)
    .map(
      (v) =>
        `${v.value === null ? 'NULL' : JSON.stringify(v.value)} (${v.rows} row${v.rows === 1 ? '' : 's'})`,
    )
  const more = unknown.length > SHOWN_VALUES ? ` and ${unknown.length - SHOWN_VALUES} more` : ''
  const example = exampleOperationEntry(operation, unknown)
  return [
    `operation column "${operation.column}" holds values that are none of ${known.join(', ')}, which run refuses: ` +
      `${shown.join(', ')}${more}; values are compared exactly, case too: list them in extract.operation` +
      `${example === undefined ? '' : ` (e.g. ${example})`} or fix the source`,
  ]
}

/** `insert: [I, i]` for the first value not configured that is a configured one in another case. */
function exampleOperationEntry(
  operation: NonNullable<TableSpec['changes']>['operation'],
  unknown: readonly ValueCount[],
): string | undefined {
  for (const { value } of unknown) {
    if (value === null) continue
    for (const kind of ['insert', 'update', 'delete'] as const) {
      if (operation[kind].some((v) => v.toLowerCase() === value.toLowerCase()))
        return `${kind}: [${[...operation[kind], value].join(', ')}]`
    }
  }
  return undefined
}

/** Throws one ConfigError when a table's target is an object dimsync keeps for another table or for itself. */
export function assertNoObjectNameConflicts(project: ProjectSpec): void {
  const issues = objectNameConflicts(project)
  if (issues.length > 0) throw new ConfigError(project.configPath, issues)
}

/**
 * Targets that name an object dimsync creates beside another table's dimension (its current view, its as-of
 * function, its capture log), the batch ledger, or a reserved prefix: the run would fail halfway with the
 * warehouse's own error, or overwrite the other object. Compared case-insensitively (DuckDB's names are).
 */
export function objectNameConflicts(project: ProjectSpec): string[] {
  if (project.tables.length === 0) return []
  const owners = new Map<string, string>()
  for (const table of project.tables) {
    const objects = dimensionObjects(table, project.warehouse.schema)
    const helpers: [string | undefined, string][] = [
      [objects.currentView.name, 'the current-versions view'],
      [objects.asOfFunction.name, 'the as-of table function'],
      [objects.captures?.name, 'the capture log'],
      [objects.truncates?.name, 'the truncate log'],
      [objects.retired?.name, 'the retired versions'],
      [objects.keys.name, 'the surrogate key record'],
    ]
    for (const [name, what] of helpers) {
      if (name !== undefined)
        owners.set(name.toLowerCase(), `${what} of table ${table.name} (target ${table.target})`)
    }
  }
  const ledger = dimensionObjects(project.tables[0]!, project.warehouse.schema).batches.name
  const issues: string[] = []
  for (const [index, table] of project.tables.entries()) {
    const target = table.target.toLowerCase()
    const owner =
      target === ledger.toLowerCase()
        ? 'the batch ledger dimsync keeps beside the dimensions'
        : owners.get(target)
    const prefix = RESERVED_PREFIXES.find((p) => target.startsWith(p))
    const problem =
      owner !== undefined
        ? `is ${owner}`
        : prefix !== undefined
          ? `starts with ${prefix}, which dimsync keeps for its own objects`
          : undefined
    if (problem !== undefined)
      issues.push(`tables[${index}].target: "${table.target}" ${problem}; choose another target`)
  }
  return issues
}
