import { randomBytes } from 'node:crypto'

import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware'
import type { Logger } from '@aws-lambda-powertools/logger'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Tracer } from '@aws-lambda-powertools/tracer'
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware'
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics'
import middy from '@middy/core'
import type { Context } from 'aws-lambda'

import { instantOfBatchId, makeBatchId, runIdOfBatch } from '../../lib/core/batch-id.ts'
import { ConfigError } from '../../lib/core/errors.ts'
import { FAILED_RUN_MARKER } from '../../lib/runtime/aws-env.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { extractTable } from '../../lib/use-cases/extract-table.ts'
import type { MergeBatchResult } from '../../lib/use-cases/merge-batch.ts'
import type { WatermarkOutcome } from '../../lib/use-cases/merge-step.ts'
import { mergeTable } from '../../lib/use-cases/merge-table.ts'
import { containerDeps, containerTracer } from './container.ts'
import { parseExtractEvent, parseMergeEvent, type ExtractEvent, type ExtractOutput } from './events.ts'
import { pipelineDepsOf, type FunctionDeps } from './function-deps.ts'
import { createLogger, createMetrics } from './powertools.ts'
import { retryableErrorsAsOneType } from './retryable-errors.ts'
import { afterRefusedLogin, refreshingSecretOnRefusedLogin } from './refused-login.ts'
import { powertoolsListener } from './telemetry.ts'

export interface HandlerOptions {
  /** The container's adapters; default: built once from the environment (lib/runtime/aws-deps.ts). */
  readonly deps?: () => Promise<FunctionDeps>
  readonly logger?: Logger
  readonly metrics?: Metrics
  /** Default: the container's (X-Ray segments of each invocation and of the AWS SDK calls). */
  readonly tracer?: Tracer
}

/** Output of the merge function. */
export interface MergeOutput {
  readonly table: string
  readonly batchId: string
  readonly status: MergeBatchResult['status']
  readonly watermark: WatermarkOutcome
  readonly counts?: MergeBatchResult['counts']
}

/**
 * Time an extract pass leaves itself before the Lambda's limit: the last parts are converted and uploaded and
 * the checkpoint written after the source stops reading.
 */
export const EXTRACT_RESERVE_MS = 60_000

/**
 * The extract function (lib/use-cases/extract-table.ts): `{ table, mode?, reason?, batchId?, resume? }` →
 * `{ table, batchId, rows, bytes, complete, resume? }`. A new extract gets a new batch and run
 * (`run-<batchId>`); a pass with `resume` continues the batch its earlier pass suspended. Powertools logger
 * (Lambda context on every line, keys reset between invocations) and metrics (EMF, cold start) via middy.
 */
export function createExtractHandler(options: HandlerOptions = {}) {
  const logger = options.logger ?? createLogger('extract')
  const metrics = options.metrics ?? createMetrics()
  const containerOf = options.deps ?? containerDeps
  return middy(async (event: unknown, context: Context): Promise<ExtractOutput> => {
    const input = parseExtractEvent(event)
    const deps = await containerOf()
    const table = withMode(deps.table(input.table), input.mode)
    const now = deps.clock()
    const resume = input.resume !== undefined && input.batchId !== undefined
    const batchId = resume ? input.batchId! : makeBatchId(now)
    const runId = runIdOfBatch(batchId)
    logger.appendKeys({
      table: table.name,
      batchId,
      runId,
      mode: table.extract.mode,
      reason: input.reason,
      ...(resume ? { resumeAfterPass: input.resume!.pass } : {}),
    })
    metrics.addDimension('table', table.name)
    const result = await namingTheRun(batchId, () =>
      refreshingSecretOnRefusedLogin(deps, 'extract', table, () =>
        extractTable(pipelineDepsOf(deps, powertoolsListener('extract', logger, metrics)), table, {
          // One owner per extract (the run id is new for every first pass): its later passes take the lease over.
          run: {
            runId,
            owner: `${runId}/extract`,
            leaseTtlMs: deps.settings.leaseTtlMs,
            handOverTtlMs: deps.settings.handOverTtlMs,
          },
          batchId,
          extractedAt: resume ? new Date(instantOfBatchId(batchId) ?? now.toISOString()) : now,
          resume,
          timeLeftMs: () => context.getRemainingTimeInMillis() - EXTRACT_RESERVE_MS,
          abandonedAfterMs: deps.settings.abandonedBatchMs,
          whenBusy: input.whenBusy ?? 'fail',
          // The merge function takes the lease over: no other run starts between the extract and its merge.
          holdForMerge: true,
        }),
      ),
    )
    if ('skipped' in result) {
      logger.info('table busy: run skipped', { step: 'lock', heldBy: result.heldBy, since: result.since })
      metrics.addMetric('RunsSkipped', MetricUnit.Count, 1)
      return { table: table.name, skipped: true, runId, heldBy: result.heldBy, since: result.since }
    }
    const { rows, bytes } = result
    return result.complete
      ? { table: table.name, batchId, rows, bytes, complete: true }
      : { table: table.name, batchId, rows, bytes, complete: false, resume: { pass: result.pass } }
  })
    .use(captureLambdaHandler(options.tracer ?? containerTracer, { captureResponse: false }))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics, { captureColdStartMetric: true }))
    .use(retryableErrorsAsOneType())
}

