import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { S3Client } from '@aws-sdk/client-s3'
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager'

import { makeDynamoDbClient, makeS3Client, makeSecretsManagerClient } from '../adapters/aws/aws-clients.ts'
import {
  isSecretReference,
  resolveSourceSecrets,
  secretToUrl,
  secretsManagerGetter,
  type GetSecret,
} from '../adapters/aws/source-secrets.ts'
import type { BigQueryWarehouseOptions } from '../adapters/warehouse/bigquery-warehouse.ts'
import { S3StagingStore } from '../adapters/staging/s3-staging-store.ts'
import { DynamoDbStateStore } from '../adapters/state/dynamodb-state-store.ts'
import { readChoice, readInteger, readRequiredString, readString, readUrl, type Env } from '../config/env.ts'
import { assertTableMatchesSource, loadProject } from '../config/index.ts'
import { ConfigError, DimsyncError } from '../core/errors.ts'
import type { ProjectSpec, TableSpec } from '../core/table-spec.ts'
import type { Source } from '../ports/source.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { AWS_ENV } from './aws-env.ts'
import { openSource } from './open-source.ts'
import {
  DEPLOYED_WAREHOUSE_TYPE,
  LAMBDA_WAREHOUSE_TYPES,
  WAREHOUSE_BUNDLES,
  type LambdaWarehouseType,
} from './warehouse-registry.ts'

// The CLI's store locations (`--staging`, `--state`) live in store-overrides.ts; their parsers are part of the
// settings this module's callers read.
export {
  parseStagingLocation,
  parseStateLocation,
  type StagingLocation,
  type StateLocation,
  type StoreOverrides,
} from './store-overrides.ts'

/** The warehouses the functions can open (DIMSYNC_WAREHOUSE): the kinds whose bundle has a Lambda opener. */
export type WarehouseKind = LambdaWarehouseType

/** The Lambda functions' settings, read once per container from the environment contract (aws-env.ts). */
export interface AwsSettings {
  readonly configPath: string
  readonly stagingBucket: string
  readonly stagingPrefix: string
  readonly stateTable: string
  readonly warehouse: WarehouseKind
  readonly duckdbPath?: string
  readonly bigQuerySecretArn?: string
  readonly leaseTtlMs: number
  /** How long a lease handed from one extract pass to the next lasts (the longest wait between passes). */
  readonly handOverTtlMs: number
  readonly runTtlDays: number
  readonly abandonedBatchMs: number
  readonly scratchDir?: string
  readonly s3Endpoint?: string
  readonly dynamoDbEndpoint?: string
  readonly secretsManagerEndpoint?: string
  readonly bigQueryEndpoint?: string
}

/**
 * Reads and checks the environment contract. Every problem is a `ConfigError` naming the variable and what was
 * expected (`DIMSYNC_STAGING_BUCKET: is required (...)`).
 */
export function readAwsSettings(env: Env): AwsSettings {
  const warehouse = readChoice(env, AWS_ENV.warehouse, LAMBDA_WAREHOUSE_TYPES, DEPLOYED_WAREHOUSE_TYPE)
  return {
    configPath: readString(env, AWS_ENV.configPath, 'dimsync.yaml'),
    stagingBucket: readRequiredString(env, AWS_ENV.stagingBucket, 'the S3 bucket for staged batches'),
    stagingPrefix: readString(env, AWS_ENV.stagingPrefix, ''),
    stateTable: readRequiredString(
      env,
      AWS_ENV.stateTable,
      'the DynamoDB table for watermarks, leases and runs',
    ),
    warehouse,
    duckdbPath:
      warehouse === 'duckdb'
        ? readRequiredString(
            env,
            AWS_ENV.duckdbPath,
            `the DuckDB file, needed when ${AWS_ENV.warehouse}=duckdb`,
          )
        : undefined,
    bigQuerySecretArn: readString(env, AWS_ENV.bigQuerySecretArn),
    leaseTtlMs: readInteger(env, AWS_ENV.leaseTtlSeconds, { defaultValue: 120, min: 1, max: 3600 }) * 1000,
    handOverTtlMs:
      readInteger(env, AWS_ENV.handOverTtlSeconds, { defaultValue: 120, min: 1, max: 86_400 }) * 1000,
    runTtlDays: readInteger(env, AWS_ENV.runTtlDays, { defaultValue: 90, min: 1, max: 3650 }),
    abandonedBatchMs:
      readInteger(env, AWS_ENV.abandonedBatchMinutes, { defaultValue: 60, min: 1, max: 100_000 }) * 60_000,
    scratchDir: readString(env, AWS_ENV.scratchDir),
    s3Endpoint: readUrl(env, AWS_ENV.s3Endpoint),
    dynamoDbEndpoint: readUrl(env, AWS_ENV.dynamoDbEndpoint),
    secretsManagerEndpoint: readUrl(env, AWS_ENV.secretsManagerEndpoint),
    bigQueryEndpoint: readUrl(env, AWS_ENV.bigQueryEndpoint),
  }
}

