import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'

import { Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import { loadProject } from '../../lib/config/index.ts'
import { readInteger } from '../../lib/config/env.ts'
import { DimsyncError } from '../../lib/core/errors.ts'
import { extractionTimeProblem, parseIsoInstant } from '../../lib/core/instant.ts'
import type { ProjectSpec, TableSpec } from '../../lib/core/table-spec.ts'
import { buildLocalDeps, type LocalDeps } from '../../lib/runtime/local-deps.ts'
import type { StoreOverrides } from '../../lib/runtime/aws-deps.ts'
import { renderOfflineBigQueryPlan } from '../../lib/sql/bigquery/offline-plan.ts'
import { openSource } from '../../lib/runtime/open-source.ts'
import { backfill } from '../../lib/use-cases/backfill.ts'
import { buildDateDimension } from '../../lib/use-cases/build-date-dimension.ts'
import {
  discardBatches,
  listStagedBatches,
  type StagedBatchEntry,
} from '../../lib/use-cases/discard-batches.ts'
import { evolveColumn } from '../../lib/use-cases/evolve-column.ts'
import { readHistory } from '../../lib/use-cases/read-history.ts'
import { runFact } from '../../lib/use-cases/run-fact.ts'
import { runTable, type RunTableResult } from '../../lib/use-cases/run-table.ts'
import { assertNoObjectNameConflicts, validateProject } from '../../lib/use-cases/validate-project.ts'
import { formatHistory, type HistoryFormat } from './format-history.ts'
import { describePlan } from './format-plan.ts'
import { oneLineArgumentError } from './argument-errors.ts'
import { createReporter } from './reporter.ts'
import { readHolidays } from './date-command.ts'
import { describeFactRun, factNamed, selectRunnable } from './fact-runs.ts'
import { runTables } from './run-tables.ts'

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string
}

/** How far in the future an extraction time may be before it is refused (machines' clocks differ a little). */
const CLOCK_SKEW_VARIABLE = 'DIMSYNC_CLOCK_SKEW_SECONDS'
const DEFAULT_CLOCK_SKEW_SECONDS = 300
const MAX_CLOCK_SKEW_SECONDS = 1000 * 366 * 86_400

// Argument errors are thrown (exitOverride) and printed as one line by the handler at the end of this file.
const program = new Command('dimsync')
  .description('Keeps the history of operational tables as slowly changing dimensions (type 2).')
  .version(version)
  .exitOverride()
  .configureOutput({ outputError: () => undefined })

const configOption = () => new Option('-c, --config <file>', 'config file').default('dimsync.yaml')

// The AWS runtime's stores from a laptop: the same pipeline against S3 and DynamoDB, at any endpoint.
const storeOptions = () => [
  new Option(
    '--staging <location>',
    'staging store: s3://bucket/prefix or a local folder (default: from the config)',
  ),
  new Option(
    '--state <location>',
    'state store: dynamodb://table or a local folder (default: from the config)',
  ),
  new Option('--endpoint-url <url>', 'S3 and DynamoDB endpoint (LocalStack, MinIO, ...); default: AWS'),
  new Option('--s3-endpoint-url <url>', 'S3 endpoint only (overrides --endpoint-url)'),
  new Option('--dynamodb-endpoint-url <url>', 'DynamoDB endpoint only (overrides --endpoint-url)'),
  new Option(
    '--region <region>',
    'AWS region (default: AWS_REGION or the profile; us-east-1 with an endpoint)',
  ),
]
const withStoreOptions = (command: Command): Command => {
  for (const option of storeOptions()) command.addOption(option)
  return command
}

withStoreOptions(program.command('run'))
  .description('extract every table (or one) and merge it into its dimension, then load every fact table')
  .addOption(configOption())
  .option('-t, --table <name>', 'only this table (or fact table)')
  .option(
    '--extracted-at <iso>',
    `business time of this snapshot, ISO 8601 (a date-time without zone is UTC; at most ${CLOCK_SKEW_VARIABLE}, default ${DEFAULT_CLOCK_SKEW_SECONDS}, in the future; default: now)`,
    instantOption('--extracted-at'),
  )
  .option(
    '--allow-mass-delete',
    'apply a batch even if it deletes more than max_delete_share of current keys',
  )
  .action(
    async (
      opts: {
        config: string
        table?: string
        extractedAt?: Date
        allowMassDelete?: boolean
      } & StoreOverrides,
    ) => {
      const maxFutureMs = readClockSkewSeconds() * 1000
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
    },
  )

