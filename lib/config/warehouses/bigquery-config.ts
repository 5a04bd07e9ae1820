/** `warehouse: { type: bigquery, project, dataset, location, ... }`: its keys and its spec. */
import { z } from 'zod'
import { BOTH_BIGQUERY_CREDENTIALS, type BigQueryWarehouseSpec } from '../../core/table-spec.ts'
import { IDENTIFIER_TEXT, nonEmpty, patterned, strict } from '../schema-primitives.ts'
import type { WarehouseConfig } from '../warehouse-configs.ts'

/** Google Cloud project ids: 6-30 lowercase letters, digits and hyphens (optionally `domain.com:` scoped). */
export const GCP_PROJECT_PATTERN = /^(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$/
/** BigQuery dataset names: letters, digits and _, at most 1,024 characters. */
export const DATASET_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,1023}$/

/** `//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/provider`. */
export const WORKLOAD_IDENTITY_AUDIENCE_PATTERN =
  /^\/\/iam\.googleapis\.com\/projects\/\d+\/locations\/global\/workloadIdentityPools\/[a-z0-9-]+\/providers\/[a-z0-9-]+$/
export const SERVICE_ACCOUNT_PATTERN =
  /^[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z0-9.:-]+\.iam\.gserviceaccount\.com$/

const shape = {
  project: patterned(GCP_PROJECT_PATTERN, 'a Google Cloud project id (my-project-123)').describe(
    'Google Cloud project of the dataset; jobs run (and are billed) there.',
  ),
  dataset: patterned(DATASET_PATTERN, `a dataset name (${IDENTIFIER_TEXT})`).describe(
    'BigQuery dataset that holds the dimensions, views and the batch ledger.',
  ),
  location: nonEmpty('a BigQuery location (EU, US, europe-west1)').describe(
    'Location of the dataset; sent with every job.',
  ),
  credentials_secret: nonEmpty('a Secrets Manager secret ARN or name')
    .optional()
    .describe(
      'Secrets Manager secret holding a service-account key JSON (Lambda). Default: Application Default Credentials.',
    ),
  workload_identity: strict(
    {
      audience: patterned(
        WORKLOAD_IDENTITY_AUDIENCE_PATTERN,
        'a workload identity provider (//iam.googleapis.com/projects/NUMBER/locations/global/workloadIdentityPools/POOL/providers/PROVIDER)',
      ).describe('The workload identity pool provider that trusts the AWS account.'),
      service_account: patterned(
        SERVICE_ACCOUNT_PATTERN,
        'a service account email (name@project.iam.gserviceaccount.com)',
      )
        .optional()
        .describe(
          'Service account to impersonate; absent: the federated identity is granted BigQuery access itself.',
        ),
    },
    'a mapping { audience, service_account }',
  )
    .optional()
    .describe(
      "Keyless auth from AWS (workload identity federation): the functions' AWS role is exchanged for Google credentials. Instead of credentials_secret.",
    ),
  allow_partition_expiration: z
    .boolean()
    .optional()
    .describe(
      "Merge into dimensions whose partitions expire (the table's partition_expiration_days or the dataset's default): BigQuery then deletes closed versions. Default false: such a merge is refused.",
    ),
}

export const bigQueryWarehouseConfig: WarehouseConfig<BigQueryWarehouseSpec, typeof shape> = {
  type: 'bigquery',
  shape,
  conflict: (section) =>
    section.credentials_secret !== undefined && section.workload_identity !== undefined
      ? BOTH_BIGQUERY_CREDENTIALS
      : undefined,
  /** The dataset is also the `schema` every warehouse places dimensions in. */
  resolve(section) {
    const w = section!
    const identity = w.workload_identity
    return {
      type: 'bigquery',
      project: w.project,
      dataset: w.dataset,
      schema: w.dataset,
      location: w.location,
      ...(w.credentials_secret !== undefined ? { credentialsSecret: w.credentials_secret } : {}),
      ...(w.allow_partition_expiration === true ? { allowPartitionExpiration: true } : {}),
      ...(identity !== undefined
        ? {
            workloadIdentity: {
              audience: identity.audience,
              ...(identity.service_account !== undefined ? { serviceAccount: identity.service_account } : {}),
            },
          }
        : {}),
    }
  },
}
