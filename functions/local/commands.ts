/**
 * What the CLI's commands do. cli.ts defines the commands and their options and imports this module when a
 * command runs, so `--version` and `--help` load neither the config parser nor DuckDB. Each command loads the
 * config (and refuses a bad one) before its deps, and the deps load a source's, a store's or a warehouse's client
 * library when the run first uses it.
 */
import { resolve } from 'node:path'

import { loadProject } from '../../lib/config/index.ts'
import type { CompiledStatement } from '../../lib/core/compiled-sql.ts'
import { DimsyncError } from '../../lib/core/errors.ts'
import { extractionTimeProblem } from '../../lib/core/instant.ts'
import type { ProjectSpec, TableSpec } from '../../lib/core/table-spec.ts'
import { buildLocalDeps, type LocalDeps } from '../../lib/runtime/local-deps.ts'
import type { StoreOverrides } from '../../lib/runtime/store-overrides.ts'
import { WAREHOUSE_BUNDLES, warehouseBundle } from '../../lib/runtime/warehouse-registry.ts'
import type { WarehouseType } from '../../lib/config/warehouse-configs.ts'
import type { StagedBatchEntry } from '../../lib/use-cases/discard-batches.ts'
import { runFact } from '../../lib/use-cases/run-fact.ts'
import { runTable, type RunTableResult } from '../../lib/use-cases/run-table.ts'
import { assertNoObjectNameConflicts, validateProject } from '../../lib/use-cases/validate-project.ts'
import type { HistoryFormat } from './format-history.ts'
import { createReporter } from './reporter.ts'
import { describeFactRun, factHasNoHistory, factNamed, selectRunnable } from './fact-runs.ts'
import { runTables } from './run-tables.ts'
import { describeContractChanges } from './contract-changes.ts'

/** `dimsync run`. `maxFutureMs` is read (and a bad setting refused) before the config is. */
export async function run(
  opts: {
    config: string
    table?: string
    extractedAt?: Date
    allowMassDelete?: boolean
  } & StoreOverrides,
  maxFutureMs: number,
  reportError: (line: string, error: unknown) => void,
): Promise<void> {
  await withProject(
    opts.config,
    async (project, deps, reporter) => {
      await runTables(selectRunnable(project, opts.table), {
        run: async (table) => {
          if (opts.extractedAt !== undefined) {
            const problem = extractionTimeProblem(opts.extractedAt, {
              now: deps.clock(),
              maxFutureMs,
              openEnd: table.openEnd,
            })
            if (problem !== undefined)
              throw new DimsyncError(`table ${table.name}: --extracted-at ${problem}`)
          }
          const fact = factNamed(project, table.name)
          if (fact !== undefined) {
            const loaded = await runFact(deps, fact, project.tables, { extractedAt: opts.extractedAt })
            return reporter.summary(describeFactRun(fact, loaded))
          }
          const result = await runTable(deps, table, {
            extractedAt: opts.extractedAt,
            allowMassDelete: opts.allowMassDelete,
          })
          reporter.summary(describeRun(table, result))
        },
        onFailure: (line, error) => reportError(line, error),
      })
    },
    opts,
  )
}

/** `dimsync backfill`. */
export async function backfillFiles(
  opts: {
    config: string
    table: string
    files: string
    timeFromName: string
    allowMassDelete?: boolean
  } & StoreOverrides,
  maxFutureMs: number,
): Promise<void> {
  await withProject(
    opts.config,
    async (project, deps, reporter) => {
      const [table] = selectTables(project, opts.table, 'backfill')
      const { backfill } = await import('../../lib/use-cases/backfill.ts')
      const results = await backfill(deps, {
        table: table!,
        files: opts.files,
        timeFromName: opts.timeFromName,
        baseDir: project.baseDir,
        allowMassDelete: opts.allowMassDelete,
        maxFutureMs,
      })
      for (const result of results) reporter.summary(describeRun(table!, result))
    },
    opts,
  )
}

