import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb'
import { NoSuchKey, S3ServiceException } from '@aws-sdk/client-s3'
import { describe, expect, it } from 'vitest'

import {
  AwsServiceError,
  isRetryableAwsError,
  wrapAwsError,
} from '../../../../lib/adapters/aws/aws-errors.ts'

const metadata = (httpStatusCode: number) => ({ $metadata: { httpStatusCode } })
const s3Error = (name: string, status: number) =>
  new S3ServiceException({ name, $fault: status >= 500 ? 'server' : 'client', ...metadata(status) })
const network = (code: string) => Object.assign(new Error(`connect ${code} 10.0.0.1:443`), { code })

describe('AWS errors a retry can fix (classified as the SDK classifies them)', () => {
  it('retries throttling, timeouts, dropped or unreachable connections and server errors', () => {
    const transient = [
      new ProvisionedThroughputExceededException({ message: 'slow down', ...metadata(400) }),
      s3Error('SlowDown', 503),
      s3Error('SomethingNew', 429),
      s3Error('InternalError', 500),
      s3Error('NotImplementedYet', 501),
      Object.assign(new Error('x'), { name: 'TimeoutError' }),
      network('ECONNRESET'),
      network('EHOSTUNREACH'),
      network('EAI_AGAIN'),
      Object.assign(s3Error('Odd', 400), { $retryable: {} }),
      new Error('wrapped', { cause: network('ETIMEDOUT') }),
    ]
    expect(transient.filter((e) => !isRetryableAwsError(e)).map((e) => e.name)).toEqual([])
    for (const error of transient) expect(wrapAwsError('s3', 'reading', error).retryable).toBe(true)
  })

  it('never retries what a retry cannot fix: missing keys, access denied, bad requests', () => {
    const permanent = [
      new NoSuchKey({ message: 'gone', ...metadata(404) }),
      s3Error('AccessDenied', 403),
      s3Error('InvalidRequest', 400),
      new Error('plain'),
      'a string',
      undefined,
    ]
    expect(permanent.filter((e) => isRetryableAwsError(e))).toEqual([])
    const denied = wrapAwsError('s3', 's3://b/k: reading the manifest', s3Error('AccessDenied', 403))
    expect(denied).toBeInstanceOf(AwsServiceError)
    expect([denied.retryable, denied.message]).toEqual([
      false,
      's3://b/k: reading the manifest: AccessDenied (check the IAM role or credentials in use)',
    ])
  })
})
