import { Logger } from '@aws-lambda-powertools/logger'
import { Metrics } from '@aws-lambda-powertools/metrics'

/** Default service name and metrics namespace; the stack overrides them with POWERTOOLS_* variables. */
export const DEFAULT_SERVICE = 'dimsync'

/** A Powertools logger (JSON lines; level from POWERTOOLS_LOG_LEVEL, default INFO). */
export function createLogger(step: 'extract' | 'merge'): Logger {
  return new Logger({
    serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? DEFAULT_SERVICE,
    persistentKeys: { step },
  })
}

/** A Powertools metrics emitter (CloudWatch EMF on stdout), namespace from POWERTOOLS_METRICS_NAMESPACE. */
export function createMetrics(): Metrics {
  return new Metrics({
    namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_SERVICE,
    serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? DEFAULT_SERVICE,
  })
}
