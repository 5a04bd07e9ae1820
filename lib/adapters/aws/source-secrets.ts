import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager'

import { ConfigError } from '../../core/errors.ts'
import type { ProjectSpec } from '../../core/table-spec.ts'
import { wrapAwsError } from './aws-errors.ts'

/**
 * `arn:<partition>:secretsmanager:`: the partition is `aws`, `aws-cn`, `aws-us-gov`, `aws-iso*` or `aws-eusc`,
 * so a value is told from a connection URL in every partition, not only the commercial one.
 */
const SECRET_ARN = /^arn:aws(-[a-z]+)*:secretsmanager:/

/**
 * `secretsmanager:<name>`: a secret of the function's own account and region, by its name. Secrets Manager takes
 * an ARN whose name ends in a hyphen and six characters (`...:secret:prod/db-reader`) for a complete ARN, so a
 * secret known by name only is looked up by its name, never by an ARN made from it.
 */
export const SECRET_NAME_PREFIX = 'secretsmanager:'

/** Whether a `url_env` value is the ARN of a Secrets Manager secret. */
export function isSecretArn(value: string): boolean {
  return SECRET_ARN.test(value)
}

/**
 * Whether a `url_env` value names a Secrets Manager secret (its ARN, or `secretsmanager:<name>`); else it is the
 * connection URL itself.
 */
export function isSecretReference(value: string): boolean {
  return (
    isSecretArn(value) || (value.startsWith(SECRET_NAME_PREFIX) && value.length > SECRET_NAME_PREFIX.length)
  )
}

/** The SecretId Secrets Manager is asked for: the name of `secretsmanager:<name>`, anything else as it is. */
export function secretIdOf(reference: string): string {
  return reference.startsWith(SECRET_NAME_PREFIX) ? reference.slice(SECRET_NAME_PREFIX.length) : reference
}

/** Fetches the SecretString of a secret by reference (an ARN, `secretsmanager:<name>`, or a bare name). */
export type GetSecret = (reference: string) => Promise<string>

/** `GetSecret` backed by Secrets Manager. */
export function secretsManagerGetter(client: SecretsManagerClient): GetSecret {
  return async (reference) => {
    try {
      const response = await client.send(new GetSecretValueCommand({ SecretId: secretIdOf(reference) }))
      if (response.SecretString === undefined) {
        throw new ConfigError(reference, [
          'the secret has no SecretString (binary secrets are not supported)',
        ])
      }
      return response.SecretString
    } catch (error) {
      throw wrapAwsError('secretsmanager', `reading secret ${reference}`, error)
    }
  }
}

/**
 * Returns a copy of `env` in which every `url_env` variable of the project's database sources that names a
 * Secrets Manager secret (`isSecretReference`) is replaced by the connection URL the secret holds. Each ARN is fetched once. The secret
 * may be the URL itself, a JSON object with a `url` field, or an RDS-managed secret (`engine`, `host`, `port`,
 * `username`, `password`, `dbname`), from which the URL is built with the parts percent-encoded. Errors name
 * the variable and the ARN, never the secret's value.
 */
export async function resolveSourceSecrets(
  project: ProjectSpec,
  env: Readonly<Record<string, string | undefined>>,
  getSecret: GetSecret,
): Promise<Record<string, string | undefined>> {
  const resolved: Record<string, string | undefined> = { ...env }
  const cache = new Map<string, Promise<string>>()
  for (const table of project.tables) {
    if (table.source.type === 'file') continue
    const variable = table.source.urlEnv
    const value = env[variable]?.trim()
    if (value === undefined || !isSecretReference(value)) continue
    let secret = cache.get(value)
    if (secret === undefined) {
      secret = getSecret(value)
      cache.set(value, secret)
    }
    resolved[variable] = secretToUrl(variable, value, table.source.type, await secret)
  }
  return resolved
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { postgres: 5432, mysql: 3306 }

/** The connection URL a secret holds (see `resolveSourceSecrets`). Pure; exported for tests. */
export function secretToUrl(variable: string, arn: string, sourceType: string, secret: string): string {
  const text = secret.trim()
  if (!text.startsWith('{')) return text
  let parsed: Record<string, unknown>
  try {
    parsed = JSON.parse(text) as Record<string, unknown>
  } catch {
    throw new ConfigError(variable, [`secret ${arn} looks like JSON but does not parse`])
  }
  if (typeof parsed.url === 'string') return parsed.url
  const { host, username, password } = parsed
  if (typeof host !== 'string' || typeof username !== 'string' || typeof password !== 'string') {
    throw new ConfigError(variable, [
      `secret ${arn} must hold a connection URL, a JSON object with "url", or an RDS secret with host, username and password`,
    ])
  }
  const engine = typeof parsed.engine === 'string' ? parsed.engine : sourceType
  const scheme = /postgres/i.test(engine) ? 'postgres' : /mysql|maria/i.test(engine) ? 'mysql' : sourceType
  const port = parsed.port ?? DEFAULT_PORTS[scheme]
  const database = parsed.dbname ?? parsed.database
  const auth = `${encodeURIComponent(username)}:${encodeURIComponent(password)}`
  const path = typeof database === 'string' ? `/${encodeURIComponent(database)}` : ''
  return `${scheme}://${auth}@${host}${port !== undefined ? `:${String(port)}` : ''}${path}`
}
