import type { Logger } from '@aws-lambda-powertools/logger'
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics'

import { describeChange } from '../../lib/core/table-contract.ts'
import type { RunEvent, RunEventListener } from '../../lib/use-cases/run-event.ts'

/**
 * The events of a run as Powertools log lines (each with its `step`) and CloudWatch metrics. `lambda` is the
 * function that runs: it names the failure line and metric (`extract failed`, `ExtractFailed`).
 */
export function powertoolsListener(
  lambda: 'extract' | 'merge',
  logger: Logger,
  metrics: Metrics,
): RunEventListener {
  const ms = (seconds: number) => Math.round(seconds * 1000)
  return (event: RunEvent) => {
    switch (event.step) {
      case 'lock':
        logger.info('lease acquired', { step: 'lock', token: event.token, expiresAt: event.expiresAt })
        return
      case 'interrupted':
        logger.warn(
          event.record === 'interrupted'
            ? 'took the lease over from a run that never released it; recorded it as interrupted'
            : 'took the lease over from a run that never released it',
          { step: 'lock', interruptedRunId: event.runId, interruptedRunRecord: event.record },
        )
        return
      case 'cleanup':
        logger.warn('removed abandoned staged batches', { step: 'cleanup', removed: event.removed })
        return
      case 'checkpoint-recovered':
        logger.warn('undid the checkpoint a stopped process left unfinished in the warehouse file', {
          step: 'merge',
          path: event.path,
          recovery: event.recovery,
        })
        return
      case 'already-staged':
        logger.info('batch already committed by an earlier call of this pass', { step: 'extract' })
        return
      case 'progress':
        return
      case 'extract-paused':
        metrics.addMetric('ExtractDuration', MetricUnit.Milliseconds, ms(event.seconds))
        logger.info('extract paused before the time limit; the next pass continues it', {
          step: 'extract',
          pass: event.pass,
          rows: event.rows,
          bytes: event.bytes,
          parts: event.parts,
          durationMs: ms(event.seconds),
        })
        return
      case 'extract':
        metrics.addMetric('ExtractDuration', MetricUnit.Milliseconds, ms(event.seconds))
        metrics.addMetric('RowsExtracted', MetricUnit.Count, event.rows)
        metrics.addMetric('BytesStaged', MetricUnit.Bytes, event.bytes)
        logger.info('batch staged', {
          step: 'extract',
          rows: event.rows,
          bytes: event.bytes,
          parts: event.parts,
          durationMs: ms(event.seconds),
        })
        return
      case 'resume':
        logger.info('merged a batch an earlier run left staged', {
          step: 'resume',
          resumedBatchId: event.batchId,
          status: event.result.status,
          counts: event.result.counts,
          watermark: event.watermark,
        })
        return
      case 'already-merged':
        logger.info('batch already merged and removed from staging', {
          step: 'merge',
          status: 'already-applied',
        })
        metrics.addMetric('BatchesAlreadyApplied', MetricUnit.Count, 1)
        return
      case 'merging':
        logger.info('merging batch', { step: 'merge', mergingBatchId: event.batchId, rows: event.rows })
        return
      case 'memory-raised':
        logger.warn('a transaction ran out of memory; running it again with a higher limit', {
          step: 'merge',
          statement: event.statement,
          from: event.from,
          to: event.to,
        })
        return
      case 'merge': {
        const { status, counts, keys, contractChanges } = event.result
        logger.info(status === 'merged' ? 'batch merged' : 'batch already applied', {
          step: 'merge',
          status,
          counts,
          keys,
          durationMs: ms(event.seconds),
        })
        if (contractChanges !== undefined && contractChanges.length > 0)
          logger.warn(
            'the table config changed since its dimension was built; applied without a version per key',
            {
              step: 'merge',
              changes: contractChanges.map(describeChange),
            },
          )
        if (status === 'merged' && counts) {
          metrics.addMetric('VersionsInserted', MetricUnit.Count, counts.insertedVersions)
          metrics.addMetric('VersionsClosed', MetricUnit.Count, counts.closedVersions)
          metrics.addMetric('KeysDeleted', MetricUnit.Count, counts.deletedKeys)
          metrics.addMetric('UnchangedEvents', MetricUnit.Count, counts.unchangedEvents)
          metrics.addMetric('LateKeys', MetricUnit.Count, counts.lateKeys)
        } else {
          metrics.addMetric('BatchesAlreadyApplied', MetricUnit.Count, 1)
        }
        metrics.addMetric('MergeDuration', MetricUnit.Milliseconds, ms(event.seconds))
        return
      }
      case 'watermark':
        logger.info('watermark', { step: 'watermark', outcome: event.outcome, candidate: event.candidate })
        return
      case 'record':
        // Steps record "running" as they go, and a failure has its own line: the line to look for is success.
        if (event.status === 'succeeded')
          logger.info('run recorded', { step: 'record', status: event.status })
        else logger.debug('run recorded', { step: 'record', status: event.status })
        return
      case 'failed':
        metrics.addMetric(lambda === 'extract' ? 'ExtractFailed' : 'MergeFailed', MetricUnit.Count, 1)
        logger.error(`${lambda} failed`, { step: lambda, error: event.error as Error })
        return
    }
  }
}
