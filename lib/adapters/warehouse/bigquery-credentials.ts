import { PassThroughClient } from 'google-auth-library'
import { ConfigError } from '../../core/errors.ts'
import type { BigQueryWarehouseSpec } from '../../core/table-spec.ts'
import { BigQueryWarehouse, type BigQueryWarehouseOptions } from './bigquery-warehouse.ts'

/** The fields of a service-account key JSON the BigQuery client needs. */
export interface ServiceAccountKey {
  readonly client_email: string
  readonly private_key: string
}

/**
 * Reads a service-account key JSON (the value of a Secrets Manager secret). Errors name the secret and the
 * missing field, never the key material.
 */
export function parseServiceAccountKey(text: string, secret: string): ServiceAccountKey {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new ConfigError(secret, [
      'the secret is not JSON; store the service-account key file (JSON) as its value',
    ])
  }
  const key = value as Partial<Record<string, unknown>>
  const missing = ['client_email', 'private_key'].filter((f) => typeof key?.[f] !== 'string' || key[f] === '')
  if (missing.length > 0 || key.type !== 'service_account')
    throw new ConfigError(secret, [
      `the secret is not a service-account key (${missing.length > 0 ? `missing ${missing.join(', ')}` : `type is ${JSON.stringify(key.type)}`}); ` +
        'create a key for the service account (IAM → Service accounts → Keys → JSON) and store the whole file',
    ])
  return { client_email: key.client_email as string, private_key: key.private_key as string }
}

/**
 * Opens the BigQuery warehouse of a project: credentials from the secret named by `secretArn` (Lambda), else
 * Application Default Credentials. Reads the secret only when called (never at import time).
 */
export async function openBigQueryWarehouse(
  spec: BigQueryWarehouseSpec,
  options: {
    readonly secretArn?: string
    readonly getSecret?: (arn: string) => Promise<string>
    /**
     * An API endpoint that takes no Google credentials (a BigQuery emulator): requests go there unauthenticated,
     * and no secret is read.
     */
    readonly endpoint?: string
    readonly extra?: Partial<BigQueryWarehouseOptions>
  } = {},
): Promise<BigQueryWarehouse> {
  if (options.endpoint !== undefined && options.endpoint !== '')
    return new BigQueryWarehouse({
      project: spec.project,
      location: spec.location,
      apiEndpoint: options.endpoint,
      authClient: new PassThroughClient(),
      ...options.extra,
    })
  const secret = options.secretArn ?? spec.credentialsSecret
  let credentials: ServiceAccountKey | undefined
  if (secret !== undefined) {
    if (options.getSecret === undefined)
      throw new ConfigError(secret, ['a secret reader is needed to read the BigQuery service-account key'])
    credentials = parseServiceAccountKey(await options.getSecret(secret), secret)
  }
  return new BigQueryWarehouse({
    project: spec.project,
    location: spec.location,
    ...(credentials ? { credentials } : {}),
    ...options.extra,
  })
}
