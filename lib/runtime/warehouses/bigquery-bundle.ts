/** BigQuery: a remote warehouse reached with Google credentials, the one the Lambda functions deploy with. */
import { ConfigError } from '../../core/errors.ts'
import type { BigQueryWarehouseSpec } from '../../core/table-spec.ts'
import { PARQUET_READ_BY_ANY_READER } from '../../core/staged-parquet.ts'
import type { WarehouseBundle } from '../warehouse-bundle.ts'

/**
 * A BigQuery API endpoint to use instead of Google's (a BigQuery emulator): requests go there without Google
 * credentials.
 */
export const BIGQUERY_ENDPOINT_VARIABLE = 'DIMSYNC_BIGQUERY_ENDPOINT'

export const bigQueryBundle: WarehouseBundle<BigQueryWarehouseSpec> = {
  type: 'bigquery',
  // Its load jobs read the parts.
  stagedParquetVersion: PARQUET_READ_BY_ANY_READER,
  async checks(spec) {
    const { bigQueryChecks } = await import('../../sql/bigquery/bigquery-checks.ts')
    return bigQueryChecks(spec)
  },
  async openLocal(spec, opening) {
    // From a laptop the key comes from Application Default Credentials; a Secrets Manager secret is read with the
    // AWS credential chain, as on Lambda. The BigQuery and AWS client libraries are loaded only here: a DuckDB
    // run does without their memory (about 30 MB).
    const [{ openBigQueryWarehouse }, { makeSecretsManagerClient }, { secretsManagerGetter }] =
      await Promise.all([
        import('../../adapters/warehouse/bigquery-credentials.ts'),
        import('../../adapters/aws/aws-clients.ts'),
        import('../../adapters/aws/source-secrets.ts'),
      ])
    return await openBigQueryWarehouse(spec, {
      getSecret: secretsManagerGetter(makeSecretsManagerClient({})),
      endpoint: process.env[BIGQUERY_ENDPOINT_VARIABLE],
      extra: opening.bigQuery,
    })
  },
  sharedAcrossTables: true,
  async offlinePlan(project, table, env, now) {
    const { offlineBigQueryPlan } = await import('./bigquery-offline-plan.ts')
    return await offlineBigQueryPlan(project, table, env, now)
  },
  lambda: {
    async open({ settings, project, getSecret, bigQuery }) {
      // Project, dataset and location from dimsync.yaml; the service-account key from
      // DIMSYNC_BIGQUERY_SECRET_ARN (or warehouse.credentials_secret), else Application Default Credentials.
      if (project.warehouse.type !== 'bigquery') {
        // Imported here: the environment contract's module loads the AWS SDK, which the CLI does without.
        const { AWS_ENV } = await import('../aws-env.ts')
        throw new ConfigError(project.configPath, [
          `warehouse: ${AWS_ENV.warehouse}=bigquery needs warehouse: { type: bigquery, project, dataset, location }`,
        ])
      }
      const { openBigQueryWarehouse } = await import('../../adapters/warehouse/bigquery-credentials.ts')
      return await openBigQueryWarehouse(project.warehouse, {
        secretArn: settings.bigQuerySecretArn,
        getSecret,
        ...(settings.bigQueryEndpoint !== undefined ? { endpoint: settings.bigQueryEndpoint } : {}),
        ...(bigQuery !== undefined ? { extra: bigQuery } : {}),
      })
    },
    loginSecret: (settings, project) =>
      settings.bigQuerySecretArn ??
      (project.warehouse as { readonly credentialsSecret?: string }).credentialsSecret,
  },
  // The BigQuery section names its own secret (warehouse.credentials_secret); aws.bigquery_secret is the fallback.
  deploySecret: (spec, aws) => spec.credentialsSecret ?? aws?.bigQuerySecret,
  deployProblem(spec, aws) {
    if (bigQueryBundle.deploySecret!(spec, aws) !== undefined || spec.workloadIdentity !== undefined)
      return undefined
    return (
      'warehouse.credentials_secret: is required to deploy a BigQuery warehouse (the name or ARN of a Secrets ' +
      'Manager secret holding the service-account JSON), unless warehouse.workload_identity gives keyless ' +
      "access from the functions' AWS role"
    )
  },
}