/** What the extract and merge functions need; built once per container by `buildAwsDeps`. */
export interface AwsDeps {
  readonly project: ProjectSpec
  readonly settings: AwsSettings
  readonly staging: S3StagingStore
  readonly state: DynamoDbStateStore
  readonly clock: () => Date
  /** The table named `name`, or a `ConfigError` listing the configured tables. */
  table(name: string): TableSpec
  /** Resolves `url_env` secret ARNs (once per container); call before the first `openSource`. */
  prepareSources(): Promise<void>
  openSource(table: TableSpec): Source
  checkSourceColumns(table: TableSpec, columns: readonly string[]): void
  /** The warehouse, opened on first use (the extract function never opens it). */
  warehouse(): Promise<Warehouse<SqlDialect>>
  /** The AWS clients made so far (Secrets Manager's on its first read), as instrumented. */
  readonly awsClients: readonly AwsClient[]
  /**
   * Reads again the secret a step of `table` logs in with (the extract: its source's; the merge: BigQuery's),
   * after that login was refused: `rotated` when its value changed, which later connections then use.
   * Undefined when the step reads no secret (a URL in the environment, Application Default Credentials).
   */
  refreshSecret(
    step: 'extract' | 'merge',
    table: TableSpec,
  ): Promise<{ readonly secret: string; readonly rotated: boolean } | undefined>
  close(): Promise<void>
}

/** What every AWS SDK client has that instrumentation (X-Ray) hooks into. */
export type AwsClient = S3Client | DynamoDBClient | SecretsManagerClient

export interface BuildAwsDepsOptions {
  /** Secret reader (tests); default: Secrets Manager. */
  readonly getSecret?: GetSecret
  readonly clock?: () => Date
  /**
   * Applied to every AWS client the container makes (S3, DynamoDB, Secrets Manager), e.g. the Powertools
   * Tracer's captureAWSv3Client so their calls appear in X-Ray traces.
   */
  readonly instrumentClient?: <C extends AwsClient>(client: C) => C
  /** BigQuery client settings (tests: shorter waits between retries); nothing in the functions. */
  readonly bigQuery?: Partial<BigQueryWarehouseOptions>
}

/**
 * Composition root of the Lambda functions: reads the environment contract, loads dimsync.yaml, and builds the
 * S3 staging store, the DynamoDB state store and (lazily) the warehouse. AWS clients use the SDK's default
 * region and credential chain; endpoint overrides exist for LocalStack, MinIO and the test emulators.
 */
