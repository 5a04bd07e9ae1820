import { buildAwsDeps, type AwsDeps } from '../../lib/runtime/aws-deps.ts'

let deps: Promise<AwsDeps> | undefined

/**
 * The adapters of this container, built on the first invocation from the environment and kept for the next
 * ones (clients, the loaded dimsync.yaml, resolved secrets, the warehouse connection). A failed build is not
 * kept, so a transient failure is retried by the next invocation.
 */
export function containerDeps(): Promise<AwsDeps> {
  deps ??= buildAwsDeps(process.env).catch((error: unknown) => {
    deps = undefined
    throw error
  })
  return deps
}
