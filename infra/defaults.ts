/**
 * Deployment constants shared by the constructs of the CDK app: names the functions, operators and dashboards
 * rely on. Changing one is a breaking change for a deployed stack (alarms, IAM conditions, console input).
 */

/** Pinned: `Runtime.NODEJS_LATEST` moves with the CDK version and would change the runtime on an unrelated deploy. */
export const LAMBDA_RUNTIME_NAME = 'nodejs22.x'
export const DEFAULT_STACK_NAME = 'Dimsync'

/** Key prefix of staged batches: `<prefix>/<table>/<batch id>/part-NNNNN.parquet` (see the S3 staging store). */
export const STAGING_PREFIX = 'staging'
/** Where dimsync.yaml sits inside each function bundle (DIMSYNC_CONFIG_PATH). */
export const BUNDLED_CONFIG_FILE = 'dimsync.yaml'
export const LAMBDA_TASK_ROOT = '/var/task'

/** CloudWatch namespace of the per-table metrics the state machine publishes (alarms and dashboard use them). */
export const METRICS_NAMESPACE = 'Dimsync'
/** The functions' own Powertools metrics (dimension `table`), kept apart from the run-level ones above. */
export const FUNCTION_METRICS_NAMESPACE = 'Dimsync/Functions'
export const METRIC = Object.freeze({
  succeeded: 'LoadSucceeded',
  failed: 'LoadFailed',
  /** A scheduled start found the table busy (another run was loading it) and did nothing. */
  skipped: 'LoadSkipped',
  rows: 'RowsExtracted',
  versionsInserted: 'VersionsInserted',
  versionsClosed: 'VersionsClosed',
  duration: 'LoadDurationSeconds',
  /**
   * Failed executions someone was told about (no Table dimension): the SNS notice went out, or the person who
   * started the execution was told their input was refused. Failed executions beyond this count escaped.
   */
  failuresReported: 'FailuresReported',
})

/** Lambda service hiccups, retried quickly (the functions' own transient errors: RETRY_ERROR_NAMES in lib). */
export const LAMBDA_SERVICE_ERRORS = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
] as const
/** A throttled invocation: reserved concurrency (aws.reserved_concurrency) or the account's limit is in use. */
export const LAMBDA_THROTTLED = 'Lambda.TooManyRequestsException'

/** Upper bound on extract passes of one run (a resumable extract continues in a loop, see the state machine). */
export const MAX_EXTRACT_PASSES = 48