/**
 * The merge function (lib/use-cases/merge-table.ts): `{ table, batchId }` →
 * `{ table, batchId, status, watermark, counts? }`. A retried invocation whose batch was already merged and
 * removed answers `already-applied`.
 */
export function createMergeHandler(options: HandlerOptions = {}) {
  const logger = options.logger ?? createLogger('merge')
  const metrics = options.metrics ?? createMetrics()
  const containerOf = options.deps ?? containerDeps
  return middy(async (event: unknown, context: Context): Promise<MergeOutput> => {
    const { table: name, batchId } = parseMergeEvent(event)
    const deps = await containerOf()
    const table = deps.table(name)
    const runId = runIdOfBatch(batchId)
    logger.appendKeys({ table: table.name, batchId, runId })
    metrics.addDimension('table', table.name)
    const { merge, watermark } = await mergeTable(
      pipelineDepsOf(deps, powertoolsListener('merge', logger, metrics)),
      table,
      {
        run: {
          runId,
          owner: mergeOwner(runId, context),
          leaseTtlMs: deps.settings.leaseTtlMs,
          // A retried merge takes the lease over: no other run starts during its backoff.
          handOverTtlMs: deps.settings.handOverTtlMs,
        },
        batchId,
        // Within the run: a login refused after a rotation is retried, so the lease is handed over for it too.
        explainFailure: (error) => afterRefusedLogin(deps, 'merge', table, error),
      },
    )
    const { status, counts } = merge
    return { table: table.name, batchId, status, watermark, ...(counts ? { counts } : {}) }
  })
    .use(captureLambdaHandler(options.tracer ?? containerTracer, { captureResponse: false }))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics, { captureColdStartMetric: true }))
    .use(retryableErrorsAsOneType())
}

/** The table with its extract mode overridden by the event (a full reload of an incremental table). */
function withMode(table: TableSpec, mode: ExtractEvent['mode']): TableSpec {
  if (mode === 'full' && table.source.type === 'file' && table.source.files === 'new_only') {
    throw new ConfigError('extract event', [
      `mode: table ${table.name} reads new files only (source.files: new_only), so "full" would not read the files ` +
        'merged already; start it without a mode to load the new files, or set files: all to read every file as ' +
        'one snapshot',
    ])
  }
  if (mode === undefined || mode === table.extract.mode) return table
  if (mode === 'full') return { ...table, extract: { mode: 'full' } }
  throw new ConfigError('extract event', [
    `mode: table ${table.name} is configured for full extracts; "incremental" needs extract.cursor in dimsync.yaml`,
  ])
}

/**
 * Runs `step`; an error it throws leaves with the run named at the end of its message (FAILED_RUN_MARKER), so
 * the state machine can name the run record of an extract that failed before returning its batch id.
 */
async function namingTheRun<T>(batchId: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    const marker = `${FAILED_RUN_MARKER.start}${batchId}${FAILED_RUN_MARKER.end}`
    if (error instanceof Error && !error.message.includes(marker))
      error.message = `${error.message} ${marker}`
    throw error
  }
}

/** The merge's lease owner: run, step and invocation, so two invocations of one merge never share a lease. */
function mergeOwner(runId: string, context: Context): string {
  return `${runId}/merge/${context.awsRequestId || randomBytes(4).toString('hex')}`
}
