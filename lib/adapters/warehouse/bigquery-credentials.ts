import { ExternalAccountClient, PassThroughClient } from 'google-auth-library'
import { ConfigError } from '../../core/errors.ts'
import {
  BOTH_BIGQUERY_CREDENTIALS,
  type BigQueryWarehouseSpec,
  type WorkloadIdentitySpec,
} from '../../core/table-spec.ts'
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

const BIGQUERY_SCOPE = 'https://www.googleapis.com/auth/bigquery'

/**
 * The credential configuration `gcloud iam workload-identity-pools create-cred-config --aws` writes, for a
 * provider that trusts the AWS account: the AWS credentials of the process (a Lambda role's, from its
 * environment; else the instance metadata) sign a GetCallerIdentity request, which Google's STS exchanges for a
 * federated token; with a service account, IAM Credentials exchanges that for the service account's token.
 * Nothing in it is secret. Google's endpoints can be replaced (`google`: a test's fake STS and IAM).
 */
export function workloadIdentityCredentialConfig(
  identity: WorkloadIdentitySpec,
  google: { readonly tokenUrl?: string; readonly impersonationUrl?: string } = {},
): Record<string, unknown> {
  return {
    type: 'external_account',
    audience: identity.audience,
    subject_token_type: 'urn:ietf:params:aws:token-type:aws4_request',
    token_url: google.tokenUrl ?? 'https://sts.googleapis.com/v1/token',
    ...(identity.serviceAccount !== undefined
      ? {
          service_account_impersonation_url:
            google.impersonationUrl ??
            `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/${identity.serviceAccount}:generateAccessToken`,
        }
      : {}),
    credential_source: {
      environment_id: 'aws1',
      region_url: 'http://169.254.169.254/latest/meta-data/placement/availability-zone',
      url: 'http://169.254.169.254/latest/meta-data/iam/security-credentials',
      regional_cred_verification_url:
        'https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15',
    },
  }
}

/**
 * Opens the BigQuery warehouse of a project. Credentials, in order: `warehouse.workload_identity` (keyless, from
 * the process's AWS role), the service-account key in the secret named by `secretArn` (Lambda) or
 * `warehouse.credentials_secret`, else Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, which may
 * name any credential configuration file, workload identity included; gcloud's login; the metadata server).
 * Reads the secret only when called (never at import time).
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
    /** Test seam: Google's STS and IAM Credentials endpoints and BigQuery's API endpoint, replaced by fakes. */
    readonly google?: {
      readonly tokenUrl?: string
      readonly impersonationUrl?: string
      readonly apiEndpoint?: string
    }
  } = {},
): Promise<BigQueryWarehouse> {
  if (options.endpoint !== undefined && options.endpoint !== '')
    return new BigQueryWarehouse({
      project: spec.project,
      location: spec.location,
      ...(spec.allowPartitionExpiration === true ? { allowPartitionExpiration: true } : {}),
      apiEndpoint: options.endpoint,
      authClient: new PassThroughClient(),
      ...options.extra,
    })
  const secret = options.secretArn ?? spec.credentialsSecret
  if (spec.workloadIdentity !== undefined) {
    if (secret !== undefined) throw new ConfigError(secret, [`warehouse: ${BOTH_BIGQUERY_CREDENTIALS}`])
    const config = workloadIdentityCredentialConfig(spec.workloadIdentity, options.google)
    const authClient = ExternalAccountClient.fromJSON({ ...config, scopes: [BIGQUERY_SCOPE] } as Parameters<
      typeof ExternalAccountClient.fromJSON
    >[0])
    if (authClient === null) throw new ConfigError('warehouse.workload_identity', ['not an external account'])
    return new BigQueryWarehouse({
      project: spec.project,
      location: spec.location,
      ...(spec.allowPartitionExpiration === true ? { allowPartitionExpiration: true } : {}),
      authClient,
      ...(options.google?.apiEndpoint !== undefined ? { apiEndpoint: options.google.apiEndpoint } : {}),
      ...options.extra,
    })
  }
  let credentials: ServiceAccountKey | undefined
  if (secret !== undefined) {
    if (options.getSecret === undefined)
      throw new ConfigError(secret, ['a secret reader is needed to read the BigQuery service-account key'])
    credentials = parseServiceAccountKey(await options.getSecret(secret), secret)
  }
  return new BigQueryWarehouse({
    project: spec.project,
    location: spec.location,
    ...(spec.allowPartitionExpiration === true ? { allowPartitionExpiration: true } : {}),
    ...(credentials ? { credentials } : {}),
    ...options.extra,
  })
}