/** `dimsync plan`. */
export async function plan(
  opts: {
    config: string
    table?: string
    sql?: boolean
    allowMassDelete?: boolean
    dialect?: WarehouseType
    keys?: string
  } & StoreOverrides,
  reportError: (line: string, error: unknown) => void,
): Promise<void> {
  if (opts.dialect !== undefined && WAREHOUSE_BUNDLES[opts.dialect].offlinePlan !== undefined)
    return planOffline(opts.config, opts.dialect, opts.table)
  await withProject(
    opts.config,
    async (project, deps, reporter) => {
      const { describeFactPlan, describeKeysBeforeAfter, describePlan, parsePlanKeys } =
        await import('./format-plan.ts')
      // A guarded statement comes with its condition: a run skips it when the condition is false.
      const printSql = (statements: readonly CompiledStatement[]) => {
        if (opts.sql)
          for (const { label, sql, onlyIf } of statements) {
            const guard =
              onlyIf === undefined ? '' : `-- runs only if: ${onlyIf.replaceAll('\n', '\n--   ')}\n`
            process.stdout.write(`-- ${label}\n${guard}${sql};\n\n`)
          }
      }
      // Facts are planned as run runs them: after the tables, each on its own (one refused does not stop the others).
      await runTables(selectRunnable(project, opts.table), {
        run: async (table) => {
          const fact = factNamed(project, table.name)
          if (fact !== undefined) {
            const result = await runFact(deps, fact, project.tables, { dryRun: true })
            reporter.summary(describeFactPlan(fact, result))
            return printSql(result.load.statements)
          }
          const result = await runTable(deps, table, {
            dryRun: true,
            allowMassDelete: opts.allowMassDelete,
            ...(opts.keys !== undefined ? { inspectKeys: parsePlanKeys(table, opts.keys) } : {}),
          })
          reporter.summary(describePlan(table, result))
          if (result.merge.keyHistories !== undefined)
            process.stdout.write(describeKeysBeforeAfter(table, result.merge.keyHistories))
          else if (opts.keys !== undefined)
            reporter.summary(
              `${table.name}: --keys shows versions before and after a merge the dry run runs; BigQuery's dry run ` +
                'prices the script without running it',
            )
          printSql(result.merge.statements)
        },
        onFailure: reportError,
      })
    },
    opts,
  )
}

/** `dimsync dates`. */
export async function dates(opts: {
  config: string
  from: string
  to: string
  holidays?: string
}): Promise<void> {
  await withProject(opts.config, async (project, deps, reporter) => {
    const [{ readHolidays }, { buildDateDimension }] = await Promise.all([
      import('./date-command.ts'),
      import('../../lib/use-cases/build-date-dimension.ts'),
    ])
    const holidays =
      opts.holidays === undefined ? undefined : readHolidays(resolve(project.baseDir, opts.holidays))
    const warehouse = await deps.openWarehouse()
    const days = await buildDateDimension(
      { warehouse },
      { schema: project.warehouse.schema, from: opts.from, to: opts.to, ...(holidays ? { holidays } : {}) },
    )
    reporter.summary(`dim_date: ${days} days written, ${opts.from} to ${opts.to}`)
  })
}

/** `dimsync evolve`. */
export async function evolve(opts: { config: string; table: string; column: string }): Promise<void> {
  await withProject(opts.config, async (project, deps, reporter) => {
    const [table] = selectTables(project, opts.table, 'evolve')
    const { evolveColumn } = await import('../../lib/use-cases/evolve-column.ts')
    const warehouse = await deps.openWarehouse()
    const result = await evolveColumn(
      { warehouse, staging: deps.staging },
      { table: table!, schema: project.warehouse.schema, column: opts.column },
    )
    reporter.summary(
      `${table!.name}: ${result.columns.join(', ')} of ${table!.target} rewritten from ${result.from} to ` +
        `${result.to} (the type in staged batch ${result.batchId}); the next run merges that batch`,
    )
  })
}

/** `dimsync discard`. */
export async function discard(
  opts: { config: string; table: string; batch?: string; list?: boolean } & StoreOverrides,
): Promise<void> {
  await withProject(
    opts.config,
    async (project, deps, reporter) => {
      // A fact's batches are staged under its name, as a table's.
      const [table] = selectRunnable(project, opts.table)
      const { discardBatches, listStagedBatches } = await import('../../lib/use-cases/discard-batches.ts')
      if (opts.list) {
        const staged = await listStagedBatches(deps, table!.name)
        if (staged.length === 0) reporter.summary(`${table!.name}: no staged batch`)
        for (const entry of staged) reporter.summary(`${table!.name}: ${describeStaged(entry)}`)
        return
      }
      const dropped = await discardBatches(deps, table!.name, opts.batch)
      reporter.summary(
        `${table!.name}: discarded ${dropped.length} staged batch(es)${dropped.length ? `: ${dropped.join(', ')}` : ''}`,
      )
    },
    opts,
  )
}

/** `dimsync history`. */
export async function history(
  name: string,
  opts: { config: string; key?: string; asOf?: Date; knownAt?: Date; format: HistoryFormat | 'html' },
): Promise<void> {
  if (opts.format === 'html') return (await import('./report-command.ts')).historyHtml(name, opts)
  const format = opts.format
  await withProject(opts.config, async (project, deps) => {
    const fact = factNamed(project, name)
    if (fact !== undefined) throw new DimsyncError(factHasNoHistory(fact))
    const [table] = selectTables(project, name)
    const [{ readHistory }, { formatHistory }] = await Promise.all([
      import('../../lib/use-cases/read-history.ts'),
      import('./format-history.ts'),
    ])
    const rows = await readHistory(await deps.openWarehouseForReading(), {
      table: table!,
      schema: project.warehouse.schema,
      key: opts.key,
      asOf: opts.asOf?.toISOString(),
      knownAt: opts.knownAt?.toISOString(),
    })
    process.stdout.write(formatHistory(table!, rows, format))
  })
}

