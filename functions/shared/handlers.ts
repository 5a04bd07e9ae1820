import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware'
import type { Logger } from '@aws-lambda-powertools/logger'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Metrics } from '@aws-lambda-powertools/metrics'
import middy from '@middy/core'
import type { Context } from 'aws-lambda'

import { containerDeps } from './container.ts'
import { parseExtractEvent, parseMergeEvent, type ExtractOutput } from './events.ts'
import { createLogger, createMetrics } from './powertools.ts'
import { retryableErrorsAsOneType } from './retryable-errors.ts'
import { runExtract, runMerge, type FunctionDeps, type MergeOutput } from './steps.ts'

export interface HandlerOptions {
  /** The container's adapters; default: built once from the environment (lib/runtime/aws-deps.ts). */
  readonly deps?: () => Promise<FunctionDeps>
  readonly logger?: Logger
  readonly metrics?: Metrics
}

/**
 * Time an extract pass leaves itself before the Lambda's limit: the last parts are converted and uploaded and
 * the checkpoint written after the source stops reading.
 */
export const EXTRACT_RESERVE_MS = 60_000

/**
 * The extract function: `{ table, mode?, reason?, batchId?, resume? }` → `{ table, batchId, rows, bytes, complete, resume? }`. Powertools logger
 * (Lambda context on every line, keys reset between invocations) and metrics (EMF, cold start) via middy.
 */
export function createExtractHandler(options: HandlerOptions = {}) {
  const logger = options.logger ?? createLogger('extract')
  const metrics = options.metrics ?? createMetrics()
  const deps = options.deps ?? containerDeps
  return middy(async (event: unknown, context: Context): Promise<ExtractOutput> => {
    const input = parseExtractEvent(event)
    const timeLeftMs = () => context.getRemainingTimeInMillis() - EXTRACT_RESERVE_MS
    return await runExtract(
      await deps(),
      input,
      { logger, metrics, invocationId: context.awsRequestId },
      timeLeftMs,
    )
  })
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics, { captureColdStartMetric: true }))
    .use(retryableErrorsAsOneType())
}

/** The merge function: `{ table, batchId }` → `{ table, batchId, status, watermark, counts? }`. */
export function createMergeHandler(options: HandlerOptions = {}) {
  const logger = options.logger ?? createLogger('merge')
  const metrics = options.metrics ?? createMetrics()
  const deps = options.deps ?? containerDeps
  return middy(async (event: unknown, context: Context): Promise<MergeOutput> => {
    const input = parseMergeEvent(event)
    return await runMerge(await deps(), input, { logger, metrics, invocationId: context.awsRequestId })
  })
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics, { captureColdStartMetric: true }))
    .use(retryableErrorsAsOneType())
}
