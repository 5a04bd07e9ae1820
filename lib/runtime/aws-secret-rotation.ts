/**
 * Secrets rotated while a container keeps their old values: the functions read each secret once per container,
 * so after a rotation the next connection fails to authenticate. On such a failure the secret is read again,
 * once: when its value changed, the failure becomes retryable (the retry connects with the new value); when it
 * did not, the failure says so and is not retried (the credentials in the secret are wrong).
 */
import { DimsyncError } from '../core/errors.ts'

/** PostgreSQL SQLSTATEs of a refused login: invalid_password, invalid_authorization_specification. */
const POSTGRES_LOGIN_REFUSED = new Set(['28P01', '28000'])
/** MySQL/MariaDB: access denied for user (errno 1045). */
const MYSQL_LOGIN_REFUSED = new Set(['ER_ACCESS_DENIED_ERROR'])
const MYSQL_LOGIN_REFUSED_ERRNO = 1045
/** Google OAuth answers a revoked or replaced service-account key with one of these. */
const GOOGLE_GRANT_REFUSED = /\b(invalid_grant|invalid_client|unauthorized_client)\b/

/**
 * Whether `error` (or an error it was caused by) is a refused login: the source database refused the user or
 * password, or Google refused the service-account key (an OAuth grant error, or HTTP 401 from the API).
 */
export function isAuthenticationFailure(error: unknown): boolean {
  for (let e = error, depth = 0; e !== null && typeof e === 'object' && depth < 8; depth++) {
    const { code, errno, status, response, message } = e as {
      code?: unknown
      errno?: unknown
      status?: unknown
      response?: { status?: unknown; data?: { error?: unknown } }
      message?: unknown
    }
    if (typeof code === 'string' && (POSTGRES_LOGIN_REFUSED.has(code) || MYSQL_LOGIN_REFUSED.has(code)))
      return true
    if (errno === MYSQL_LOGIN_REFUSED_ERRNO) return true
    if (status === 401 || code === 401 || response?.status === 401) return true
    if (typeof response?.data?.error === 'string' && GOOGLE_GRANT_REFUSED.test(response.data.error))
      return true
    if (typeof message === 'string' && GOOGLE_GRANT_REFUSED.test(message)) return true
    e = (e as { cause?: unknown }).cause
  }
  return false
}

/** What a refused login becomes once its secret was read again (`rotated`: the value had changed). */
export function afterSecretRefresh(error: unknown, secret: string, rotated: boolean): Error {
  const message = error instanceof Error ? error.message : String(error)
  const name = error instanceof Error ? error.name : 'DimsyncError'
  const refreshed = new DimsyncError(
    rotated
      ? `${message} (secret ${secret} had been rotated: it was read again and the retry uses the new value)`
      : `${message} (secret ${secret} was read again and has not changed: put the right credentials in it)`,
    { cause: error, retryable: rotated },
  )
  refreshed.name = rotated ? 'DimsyncError' : name
  return refreshed
}