export async function buildAwsDeps(
  env: Env = process.env,
  options: BuildAwsDepsOptions = {},
): Promise<AwsDeps> {
  const settings = readAwsSettings(env)
  const project = await loadProject(settings.configPath)
  const clock = options.clock ?? (() => new Date())
  const awsClients: AwsClient[] = []
  const instrumented = <C extends AwsClient>(client: C): C => {
    const made = options.instrumentClient?.(client) ?? client
    awsClients.push(made)
    return made
  }
  const s3 = instrumented(makeS3Client({ endpoint: settings.s3Endpoint }))
  const dynamo = instrumented(makeDynamoDbClient({ endpoint: settings.dynamoDbEndpoint }))
  const staging = new S3StagingStore({
    client: s3,
    bucket: settings.stagingBucket,
    prefix: settings.stagingPrefix,
    scratchRoot: settings.scratchDir,
  })
  const state = new DynamoDbStateStore({
    client: dynamo,
    tableName: settings.stateTable,
    runTtlDays: settings.runTtlDays,
    clock,
  })
  let sourceEnv: Record<string, string | undefined> | undefined
  let preparing: Promise<void> | undefined
  let warehouse: Promise<Warehouse<SqlDialect>> | undefined
  let secretsManager: GetSecret | undefined
  const getSecret: GetSecret = (arn) => {
    secretsManager ??=
      options.getSecret ??
      secretsManagerGetter(
        instrumented(makeSecretsManagerClient({ endpoint: settings.secretsManagerEndpoint })),
      )
    return secretsManager(arn)
  }
  /** The BigQuery key the open warehouse logged in with (to tell a rotated secret from a wrong one). */
  let warehouseKey: string | undefined
  const readWarehouseKey: GetSecret = async (arn) => (warehouseKey = await getSecret(arn))
  return {
    project,
    settings,
    staging,
    state,
    clock,
    awsClients,
    table(name) {
      const table = project.tables.find((t) => t.name === name)
      if (!table) {
        throw new ConfigError(project.configPath, [
          `table ${JSON.stringify(name)} is not configured (tables: ${project.tables.map((t) => t.name).join(', ')})`,
        ])
      }
      return table
    },
    prepareSources() {
      preparing ??= (async () => {
        sourceEnv = await resolveSourceSecrets(project, env, getSecret)
      })().catch((error: unknown) => {
        preparing = undefined // a transient Secrets Manager failure must not poison the container
        throw error
      })
      return preparing
    },
    openSource(table) {
      if (sourceEnv === undefined) {
        throw new DimsyncError(
          `table ${table.name}: sources opened before prepareSources() resolved their secrets`,
        )
      }
      // File sources on S3 read with the container's own S3 client (same endpoint as staging), so their calls
      // are instrumented (X-Ray) like every other AWS call of the function.
      return openSource(table, { baseDir: project.baseDir, env: sourceEnv, s3Client: s3 })
    },
    checkSourceColumns(table, columns) {
      assertTableMatchesSource(
        project,
        project.tables.findIndex((t) => t.name === table.name),
        columns,
      )
    },
    warehouse() {
      warehouse ??= openWarehouse(settings, project, readWarehouseKey, options.bigQuery).catch(
        (error: unknown) => {
          warehouse = undefined
          throw error
        },
      )
      return warehouse
    },
    async refreshSecret(step, table) {
      if (step === 'extract') {
        if (table.source.type === 'file') return undefined
        const variable = table.source.urlEnv
        const arn = env[variable]?.trim()
        if (arn === undefined || !isSecretReference(arn)) return undefined
        const url = secretToUrl(variable, arn, table.source.type, await getSecret(arn))
        const rotated = sourceEnv !== undefined && sourceEnv[variable] !== url
        if (sourceEnv !== undefined) sourceEnv[variable] = url
        return { secret: arn, rotated }
      }
      const arn = WAREHOUSE_BUNDLES[settings.warehouse].lambda?.loginSecret?.(settings, project)
      if (arn === undefined) return undefined
      const key = await getSecret(arn)
      const rotated = warehouseKey !== undefined && key !== warehouseKey
      if (rotated && warehouse !== undefined) {
        const stale = warehouse
        warehouse = undefined
        await (await stale.catch(() => undefined))?.close().catch(() => undefined)
      }
      return { secret: arn, rotated }
    },
    async close() {
      if (warehouse !== undefined) await (await warehouse.catch(() => undefined))?.close()
      for (const client of awsClients) client.destroy()
    },
  }
}

/** The warehouse the functions merge into: the bundle `DIMSYNC_WAREHOUSE` names opens it. */
async function openWarehouse(
  settings: AwsSettings,
  project: ProjectSpec,
  getSecret: GetSecret,
  bigQuery: Partial<BigQueryWarehouseOptions> | undefined,
): Promise<Warehouse<SqlDialect>> {
  const lambda = WAREHOUSE_BUNDLES[settings.warehouse].lambda
  if (lambda === undefined)
    throw new ConfigError(project.configPath, [
      `${AWS_ENV.warehouse}=${settings.warehouse}: the functions cannot open this warehouse`,
    ])
  return await lambda.open({ settings, project, getSecret, ...(bigQuery !== undefined ? { bigQuery } : {}) })
}
