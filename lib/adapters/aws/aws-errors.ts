import { isServerError, isThrottlingError, isTransientError } from '@smithy/service-error-classification'

import { DimsyncError, type DimsyncErrorOptions } from '../../core/errors.ts'

/**
 * The boundary between AWS SDK errors and dimsync errors: SDK exceptions are recognised by name (not by class,
 * so that two copies of an SDK package in one bundle do not break `instanceof`) and become typed errors whose
 * message names the bucket, key or table and what to do.
 */

/** An AWS call failed for a reason other than a dimsync rule (permissions, missing bucket or table, network). */
export class AwsServiceError extends DimsyncError {
  constructor(
    readonly service: 's3' | 'dynamodb' | 'secretsmanager',
    readonly errorName: string,
    message: string,
    options: DimsyncErrorOptions & { readonly retryable: boolean },
  ) {
    super(message, options)
    this.name = 'AwsServiceError'
  }
}

/** The SDK error name (`ConditionalCheckFailedException`, `NoSuchKey`, ...), or undefined for other errors. */
export function awsErrorName(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const name = (error as { name?: unknown }).name
  return typeof name === 'string' ? name : undefined
}

/** HTTP status of an SDK error, when it has one. */
export function awsHttpStatus(error: unknown): number | undefined {
  const meta = (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata
  return meta?.httpStatusCode
}

export function isAwsError(error: unknown, ...names: string[]): boolean {
  const name = awsErrorName(error)
  return name !== undefined && names.includes(name)
}

/** S3 answers a missing key with NoSuchKey (GET) or a bare 404 NotFound (HEAD). */
export function isNotFound(error: unknown): boolean {
  return isAwsError(error, 'NoSuchKey', 'NotFound') || awsHttpStatus(error) === 404
}

/**
 * Whether a retry can help, as the AWS SDK's own retry strategy decides it: throttling (429, SlowDown,
 * ThrottlingException, ...), transient failures (timeouts, dropped or refused connections, 500/502/503/504,
 * errors the service marks retryable) and other 5xx.
 */
export function isRetryableAwsError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const sdkError = error as Parameters<typeof isTransientError>[0]
  return isThrottlingError(sdkError) || isTransientError(sdkError) || isServerError(sdkError)
}

const HINTS: Readonly<Record<string, string>> = {
  AccessDenied: 'check the IAM role or credentials in use',
  AccessDeniedException: 'check the IAM role or credentials in use',
  UnrecognizedClientException: 'check the AWS credentials in use',
  InvalidAccessKeyId: 'check the AWS credentials in use',
  SignatureDoesNotMatch: 'check the AWS credentials (and the endpoint and region) in use',
  NoSuchBucket: 'create the bucket or fix the staging location',
  ResourceNotFoundException: 'create the table (see README "Running on AWS") or fix the state location',
  ECONNREFUSED: 'is the endpoint running and reachable?',
}

/** Where a service's own meaning of an error name differs from the hint above. */
const SERVICE_HINTS: Readonly<Partial<Record<AwsServiceError['service'], Readonly<Record<string, string>>>>> =
  {
    secretsmanager: {
      ResourceNotFoundException:
        'check the secret name or ARN: a name is looked up in the account and region the code runs in, an ARN ' +
        'must be complete (with the 6-character suffix) or leave the suffix out',
    },
  }

/**
 * Wraps an unexpected SDK error as `AwsServiceError`: `what` says what dimsync was doing and on which resource
 * (`s3://bucket/key: reading the manifest`). Marked retryable when `isRetryableAwsError` says so. The
 * SDK's message is kept (it never contains secrets); credentials are never added.
 */
export function wrapAwsError(
  service: AwsServiceError['service'],
  what: string,
  error: unknown,
): DimsyncError {
  if (error instanceof DimsyncError) return error
  const name = awsErrorName(error) ?? 'Error'
  const code = (error as { code?: unknown } | null)?.code
  const retryable = isRetryableAwsError(error)
  const hint =
    (typeof code === 'string' ? HINTS[code] : undefined) ?? SERVICE_HINTS[service]?.[name] ?? HINTS[name]
  const detail = error instanceof Error ? error.message : String(error)
  return new AwsServiceError(
    service,
    name,
    `${what}: ${name}${detail && detail !== name ? `: ${detail}` : ''}${hint ? ` (${hint})` : ''}`,
    { cause: error, retryable },
  )
}
