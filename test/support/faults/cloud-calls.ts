/**
 * What the fault proxy needs to know of each service: the name of a call (`s3 PutObject`, `dynamodb UpdateItem`,
 * `bigquery jobs.insert`), and its error answers in the format the real service uses, so that the SDKs classify
 * them as they classify the real ones (retryable 5xx, throttling).
 */

export type CloudService = 's3' | 'dynamodb' | 'bigquery'

export interface CallRequest {
  readonly method: string
  /** Path and query, as received (`/bucket/key?uploadId=...`). */
  readonly url: string
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
}

export interface ErrorAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** `service Operation` of a request. */
export function callName(service: CloudService, request: CallRequest): string {
  switch (service) {
    case 's3':
      return `s3 ${s3Operation(request)}`
    case 'dynamodb': {
      const target = String(request.headers['x-amz-target'] ?? '')
      return `dynamodb ${target.slice(target.indexOf('.') + 1) || 'unknown'}`
    }
    case 'bigquery':
      return `bigquery ${bigQueryMethod(request)}`
  }
}

/** S3's operation, from the method, whether a key is addressed (path style) and the sub-resource. */
function s3Operation({ method, url }: CallRequest): string {
  const parsed = new URL(url, 'http://proxy')
  const q = parsed.searchParams
  const hasKey = parsed.pathname.split('/').filter((s) => s !== '').length > 1
  if (!hasKey) {
    if (method === 'GET') return q.has('list-type') ? 'ListObjectsV2' : 'ListObjects'
    if (method === 'POST' && q.has('delete')) return 'DeleteObjects'
    if (method === 'PUT') return 'CreateBucket'
    if (method === 'HEAD') return 'HeadBucket'
    return `${method}Bucket`
  }
  switch (method) {
    case 'GET':
      return 'GetObject'
    case 'HEAD':
      return 'HeadObject'
    case 'DELETE':
      return q.has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject'
    case 'PUT':
      return q.has('partNumber') ? 'UploadPart' : 'PutObject'
    case 'POST':
      return q.has('uploads')
        ? 'CreateMultipartUpload'
        : q.has('uploadId')
          ? 'CompleteMultipartUpload'
          : 'PostObject'
    default:
      return method
  }
}

/** BigQuery's REST method (`jobs.insert`, `jobs.get`, `tables.delete`, ...), from the method and the path. */
function bigQueryMethod({ method, url }: CallRequest): string {
  const path = new URL(url, 'http://proxy').pathname
  if (path.startsWith('/upload/')) return 'jobs.insert(upload)'
  const parts = path.replace(/^\/bigquery\/v2\//, '').split('/')
  // projects/P[/datasets/D[/tables/T]] | projects/P/jobs[/J] | projects/P/queries[/J]
  const collection = parts.length >= 5 ? parts[4] : parts.length >= 3 ? parts[2] : parts[0]
  const named = parts.length === 6 || parts.length === 4
  const verb =
    method === 'GET'
      ? named
        ? 'get'
        : 'list'
      : method === 'POST'
        ? collection === 'queries'
          ? 'query'
          : 'insert'
        : method === 'DELETE'
          ? 'delete'
          : method === 'PATCH'
            ? 'patch'
            : method === 'PUT'
              ? 'update'
              : method.toLowerCase()
  if (collection === 'queries') return verb === 'get' ? 'jobs.getQueryResults' : 'jobs.query'
  return `${collection ?? 'unknown'}.${verb}`
}

/** A 500 or 503 as the service answers it (`pick` in [0, 1) chooses which). */
export function serverError(service: CloudService, pick: number, requestMethod: string): ErrorAnswer {
  const unavailable = pick >= 0.5
  switch (service) {
    case 's3':
      return s3Error(
        unavailable ? 503 : 500,
        unavailable ? 'ServiceUnavailable' : 'InternalError',
        unavailable
          ? 'Service is unable to handle request.'
          : 'We encountered an internal error. Please try again.',
        requestMethod,
      )
    case 'dynamodb':
      return dynamoDbError(
        unavailable ? 503 : 500,
        unavailable
          ? 'com.amazonaws.dynamodb.v20120810#ServiceUnavailable'
          : 'com.amazonaws.dynamodb.v20120810#InternalServerError',
        unavailable ? 'Service Unavailable' : 'Internal server error',
      )
    case 'bigquery':
      return bigQueryError(
        unavailable ? 503 : 500,
        'backendError',
        unavailable
          ? 'The service is currently unavailable.'
          : 'Backend error. Job aborted. Retrying may solve the problem.',
      )
  }
}

/** The service's throttling answer. */
export function throttled(service: CloudService, requestMethod: string): ErrorAnswer {
  switch (service) {
    case 's3':
      return s3Error(503, 'SlowDown', 'Please reduce your request rate.', requestMethod)
    case 'dynamodb':
      return dynamoDbError(
        400,
        'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
        'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
      )
    case 'bigquery':
      return bigQueryError(
        403,
        'rateLimitExceeded',
        'Exceeded rate limits: too many api requests per user per method for this user_method. For more information, see https://cloud.google.com/bigquery/docs/troubleshoot-quotas',
      )
  }
}

/** S3's XML error document (a HEAD answer has no body: the SDK then names the error by its status). */
function s3Error(status: number, code: string, message: string, requestMethod: string): ErrorAnswer {
  const requestId = 'FAULTPROXY0000000'
  const body =
    requestMethod === 'HEAD'
      ? ''
      : `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message>` +
        `<RequestId>${requestId}</RequestId><HostId>fault-proxy</HostId></Error>`
  return {
    status,
    headers: { 'content-type': 'application/xml', 'x-amz-request-id': requestId },
    body,
  }
}

/** DynamoDB's JSON 1.0 error (`__type` is what the SDK names the error by). */
function dynamoDbError(status: number, type: string, message: string): ErrorAnswer {
  return {
    status,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'FAULTPROXY0000000' },
    body: JSON.stringify({ __type: type, message }),
  }
}

/** Google's JSON error body (`error.errors[].reason` is BigQuery's reason). */
function bigQueryError(status: number, reason: string, message: string): ErrorAnswer {
  const names: Record<number, string> = { 403: 'PERMISSION_DENIED', 500: 'INTERNAL', 503: 'UNAVAILABLE' }
  return {
    status,
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    body: JSON.stringify({
      error: {
        code: status,
        message,
        errors: [{ message, domain: 'global', reason }],
        status: names[status] ?? 'UNKNOWN',
      },
    }),
  }
}
