import { readFileSync } from 'node:fs'

import { Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import { readInteger } from '../../lib/config/env.ts'
import { withDocs } from '../../lib/core/error-docs.ts'
import { parseIsoInstant } from '../../lib/core/instant.ts'
import { PLAN_DIALECTS } from '../../lib/runtime/warehouse-registry.ts'
import { oneLineArgumentError } from './argument-errors.ts'
import type * as CommandModule from './commands.ts'
import type * as ResetWatermarkModule from './reset-watermark-command.ts'
import type * as ReportCommand from './report-command.ts'

// The commands' work (the config parser, DuckDB, the use cases) is imported when a command runs: `--version` and
// `--help` start without it.
const commands = () => import('./commands.ts')
type Commands = typeof CommandModule
/** A command's options, as its function in commands.ts takes them (one declaration of each). */
type OptionsOf<K extends Exclude<keyof Commands, 'history'>> = Parameters<Commands[K]>[0]

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
  .action(async (opts: OptionsOf<'run'>) => {
    const maxFutureMs = readClockSkewSeconds() * 1000
    await (await commands()).run(opts, maxFutureMs, reportError)
  })

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
  .action(async (opts: OptionsOf<'backfillFiles'>) => {
    const maxFutureMs = readClockSkewSeconds() * 1000
    await (await commands()).backfillFiles(opts, maxFutureMs)
  })

withStoreOptions(program.command('plan'))
  .description('dry run: extract, compute the merge, report what would change, write nothing')
  .addOption(configOption())
  .option('-t, --table <name>', 'only this table')
  .option('--sql', 'print the SQL the merge would run')
  .option('--allow-mass-delete', 'plan as if the mass-delete guard were overridden')
  .option(
    '--keys <keys>',
    "print these keys' versions before and after: 101,102 (composite keys: col=value,col=value;col=value,...)",
  )
  .addOption(
    new Option(
      '--dialect <dialect>',
      'bigquery: print the BigQuery script offline (no extract, no credentials, no BigQuery call)',
    ).choices(PLAN_DIALECTS),
  )
  .action(async (opts: OptionsOf<'plan'>) => {
    await (await commands()).plan(opts, reportError)
  })

program
  .command('dates')
  .description('create dim_date, or extend it to cover --from .. --to (one row per day, key yyyymmdd)')
  .addOption(configOption())
  .requiredOption('--from <date>', 'first day, YYYY-MM-DD')
  .requiredOption('--to <date>', 'last day, YYYY-MM-DD')
  .option('--holidays <file>', 'CSV of YYYY-MM-DD,name lines: the holiday column')
  .action(async (opts: OptionsOf<'dates'>) => {
    await (await commands()).dates(opts)
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
  .action(async (opts: OptionsOf<'evolve'>) => {
    await (await commands()).evolve(opts)
  })

withStoreOptions(program.command('discard'))
  .description(
    'delete staged batches that were never merged (a refused extract), so the next run does not retry them',
  )
  .addOption(configOption())
  .requiredOption('-t, --table <name>', 'table whose staged batches to discard')
  .option('-b, --batch <id>', 'only this batch (default: every staged batch of the table)')
  .option('-l, --list', 'list the staged batches (committed and uncommitted) with their ids; delete nothing')
  .action(async (opts: OptionsOf<'discard'>) => {
    await (await commands()).discard(opts)
  })

withStoreOptions(program.command('reset-watermark'))
  .description(
    "set a table's watermark to the last batch the warehouse merged (after the warehouse or the state was lost or restored)",
  )
  .addOption(configOption())
  .requiredOption('-t, --table <name>', 'table whose watermark to reset')
  .action(async (opts: Parameters<typeof ResetWatermarkModule.resetWatermarkCommand>[0]) => {
    const { resetWatermarkCommand } = await import('./reset-watermark-command.ts')
    await resetWatermarkCommand(opts)
  })

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
    new Option('-f, --format <format>', "output format (html: one key's timeline as a page, with --key)")
      .choices(['table', 'csv', 'json', 'html'])
      .default('table'),
  )
  .action(async (name: string, opts: Parameters<Commands['history']>[1]) => {
    await (await commands()).history(name, opts)
  })

withStoreOptions(program.command('report'))
  .description(
    "write one self-contained HTML page of the history: per table and fact, changes per day, depth, runs; a key's timeline",
  )
  .addOption(configOption())
  .option('-t, --table <name>', 'only this table or fact table')
  .option(
    '-k, --key <value>',
    "a key's timeline: 101, or col=value,col=value (with --table, or a one-table project)",
  )
  .option('-o, --out <file>', 'the page to write', 'report.html')
  .action(async (opts: Parameters<typeof ReportCommand.report>[0]) => {
    await (await import('./report-command.ts')).report(opts)
  })

program
  .command('validate')
  .description('check the config and that every source has the configured columns')
  .addOption(configOption())
  .action(async (opts: OptionsOf<'validate'>) => {
    await (await commands()).validate(opts)
  })

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

/**
 * One line on stderr, whatever the error (a driver's message may go on for lines), ending with the docs section
 * that explains a dimsync error; DIMSYNC_DEBUG adds the stack.
 */
function reportError(message: string, error: unknown): void {
  process.stderr.write(`dimsync: ${withDocs(message.split('\n')[0]!.trimEnd(), error)}\n`)
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
