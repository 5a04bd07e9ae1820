import type { TableSpec } from '../../lib/core/table-spec.ts'
import { afterSecretRefresh, isAuthenticationFailure } from '../../lib/runtime/aws-secret-rotation.ts'
import type { FunctionDeps } from './function-deps.ts'

/**
 * Runs a step; when its login is refused, reads the step's secret again once (a rotation since the container
 * read it) and fails with what that showed: retryable when the secret had changed (the state machine's retry
 * logs in with the new value), or saying that the secret is unchanged.
 */
export async function refreshingSecretOnRefusedLogin<T>(
  deps: Pick<FunctionDeps, 'refreshSecret'>,
  step: 'extract' | 'merge',
  table: TableSpec,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw await afterRefusedLogin(deps, step, table, error)
  }
}

/**
 * What a step's failure becomes: a refused login, once its secret was read again, is retryable when the secret
 * had changed, or says that it is unchanged; any other error is itself.
 */
export async function afterRefusedLogin(
  deps: Pick<FunctionDeps, 'refreshSecret'>,
  step: 'extract' | 'merge',
  table: TableSpec,
  error: unknown,
): Promise<unknown> {
  if (!isAuthenticationFailure(error)) return error
  const refreshed = await deps.refreshSecret(step, table).catch(() => undefined)
  if (refreshed === undefined) return error
  return afterSecretRefresh(error, refreshed.secret, refreshed.rotated)
}
