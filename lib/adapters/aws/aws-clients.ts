import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { S3Client } from '@aws-sdk/client-s3'
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager'

/**
 * Options shared by the AWS clients dimsync builds. Everything is optional: in Lambda the SDK's default chain
 * (region and credentials from the environment) is right; the options exist for endpoints such as LocalStack,
 * MinIO, s3rver and dynalite.
 */
export interface AwsClientOptions {
  /** Endpoint override (`http://127.0.0.1:4566`). Unset: the service's AWS endpoint for the region. */
  readonly endpoint?: string
  readonly region?: string
  /** Static credentials (emulators only; real deployments use the default credential chain). */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string }
}

export interface S3ClientOptions extends AwsClientOptions {
  /** Path-style URLs (`http://host/bucket/key`), needed by MinIO, s3rver and most S3 emulators. */
  readonly forcePathStyle?: boolean
  /**
   * `when-required` sends flexible checksums only where S3 demands them. Emulators that do not understand the
   * aws-chunked framing of streamed checksummed uploads (s3rver) store it inside the object otherwise. Integrity
   * does not depend on it: every part's SHA-256 is recorded in the manifest and verified on read.
   * Default: `when-required` when an endpoint is given, `when-supported` (the SDK default) otherwise.
   */
  readonly checksums?: 'when-required' | 'when-supported'
}

/** Region used with an endpoint override when none is configured (emulators ignore it, the SDK needs one). */
const EMULATOR_REGION = 'us-east-1'

function base(options: AwsClientOptions) {
  return {
    ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
    ...(options.region !== undefined
      ? { region: options.region }
      : options.endpoint !== undefined && process.env.AWS_REGION === undefined
        ? { region: EMULATOR_REGION }
        : {}),
    ...(options.credentials !== undefined ? { credentials: { ...options.credentials } } : {}),
    // The SDK retries throttling and 5xx with backoff; 5 attempts ride out a short S3 or DynamoDB brown-out.
    maxAttempts: 5,
  }
}

/** An S3 client for the staging store (see `S3ClientOptions` for the emulator settings). */
export function makeS3Client(options: S3ClientOptions = {}): S3Client {
  const checksums = options.checksums ?? (options.endpoint !== undefined ? 'when-required' : 'when-supported')
  const mode = checksums === 'when-required' ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED'
  return new S3Client({
    ...base(options),
    forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
    requestChecksumCalculation: mode,
    responseChecksumValidation: mode,
  })
}

/** A DynamoDB client for the state store. */
export function makeDynamoDbClient(options: AwsClientOptions = {}): DynamoDBClient {
  return new DynamoDBClient(base(options))
}

/** A Secrets Manager client (resolving `url_env` values that are secret ARNs). */
export function makeSecretsManagerClient(options: AwsClientOptions = {}): SecretsManagerClient {
  return new SecretsManagerClient(base(options))
}
