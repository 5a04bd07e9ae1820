/**
 * The environment contract between the CDK app (infra/) and the Lambda functions (functions/): the variable
 * names, in one place, so neither side can drift. Values are read with the typed readers in lib/config/env.ts
 * (see `readAwsEnv` in lib/runtime/aws-deps.ts for defaults and checks).
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
  /**
   * Lease TTL in seconds for the extract and merge functions (default 120). The lease is renewed every third of
   * it while a step runs, so it only matters when a function dies: the next run waits at most this long.
   */
  leaseTtlSeconds: 'DIMSYNC_LEASE_TTL_SECONDS',
  /**
   * TTL in seconds of the lease an extract pass hands to the next one (default 120; the stack sets the longest
   * wait its retries allow between two passes), so no other run takes the table in between.
   */
  handOverTtlSeconds: 'DIMSYNC_HANDOVER_TTL_SECONDS',
  /** Days after which run records expire via the DynamoDB TTL attribute `expiresAt` (default 90). */
  runTtlDays: 'DIMSYNC_RUN_TTL_DAYS',
  /**
   * Age in minutes after which an uncommitted staged batch (no manifest) is removed by the next extract of its
   * table (default 60; must exceed the extract function's timeout).
   */
  abandonedBatchMinutes: 'DIMSYNC_ABANDONED_BATCH_MINUTES',
  /** Local scratch folder for parts being written or read (default: the OS temp folder, /tmp in Lambda). */
  scratchDir: 'DIMSYNC_SCRATCH_DIR',
  /** Endpoint overrides (LocalStack, MinIO, s3rver, dynalite); unset in deployments. */
  s3Endpoint: 'DIMSYNC_S3_ENDPOINT',
  dynamoDbEndpoint: 'DIMSYNC_DYNAMODB_ENDPOINT',
  secretsManagerEndpoint: 'DIMSYNC_SECRETSMANAGER_ENDPOINT',
  /** A BigQuery API endpoint that takes no Google credentials (the tests' emulator); unset in deployments. */
  bigQueryEndpoint: 'DIMSYNC_BIGQUERY_ENDPOINT',
  /** Powertools settings the functions read (set by the stack): service name, metrics namespace, log level. */
  serviceName: 'POWERTOOLS_SERVICE_NAME',
  metricsNamespace: 'POWERTOOLS_METRICS_NAMESPACE',
  logLevel: 'POWERTOOLS_LOG_LEVEL',
} as const)

/**
 * How a failed extract names its run at the end of its error message (`... [run run-<batch id>]`): the state
 * machine reads the batch id from there when the extract failed before returning one, to name the run record in
 * its failure notice without quoting the message.
 */
export const FAILED_RUN_MARKER = Object.freeze({ start: '[run run-', end: ']' } as const)

export { STATE_PARTITIONS, STATE_TABLE_KEYS } from '../core/state-table.ts'
/** A secret known by name reaches the functions as `secretsmanager:<name>` (see source-secrets.ts). */
export { SECRET_NAME_PREFIX } from '../adapters/aws/source-secrets.ts'
export { RETRY_ERROR_NAMES } from '../core/retry-policy.ts'
