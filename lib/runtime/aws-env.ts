/**
 * The environment contract between the CDK app (infra/) and the Lambda functions (functions/): the variable
 * names, in one place, so neither side can drift. Values are read with the typed readers in lib/config/env.ts.
 */
export const AWS_ENV = Object.freeze({
  /** Path of dimsync.yaml inside the function bundle. */
  configPath: 'DIMSYNC_CONFIG_PATH',
  stagingBucket: 'DIMSYNC_STAGING_BUCKET',
  /** Key prefix inside the bucket (no leading or trailing slash). */
  stagingPrefix: 'DIMSYNC_STAGING_PREFIX',
  stateTable: 'DIMSYNC_STATE_TABLE',
  /** 'bigquery' in deployments; 'duckdb' (with DIMSYNC_DUCKDB_PATH) in tests and local runs. */
  warehouse: 'DIMSYNC_WAREHOUSE',
  duckdbPath: 'DIMSYNC_DUCKDB_PATH',
  /** ARN of a Secrets Manager secret holding the BigQuery service-account JSON. */
  bigQuerySecretArn: 'DIMSYNC_BIGQUERY_SECRET_ARN',
} as const)

/**
 * A source's `url_env` variable holds either a connection URL or the ARN of a Secrets Manager secret whose
 * value is the URL; the function resolves ARNs once per container, before the first extract.
 */
export const SECRET_ARN_PREFIX = 'arn:aws:secretsmanager:'
