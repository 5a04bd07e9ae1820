import type { Tracer } from '@aws-lambda-powertools/tracer'

import type { Env } from '../../lib/config/env.ts'
import { buildAwsDeps, type AwsDeps } from '../../lib/runtime/aws-deps.ts'
import { createTracer } from './powertools.ts'

/** This container's tracer: the handlers' segments and the AWS SDK calls of its clients. */
export const containerTracer = createTracer()

let deps: Promise<AwsDeps> | undefined

/** The adapters of a container whose AWS clients report their calls to `tracer` (X-Ray subsegments). */
export function tracedAwsDeps(env: Env, tracer: Tracer): Promise<AwsDeps> {
  return buildAwsDeps(env, { instrumentClient: (client) => tracer.captureAWSv3Client(client) })
}

/**
 * The adapters of this container, built on the first invocation from the environment and kept for the next
 * ones (clients, the loaded dimsync.yaml, resolved secrets, the warehouse connection). A failed build is not
 * kept, so a transient failure is retried by the next invocation.
 */
export function containerDeps(): Promise<AwsDeps> {
  deps ??= tracedAwsDeps(process.env, containerTracer).catch((error: unknown) => {
    deps = undefined
    throw error
  })
  return deps
}