/** `dimsync validate`. */
export async function validate(opts: { config: string }): Promise<void> {
  await withProject(
    opts.config,
    async (project, deps, reporter) => {
      const { stagedValuesReader } = await import('../../lib/runtime/staged-values.ts')
      const warehouse = await warehouseBundle(project.warehouse).checks(project.warehouse)
      const tables = await validateProject(project, deps.openSource, warehouse, {
        stagedValues: stagedValuesReader(deps.state),
        sourceTypes: (table) => deps.state.getSourceTypes(table.name),
      })
      for (const line of tables) reporter.summary(line)
    },
    {},
    loadProject,
  )
}

/** Loads the config, builds the CLI's adapters, runs `work` and closes them (every command goes through here). */
export async function withProject(
  configPath: string,
  work: (project: ProjectSpec, deps: LocalDeps, reporter: ReturnType<typeof createReporter>) => Promise<void>,
  stores: StoreOverrides = {},
  // validate reports name conflicts together with every other problem of the config.
  load: (configPath: string) => Promise<ProjectSpec> = loadConsistentProject,
): Promise<void> {
  const project = await load(configPath)
  const reporter = createReporter(process.stderr, process.stdout)
  const deps = await buildLocalDeps(project, reporter.onEvent, stores)
  try {
    await work(project, deps, reporter)
  } finally {
    reporter.done()
    await deps.close()
  }
}

/** The config, refused before anything is opened when a target would collide with another table's objects. */
async function loadConsistentProject(configPath: string): Promise<ProjectSpec> {
  const project = await loadProject(configPath)
  assertNoObjectNameConflicts(project)
  return project
}

/** The table named (every table when none is), for a command that takes tables only (not facts). */
export function selectTables(
  project: ProjectSpec,
  name: string | undefined,
  command?: string,
): readonly TableSpec[] {
  if (name === undefined) return project.tables
  const table = project.tables.find((t) => t.name === name)
  const tables = project.tables.map((t) => t.name).join(', ')
  if (!table && command !== undefined && factNamed(project, name) !== undefined)
    throw new DimsyncError(
      `${name} is a fact table: ${command} takes a dimension's table (tables: ${tables})`,
    )
  if (!table) throw new DimsyncError(`table ${name} is not in ${project.configPath} (tables: ${tables})`)
  return [table]
}

/** One line of `discard --list`. */
function describeStaged(entry: StagedBatchEntry): string {
  switch (entry.state) {
    case 'committed':
      return `${entry.batchId} committed, not merged: extracted at ${entry.extractedAt}, ${entry.rows} rows`
    case 'suspended':
      return `${entry.batchId} uncommitted: suspended between passes of its extract (last written at ${entry.lastWrittenAt})`
    case 'uncommitted':
      return `${entry.batchId} uncommitted: an extract at work, or one that died (last written at ${entry.lastWrittenAt})`
  }
}

function describeRun(table: TableSpec, result: RunTableResult): string {
  const c = result.merge.counts
  const resumed = result.resumed.length
    ? ` (first merged ${result.resumed.length} batch(es) left by an interrupted run)`
    : ''
  if (result.merge.sameAs !== undefined)
    return `${table.name}: already applied: batch ${result.batchId} is the same snapshot as batch ${result.merge.sameAs}, merged at the same extraction time; nothing changed${resumed}`
  if (result.merge.status === 'already-applied')
    return `${table.name}: batch ${result.batchId} was already applied${resumed}`
  // A mirror's rows overwritten in place are not unchanged, although they open no version.
  const overwritten = result.merge.keys?.overwrittenKeys
  const unchanged = Math.max(0, (c?.unchangedEvents ?? 0) - (overwritten ?? 0))
  return (
    `${table.name} → ${table.target}: batch ${result.batchId}, ${result.rows} rows; ` +
    `${c?.insertedVersions ?? 0} versions inserted, ${c?.closedVersions ?? 0} closed, ` +
    `${overwritten === undefined ? '' : `${overwritten} overwritten, `}${c?.deletedKeys ?? 0} keys deleted, ` +
    `${unchanged} unchanged, ${c?.lateKeys ?? 0} late keys${describeContractChanges(result.merge)}${resumed}`
  )
}

/**
 * `plan --dialect bigquery --sql`: the full script of a first batch of each table in that warehouse's dialect,
 * rendered from the config and the source's columns only: no extract, no staging, no credentials, no warehouse call.
 */
async function planOffline(
  configPath: string,
  dialect: WarehouseType,
  tableName: string | undefined,
): Promise<void> {
  const project = await loadConsistentProject(configPath)
  const offlinePlan = WAREHOUSE_BUNDLES[dialect].offlinePlan!
  for (const table of selectTables(project, tableName, `plan --dialect ${dialect}`)) {
    const script = await offlinePlan(project, table, process.env, new Date().toISOString())
    process.stdout.write(script.text)
  }
}
