import { Logger } from '@aws-lambda-powertools/logger'
import { Metrics } from '@aws-lambda-powertools/metrics'
import { Tracer } from '@aws-lambda-powertools/tracer'

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

/**
 * A Powertools tracer (X-Ray; the functions have active tracing). Enabled in Lambda only (off in tests and
 * local runs, or with POWERTOOLS_TRACE_ENABLED=false).
 */
export function createTracer(): Tracer {
  return new Tracer({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? DEFAULT_SERVICE })
}