withStoreOptions(program.command('backfill'))
  .description('apply dated snapshot files in time order, each at the time read from its name')
  .addOption(configOption())
  .requiredOption('-t, --table <name>', 'table to backfill')
  .requiredOption('--files <glob>', "snapshot files, e.g. 'exports/customers_*.csv'")
  .requiredOption(
    '--time-from-name <pattern>',
    "file name pattern with %Y %m %d [%H %M %S], e.g. 'customers_%Y-%m-%d.csv'",
  )
  .option(
    '--allow-mass-delete',
    'apply snapshots even if one deletes more than max_delete_share of current keys',
  )
  .action(
    async (
      opts: {
        config: string
        table: string
        files: string
        timeFromName: string
        allowMassDelete?: boolean
      } & StoreOverrides,
    ) => {
      const maxFutureMs = readClockSkewSeconds() * 1000
      await withProject(
        opts.config,
        async (project, deps, reporter) => {
          const [table] = selectTables(project, opts.table)
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
    },
  )

withStoreOptions(program.command('plan'))
  .description('dry run: extract, compute the merge, report what would change, write nothing')
  .addOption(configOption())
  .option('-t, --table <name>', 'only this table')
  .option('--sql', 'print the SQL the merge would run')
  .option('--allow-mass-delete', 'plan as if the mass-delete guard were overridden')
  .addOption(
    new Option(
      '--dialect <dialect>',
      'bigquery: print the BigQuery script offline (no extract, no credentials, no BigQuery call)',
    ).choices(['duckdb', 'bigquery']),
  )
  .action(
    async (
      opts: {
        config: string
        table?: string
        sql?: boolean
        allowMassDelete?: boolean
        dialect?: 'duckdb' | 'bigquery'
      } & StoreOverrides,
    ) => {
      if (opts.dialect === 'bigquery') return planBigQueryOffline(opts.config, opts.table)
      await withProject(
        opts.config,
        async (project, deps, reporter) => {
          for (const table of selectTables(project, opts.table)) {
            const result = await runTable(deps, table, {
              dryRun: true,
              allowMassDelete: opts.allowMassDelete,
            })
            reporter.summary(describePlan(table, result))
            if (opts.sql) {
              for (const statement of result.merge.statements)
                process.stdout.write(`-- ${statement.label}\n${statement.sql};\n\n`)
            }
          }
        },
        opts,
      )
    },
  )

program
  .command('dates')
  .description('create dim_date, or extend it to cover --from .. --to (one row per day, key yyyymmdd)')
  .addOption(configOption())
  .requiredOption('--from <date>', 'first day, YYYY-MM-DD')
  .requiredOption('--to <date>', 'last day, YYYY-MM-DD')
  .option('--holidays <file>', 'CSV of YYYY-MM-DD,name lines: the holiday column')
  .action(async (opts: { config: string; from: string; to: string; holidays?: string }) => {
    await withProject(opts.config, async (project, deps, reporter) => {
      const holidays =
        opts.holidays === undefined ? undefined : readHolidays(resolve(project.baseDir, opts.holidays))
      const warehouse = await deps.openWarehouse()
      const days = await buildDateDimension(
        { warehouse },
        { schema: project.warehouse.schema, from: opts.from, to: opts.to, ...(holidays ? { holidays } : {}) },
      )
      reporter.summary(`dim_date: ${days} days written, ${opts.from} to ${opts.to}`)
    })
  })

program
  .command('evolve')
  .description(
    'rewrite a dimension column as the type the source now sends (the way out of a type change a merge refused)',
  )
  .addOption(configOption())
  .requiredOption('-t, --table <name>', 'table whose dimension holds the column')
  .requiredOption(
    '--column <name>',
    'the column; its new type is read from the staged batch the merge refused',
  )
  .action(async (opts: { config: string; table: string; column: string }) => {
    await withProject(opts.config, async (project, deps, reporter) => {
      const [table] = selectTables(project, opts.table)
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
  })

withStoreOptions(program.command('discard'))
  .description(
    'delete staged batches that were never merged (a refused extract), so the next run does not retry them',
  )
  .addOption(configOption())
  .requiredOption('-t, --table <name>', 'table whose staged batches to discard')
  .option('-b, --batch <id>', 'only this batch (default: every staged batch of the table)')
  .option('-l, --list', 'list the staged batches (committed and uncommitted) with their ids; delete nothing')
  .action(
    async (opts: { config: string; table: string; batch?: string; list?: boolean } & StoreOverrides) => {
      await withProject(
        opts.config,
        async (project, deps, reporter) => {
          const [table] = selectTables(project, opts.table)
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
    },
  )

program
  .command('history')
  .description('show the versions of a dimension')
  .argument('<table>', 'table name from the config')
  .addOption(configOption())
  .option('-k, --key <value>', 'one key: 101, or col=value,col=value for composite keys')
  .option(
    '--as-of <iso>',
    'only the versions valid at this time, ISO 8601 (a date-time without zone is UTC)',
    instantOption('--as-of'),
  )
  .option(
    '--known-at <iso>',
    'bitemporal tables (system_time: true): as the table said at this time, not as it says now',
    instantOption('--known-at'),
  )
  .addOption(
    new Option('-f, --format <format>', 'output format').choices(['table', 'csv', 'json']).default('table'),
  )
  .action(
    async (
      name: string,
      opts: { config: string; key?: string; asOf?: Date; knownAt?: Date; format: HistoryFormat },
    ) => {
      await withProject(opts.config, async (project, deps) => {
        const [table] = selectTables(project, name)
        const rows = await readHistory(await deps.openWarehouseForReading(), {
          table: table!,
          schema: project.warehouse.schema,
          key: opts.key,
          asOf: opts.asOf?.toISOString(),
          knownAt: opts.knownAt?.toISOString(),
        })
        process.stdout.write(formatHistory(table!, rows, opts.format))
      })
    },
  )

program
  .command('validate')
  .description('check the config and that every source has the configured columns')
  .addOption(configOption())
  .action(async (opts: { config: string }) => {
    await withProject(
      opts.config,
      async (project, deps, reporter) => {
        const tables = await validateProject(project, deps.openSource)
        for (const line of tables) reporter.summary(line)
      },
      {},
      loadProject,
    )
  })

async function withProject(
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

function selectTables(project: ProjectSpec, name: string | undefined): readonly TableSpec[] {
  if (name === undefined) return project.tables
  const table = project.tables.find((t) => t.name === name)
  if (!table)
    throw new DimsyncError(
      `table ${name} is not in ${project.configPath} (tables: ${project.tables.map((t) => t.name).join(', ')})`,
    )
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
  return (
    `${table.name} → ${table.target}: batch ${result.batchId}, ${result.rows} rows; ` +
    `${c?.insertedVersions ?? 0} versions inserted, ${c?.closedVersions ?? 0} closed, ${c?.deletedKeys ?? 0} keys deleted, ` +
    `${c?.unchangedEvents ?? 0} unchanged, ${c?.lateKeys ?? 0} late keys${resumed}`
  )
}

/**
 * `plan --dialect bigquery --sql`: the full BigQuery script of a first batch of each table, rendered from the
 * config and the source's columns only: no extract, no staging, no credentials, no BigQuery call.
 */
async function planBigQueryOffline(configPath: string, tableName: string | undefined): Promise<void> {
  const project = await loadConsistentProject(configPath)
  const bigquery = project.warehouse.type === 'bigquery' ? project.warehouse : undefined
  for (const table of selectTables(project, tableName)) {
    const source = openSource(table, { baseDir: project.baseDir, env: process.env })
    let columns
    try {
      columns = await source.describe(table)
    } finally {
      await source.close()
    }
    const script = renderOfflineBigQueryPlan({
      table,
      columns,
      project: bigquery?.project ?? 'your-project',
      dataset: bigquery?.dataset ?? 'your_dataset',
      now: new Date().toISOString(),
    })
    process.stdout.write(script.text)
  }
}

/** Parses an option's ISO 8601 instant; a date-time without a zone is read as UTC, and the run says so. */
function instantOption(flag: string): (value: string) => Date {
  return (value) => {
    const parsed = parseIsoInstant(value)
    if (!parsed.ok) throw new InvalidArgumentError(parsed.problem)
    if (!parsed.zoned)
      process.stderr.write(
        `${flag} ${value} has no time zone: read as UTC, ${parsed.instant.toISOString()}\n`,
      )
    return parsed.instant
  }
}

function readClockSkewSeconds(): number {
  return readInteger(process.env, CLOCK_SKEW_VARIABLE, {
    defaultValue: DEFAULT_CLOCK_SKEW_SECONDS,
    min: 0,
    max: MAX_CLOCK_SKEW_SECONDS,
  })
}

/** One line on stderr, whatever the error (a driver's message may go on for lines); DIMSYNC_DEBUG adds the stack. */
function reportError(message: string, error: unknown): void {
  process.stderr.write(`dimsync: ${message.split('\n')[0]!.trimEnd()}\n`)
  if (process.env.DIMSYNC_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`)
}

try {
  await program.parseAsync(process.argv)
} catch (error) {
  if (error instanceof CommanderError) {
    // --help and --version end here too (exit code 0); their text is already printed.
    const line = oneLineArgumentError(error, program, process.argv.slice(2))
    if (line !== undefined) reportError(line, undefined)
    process.exitCode = error.exitCode
  } else {
    reportError(error instanceof Error ? error.message : String(error), error)
    process.exitCode = 1
  }
}
