/**
 * Store locations for the CLI (`--staging s3://bucket/prefix --state dynamodb://table`): the AWS runtime's stores
 * from a laptop. The AWS SDK is loaded only when a location names S3 or DynamoDB.
 */
import { ConfigError } from '../core/errors.ts'
import { LocalStagingStore } from '../adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../adapters/state/local-state-store.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { StateStore } from '../ports/state-store.ts'

export type StagingLocation =
  | { readonly type: 'local'; readonly path: string }
  | { readonly type: 's3'; readonly bucket: string; readonly prefix: string }

export type StateLocation =
  { readonly type: 'local'; readonly path: string } | { readonly type: 'dynamodb'; readonly table: string }

const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/
const DYNAMODB_TABLE = /^[A-Za-z0-9_.-]{3,255}$/

/** `s3://bucket[/prefix]` or a local folder. `ConfigError` naming the option for anything else. */
export function parseStagingLocation(text: string, option = '--staging'): StagingLocation {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return { type: 'local', path: text }
  const match = /^s3:\/\/([^/]+)\/?(.*)$/.exec(text)
  if (!match || !BUCKET_NAME.test(match[1]!)) {
    throw new ConfigError(option, [
      `expected s3://<bucket>/<prefix> or a local folder, got ${JSON.stringify(text)}`,
    ])
  }
  return { type: 's3', bucket: match[1]!, prefix: match[2]!.replace(/^\/+|\/+$/g, '') }
}

/** `dynamodb://table` or a local folder. `ConfigError` naming the option for anything else. */
export function parseStateLocation(text: string, option = '--state'): StateLocation {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return { type: 'local', path: text }
  const match = /^dynamodb:\/\/([^/]+)\/?$/.exec(text)
  if (!match || !DYNAMODB_TABLE.test(match[1]!)) {
    throw new ConfigError(option, [
      `expected dynamodb://<table> or a local folder, got ${JSON.stringify(text)}`,
    ])
  }
  return { type: 'dynamodb', table: match[1]! }
}

export interface StoreOverrides {
  /** `--staging`: `s3://bucket/prefix` or a local folder. */
  readonly staging?: string
  /** `--state`: `dynamodb://table` or a local folder. */
  readonly state?: string
  /** `--endpoint-url`: one endpoint for S3 and DynamoDB (LocalStack), or unset for AWS. */
  readonly endpointUrl?: string
  /** `--s3-endpoint-url` / `--dynamodb-endpoint-url`: per service, overriding `endpointUrl` (MinIO + DynamoDB). */
  readonly s3EndpointUrl?: string
  readonly dynamodbEndpointUrl?: string
  readonly region?: string
}

export interface OpenedStores {
  readonly staging?: StagingStore
  readonly state?: StateStore
  close(): Promise<void>
}

/**
 * Builds the staging and state stores a CLI run was pointed at (`--staging`, `--state`), or nothing for the
 * ones not given (the config's local folders are used). S3 and DynamoDB use the SDK's default credential and
 * region chain (AWS_PROFILE, AWS_ACCESS_KEY_ID, ...); with an endpoint override, path-style S3 URLs and only
 * the required checksums (MinIO, LocalStack, s3rver), and region us-east-1 when none is configured.
 */
export async function openStoreOverrides(overrides: StoreOverrides): Promise<OpenedStores> {
  const clients: { destroy(): void }[] = []
  let staging: StagingStore | undefined
  let state: StateStore | undefined
  if (overrides.staging !== undefined) {
    const location = parseStagingLocation(overrides.staging)
    if (location.type === 'local') staging = new LocalStagingStore({ root: location.path })
    else {
      const [{ makeS3Client }, { S3StagingStore }] = await Promise.all([
        import('../adapters/aws/aws-clients.ts'),
        import('../adapters/staging/s3-staging-store.ts'),
      ])
      const client = makeS3Client({
        endpoint: overrides.s3EndpointUrl ?? overrides.endpointUrl,
        region: overrides.region,
      })
      clients.push(client)
      staging = new S3StagingStore({ client, bucket: location.bucket, prefix: location.prefix })
    }
  }
  if (overrides.state !== undefined) {
    const location = parseStateLocation(overrides.state)
    if (location.type === 'local') state = new LocalStateStore({ root: location.path })
    else {
      const [{ makeDynamoDbClient }, { DynamoDbStateStore }] = await Promise.all([
        import('../adapters/aws/aws-clients.ts'),
        import('../adapters/state/dynamodb-state-store.ts'),
      ])
      const client = makeDynamoDbClient({
        endpoint: overrides.dynamodbEndpointUrl ?? overrides.endpointUrl,
        region: overrides.region,
      })
      clients.push(client)
      state = new DynamoDbStateStore({ client, tableName: location.table })
    }
  }
  return {
    ...(staging ? { staging } : {}),
    ...(state ? { state } : {}),
    close: async () => {
      for (const client of clients) client.destroy()
    },
  }
}
