/**
 * The whole dimsync loader as one construct, for any CDK app: storage, one extract/merge function pair per size
 * class, the state machine, the schedules, notifications, alarms and a dashboard, for the tables of a
 * dimsync.yaml (given as a file, or as the same document written in TypeScript). Every function may touch only
 * the bucket prefixes, state table items and secrets of the tables it serves. The YAML app (infra/app.ts) is one
 * stack holding one of these.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Annotations, Aspects, Names, RemovalPolicy, Stack, Tags, type IAspect } from 'aws-cdk-lib'
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as kms from 'aws-cdk-lib/aws-kms'
import * as logs from 'aws-cdk-lib/aws-logs'
import type * as s3 from 'aws-cdk-lib/aws-s3'
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager'
import type * as sns from 'aws-cdk-lib/aws-sns'
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions'
import { Construct, type IConstruct } from 'constructs'
import { stringify } from 'yaml'
import type { z } from 'zod'
import type { configDocumentSchema } from '../../lib/config/config-schema.ts'
import { parseProject } from '../../lib/config/index.ts'
import { ConfigError } from '../../lib/core/errors.ts'
import type { ProjectSpec } from '../../lib/core/table-spec.ts'
import { AWS_ENV, SECRET_NAME_PREFIX, STATE_PARTITIONS } from '../../lib/runtime/aws-env.ts'
import { STAGING_PREFIX } from '../defaults.ts'
import { planDeployment, type DeploymentPlan, type FunctionClassPlan } from '../deploy-plan.ts'
import { FACTS_CONTEXT, refuseFactsOnAws } from '../facts-on-aws.ts'
import { EXTRACT_RETRIERS, longestWaitBetweenPassesSeconds, RETRIERS } from '../retriers.ts'
import { LoaderFunction } from './loader-function.ts'
import { Monitoring, Notifications } from './monitoring.ts'
import { Orchestration, type OrchestratedTable } from './orchestration.ts'
import { Storage } from './storage.ts'
import { TableSchedules, type ScheduledTable } from './table-schedules.ts'
import { VersionPruning } from './version-pruning.ts'

/** dimsync.yaml as a TypeScript value: the same keys, the same rules (checked by the same parser). */
export type DimsyncConfig = z.input<typeof configDocumentSchema>

export interface DimsyncLoaderProps {
  /**
   * The tables and options, exactly as dimsync.yaml writes them (`{ version: 1, warehouse: ..., tables: [...],
   * aws: {...} }`). Give this, `configFile` or `project`.
   */
  readonly config?: DimsyncConfig
  /** A dimsync.yaml file to deploy (copied into the functions). */
  readonly configFile?: string
  /** An already resolved dimsync.yaml (the YAML app passes what it loaded). */
  readonly project?: ProjectSpec
  /** Stage batches in this bucket (under `staging/`) instead of a new one. */
  readonly existingBucket?: s3.IBucket
  /**
   * Keep watermarks, leases and run records in this DynamoDB table instead of a new one: partition key `pk` and
   * sort key `sk` (strings), TTL attribute `expiresAt`. Re-attaches a table a destroyed stack retained.
   */
  readonly existingStateTable?: dynamodb.ITable
  /** Publish failure notices and alarms to this topic instead of a new one. */
  readonly existingTopic?: sns.ITopic
  /** The KMS key `existingTopic` is encrypted with, if it is (publishing then needs it). */
  readonly existingTopicKey?: kms.IKey
  /**
   * Customer-managed key of the staging bucket (a new one, or the key `existingBucket` is encrypted with) and of
   * every log group; overrides `aws.kms_key`. A key made in this app gets the policy CloudWatch Logs needs; an
   * imported key's policy must already allow it.
   */
  readonly encryptionKey?: kms.IKey
  /**
   * Permissions boundary of every IAM role the loader creates; overrides `aws.permissions_boundary` of the
   * config.
   */
  readonly permissionsBoundary?: iam.IManagedPolicy
  /** Handler files (tests); default functions/extract and functions/merge. */
  readonly handlerEntries?: { readonly extract?: string; readonly merge?: string }
}

const FULL_SECRET_ARN = /^arn:[^:]+:secretsmanager:[^:]+:\d{12}:secret:.+-[A-Za-z0-9]{6}$/

/**
 * What the functions look a secret of dimsync.yaml up by: an ARN as written, a name as `secretsmanager:<name>`.
 * Never an ARN built from a name: Secrets Manager takes `...:secret:prod/db-reader` (a name ending in a hyphen
 * and six characters) for a complete ARN and finds nothing.
 */
function secretReference(ref: string): string {
  return ref.startsWith('arn:') ? ref : `${SECRET_NAME_PREFIX}${ref}`
}

/** The project of exactly one of `config`, `configFile`, `project`; a bad config throws ConfigError. */
export function loaderProject(scope: IConstruct, props: DimsyncLoaderProps): ProjectSpec {
  const given = [props.config, props.configFile, props.project].filter((p) => p !== undefined).length
  if (given !== 1)
    throw new ConfigError(scope.node.path, [
      `DimsyncLoader: give exactly one of config, configFile or project (got ${given})`,
    ])
  if (props.project !== undefined) return props.project
  if (props.configFile !== undefined) {
    const file = path.resolve(props.configFile)
    if (!existsSync(file)) throw new ConfigError(file, ['config file not found'])
    return parseProject(readFileSync(file, 'utf8'), file)
  }
  // Written to a file named by its content: the functions bundle dimsync.yaml from a file.
  const text = `# written by the DimsyncLoader ${scope.node.path}\n${stringify(props.config)}`
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 16)
  const folder = path.join(tmpdir(), 'dimsync-loader-config', digest)
  mkdirSync(folder, { recursive: true })
  const file = path.join(folder, 'dimsync.yaml')
  writeFileSync(file, text)
  return parseProject(text, file)
}

/** Encrypts every log group of a scope with `key` (set on the resource, so log groups made anywhere inside count). */
class LogGroupKey implements IAspect {
  constructor(private readonly key: kms.IKey) {}
  visit(node: IConstruct): void {
    if (node instanceof logs.CfnLogGroup && node.kmsKeyId === undefined) node.kmsKeyId = this.key.keyArn
  }
}

/** Names every IAM role of a scope `<prefix><unique part>`, at most 64 characters. */
class RoleNamePrefix implements IAspect {
  constructor(private readonly prefix: string) {}
  visit(node: IConstruct): void {
    // An L2 role's name is a token that resolves to nothing unless the role was given one.
    if (!(node instanceof iam.CfnRole) || Stack.of(node).resolve(node.roleName) !== undefined) return
    node.roleName = `${this.prefix}${Names.uniqueResourceName(node, { maxLength: 64 - this.prefix.length })}`
  }
}

export class DimsyncLoader extends Construct {
  readonly plan: DeploymentPlan
  readonly storage: { readonly bucket: s3.IBucket; readonly stateTable: dynamodb.ITable }
  readonly functions: Record<string, { readonly extract: LoaderFunction; readonly merge: LoaderFunction }> =
    {}
  readonly orchestration: Orchestration
  readonly schedules: TableSchedules
  readonly monitoring: Monitoring
  readonly topic: sns.ITopic
  /** The customer-managed key of staging and logs, if any. */
  readonly encryptionKey?: kms.IKey
  readonly #secrets = new Map<string, secretsmanager.ISecret>()

  constructor(scope: Construct, id: string, props: DimsyncLoaderProps) {
    super(scope, id)
    const project = loaderProject(this, props)
    refuseFactsOnAws(project, this.node.tryGetContext(FACTS_CONTEXT.key))
    const plan = planDeployment(project)
    this.plan = plan
    const removalPolicy = plan.removalPolicy === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN
    this.encryptionKey = this.#encryptionKey(plan, props, removalPolicy)
    this.storage =
      props.existingBucket !== undefined && props.existingStateTable !== undefined
        ? { bucket: props.existingBucket, stateTable: props.existingStateTable }
        : this.#storage(removalPolicy, props)
    if (this.encryptionKey !== undefined) Aspects.of(this).add(new LogGroupKey(this.encryptionKey))
    let topicKey: kms.IKey | undefined
    if (props.existingTopic !== undefined) {
      this.topic = props.existingTopic
      topicKey = props.existingTopicKey
      if (plan.alarmEmail !== undefined)
        this.topic.addSubscription(new subscriptions.EmailSubscription(plan.alarmEmail))
    } else {
      const notifications = new Notifications(this, 'Notifications', {
        removalPolicy,
        ...(plan.alarmEmail !== undefined ? { alarmEmail: plan.alarmEmail } : {}),
      })
      this.topic = notifications.topic
      topicKey = notifications.key
    }
    const vpc = this.#vpc(plan)
    const bigQuerySecret =
      plan.bigQuerySecret !== undefined ? this.#secret('BigQuerySecret', plan.bigQuerySecret) : undefined

    const common = {
      [AWS_ENV.stagingBucket]: this.storage.bucket.bucketName,
      [AWS_ENV.stagingPrefix]: STAGING_PREFIX,
      [AWS_ENV.stateTable]: this.storage.stateTable.tableName,
      [AWS_ENV.warehouse]: plan.warehouse,
    }
    const orchestrated: OrchestratedTable[] = []
    for (const fnClass of plan.classes) {
      const tables = plan.tables.filter((t) => t.functionClass === fnClass.id)
      const sources = tables.flatMap((t) => (t.source === undefined ? [] : [t.source]))
      const sourceSecrets = sources.map((s) => ({ ...s, ref: this.#secret(`Secret-${s.urlEnv}`, s.secret) }))
      const base = {
        configPath: plan.configPath,
        architecture: plan.architecture,
        memoryMb: fnClass.memoryMb,
        timeoutSeconds: fnClass.timeoutSeconds,
        logRetentionDays: plan.logRetentionDays,
        removalPolicy,
        description: `tables ${fnClass.tables.join(', ')}`,
        ...(vpc !== undefined ? { vpc } : {}),
      }
      const extract = new LoaderFunction(this, `Extract${fnClass.id}`, {
        ...base,
        kind: 'extract',
        ...(plan.reservedConcurrency?.extract !== undefined
          ? { reservedConcurrency: plan.reservedConcurrency.extract }
          : {}),
        ...(props.handlerEntries?.extract !== undefined ? { entry: props.handlerEntries.extract } : {}),
        environment: {
          ...common,
          [AWS_ENV.handOverTtlSeconds]: String(longestWaitBetweenPassesSeconds(EXTRACT_RETRIERS)),
          ...Object.fromEntries(sourceSecrets.map((s) => [s.urlEnv, secretReference(s.secret)])),
        },
      })
      const merge = new LoaderFunction(this, `Merge${fnClass.id}`, {
        ...base,
        kind: 'merge',
        ...(plan.reservedConcurrency?.merge !== undefined
          ? { reservedConcurrency: plan.reservedConcurrency.merge }
          : {}),
        ...(props.handlerEntries?.merge !== undefined ? { entry: props.handlerEntries.merge } : {}),
        environment: {
          ...common,
          // A merge that fails with a retryable error hands the lease over to its run until its retry.
          [AWS_ENV.handOverTtlSeconds]: String(longestWaitBetweenPassesSeconds(RETRIERS)),
          ...(plan.bigQuerySecret !== undefined
            ? { [AWS_ENV.bigQuerySecretArn]: secretReference(plan.bigQuerySecret) }
            : {}),
        },
      })
      this.#grantStaging(extract, fnClass, [
        's3:PutObject',
        's3:GetObject',
        's3:DeleteObject',
        's3:AbortMultipartUpload',
      ])
      this.#grantStaging(merge, fnClass, ['s3:GetObject', 's3:DeleteObject'])
      extract.grantSourceRead(tables.flatMap((t) => (t.sourceFiles === undefined ? [] : [t.sourceFiles])))
      for (const fn of [extract, merge]) {
        fn.role.addToPolicy(
          new iam.PolicyStatement({
            actions: [
              'dynamodb:GetItem',
              'dynamodb:PutItem',
              'dynamodb:UpdateItem',
              'dynamodb:DeleteItem',
              'dynamodb:Query',
              'dynamodb:ConditionCheckItem',
            ],
            resources: [this.storage.stateTable.tableArn],
            // Only the items of this function's own tables (watermark, lease, run records).
            conditions: {
              'ForAllValues:StringEquals': {
                'dynamodb:LeadingKeys': fnClass.tables.flatMap((t) => [
                  STATE_PARTITIONS.table(t),
                  STATE_PARTITIONS.runs(t),
                ]),
              },
            },
          }),
        )
      }
      this.#grantSecrets(
        extract,
        sourceSecrets.map((s) => s.ref),
        plan.secretsKmsKeys,
      )
      if (bigQuerySecret !== undefined) this.#grantSecrets(merge, [bigQuerySecret], plan.secretsKmsKeys)

      this.functions[fnClass.id] = { extract, merge }
      for (const t of tables)
        orchestrated.push({
          name: t.name,
          extract: extract.version,
          merge: merge.version,
          extractLogGroup: extract.logGroup,
          mergeLogGroup: merge.logGroup,
          settings: { mode: t.mode, newFilesOnly: t.newFilesOnly },
        })
    }

    const order = plan.tables.map((t) => t.name)
    orchestrated.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name))
    this.orchestration = new Orchestration(this, 'Orchestration', {
      tables: orchestrated,
      topic: this.topic,
      ...(topicKey !== undefined ? { topicKey } : {}),
      stateTableName: this.storage.stateTable.tableName,
      staging: { bucket: this.storage.bucket, prefix: STAGING_PREFIX },
      executionLogs: plan.executionLogs,
      logRetentionDays: plan.logRetentionDays,
      removalPolicy,
    })
    this.schedules = new TableSchedules(this, 'Schedules', {
      tables: plan.tables.filter((t): t is ScheduledTable & typeof t => t.schedule !== undefined),
      stateMachine: this.orchestration.stateMachine,
      removalPolicy,
    })
    this.monitoring = new Monitoring(this, 'Monitoring', {
      schedules: this.schedules,
      tables: plan.tables,
      functions: plan.classes.flatMap((c) =>
        (['extract', 'merge'] as const).map((kind) => ({
          id: `${kind === 'extract' ? 'Extract' : 'Merge'}${c.id}`,
          function: this.functions[c.id]![kind].function,
          timeoutSeconds: c.timeoutSeconds,
        })),
      ),
      topic: this.topic,
      stateMachine: this.orchestration.stateMachine,
      executionLogs: plan.executionLogs,
      logRetentionDays: plan.logRetentionDays,
      removalPolicy,
    })
    for (const t of plan.tables) {
      if (t.stalenessSkipped !== undefined)
        Annotations.of(this).addWarningV2(
          'dimsync:noStalenessAlarm',
          `table ${t.name} has no staleness alarm: ${t.stalenessSkipped}`,
        )
    }
    new VersionPruning(this, 'PruneVersions', {
      versions: Object.values(this.functions).flatMap((pair) => [pair.extract.version, pair.merge.version]),
      keep: plan.functionVersionsKept,
      logRetentionDays: plan.logRetentionDays,
      removalPolicy,
    })
    this.#governance(plan, props)
  }

  /** The permissions boundary, role names and tags accounts governed by SCPs ask for. */
  #governance(plan: DeploymentPlan, props: DimsyncLoaderProps): void {
    const boundary =
      props.permissionsBoundary ??
      (plan.permissionsBoundary === undefined
        ? undefined
        : plan.permissionsBoundary.startsWith('arn:')
          ? iam.ManagedPolicy.fromManagedPolicyArn(this, 'PermissionsBoundary', plan.permissionsBoundary)
          : iam.ManagedPolicy.fromManagedPolicyName(this, 'PermissionsBoundary', plan.permissionsBoundary))
    if (boundary !== undefined) iam.PermissionsBoundary.of(this).apply(boundary)
    if (plan.roleNamePrefix !== undefined) Aspects.of(this).add(new RoleNamePrefix(plan.roleNamePrefix))
    for (const [key, value] of Object.entries(plan.tags ?? {})) Tags.of(this).add(key, value)
  }

  /** The key of `encryptionKey`, `aws.kms_key: <ARN>`, or a new one for `aws.kms_key: create`. */
  #encryptionKey(
    plan: DeploymentPlan,
    props: DimsyncLoaderProps,
    removalPolicy: RemovalPolicy,
  ): kms.IKey | undefined {
    const key =
      props.encryptionKey ??
      (plan.kmsKey === undefined
        ? undefined
        : plan.kmsKey === 'create'
          ? new kms.Key(this, 'EncryptionKey', {
              enableKeyRotation: true,
              description: 'dimsync: staged batches and logs',
              removalPolicy,
            })
          : kms.Key.fromKeyArn(this, 'EncryptionKey', plan.kmsKey))
    // CloudWatch Logs encrypts a log group only with a key whose policy lets the service use it for that group
    // (a no-op for an imported key, whose policy is its owner's).
    const stack = Stack.of(this)
    key?.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal(`logs.${stack.region}.amazonaws.com`)],
        actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
        resources: ['*'],
        conditions: {
          ArnLike: {
            'kms:EncryptionContext:aws:logs:arn': `arn:${stack.partition}:logs:${stack.region}:${stack.account}:log-group:*`,
          },
        },
      }),
    )
    return key
  }

  #storage(removalPolicy: RemovalPolicy, props: DimsyncLoaderProps) {
    const storage = new Storage(this, 'Storage', {
      removalPolicy,
      createBucket: props.existingBucket === undefined,
      createStateTable: props.existingStateTable === undefined,
      versioned: this.plan.stagingVersioning,
      ...(this.encryptionKey !== undefined ? { encryptionKey: this.encryptionKey } : {}),
    })
    return {
      bucket: props.existingBucket ?? storage.bucket!,
      stateTable: props.existingStateTable ?? storage.stateTable!,
    }
  }

  #secret(id: string, ref: string): secretsmanager.ISecret {
    const known = this.#secrets.get(ref)
    if (known !== undefined) return known
    const secret = !ref.startsWith('arn:')
      ? secretsmanager.Secret.fromSecretNameV2(this, id, ref)
      : FULL_SECRET_ARN.test(ref)
        ? secretsmanager.Secret.fromSecretCompleteArn(this, id, ref)
        : secretsmanager.Secret.fromSecretPartialArn(this, id, ref)
    this.#secrets.set(ref, secret)
    return secret
  }

  /**
   * Objects and listing under `staging/<table>/` of the class's tables only; with a customer-managed key, its use
   * through S3 (writing needs a data key, reading decrypts).
   */
  #grantStaging(fn: LoaderFunction, fnClass: FunctionClassPlan, actions: string[]): void {
    const bucket = this.storage.bucket
    const key = this.encryptionKey
    const writes = actions.includes('s3:PutObject')
    fn.addPolicy('Staging', {
      statements: [
        ...(key !== undefined
          ? [
              new iam.PolicyStatement({
                actions: writes ? ['kms:Decrypt', 'kms:GenerateDataKey'] : ['kms:Decrypt'],
                resources: [key.keyArn],
                conditions: {
                  StringEquals: { 'kms:ViaService': `s3.${Stack.of(this).region}.amazonaws.com` },
                },
              }),
            ]
          : []),
        new iam.PolicyStatement({
          actions,
          resources: fnClass.tables.map((t) => bucket.arnForObjects(`${STAGING_PREFIX}/${t}/*`)),
        }),
        new iam.PolicyStatement({
          actions: ['s3:ListBucket'],
          resources: [bucket.bucketArn],
          conditions: { StringLike: { 's3:prefix': fnClass.tables.map((t) => `${STAGING_PREFIX}/${t}/*`) } },
        }),
      ],
      reason:
        `The function writes and reads the staged batches of tables ${fnClass.tables.join(', ')}: every object ` +
        'under their own prefixes, whose keys are batch ids.',
    })
  }

  /**
   * Reading the secrets, and decrypting them with the customer-managed keys the config names (through Secrets
   * Manager only). A secret referenced by name is granted as `name-??????` (the suffix AWS appends).
   */
  #grantSecrets(
    fn: LoaderFunction,
    secrets: readonly secretsmanager.ISecret[],
    kmsKeys: readonly string[],
  ): void {
    if (secrets.length === 0) return
    const arns = [...new Set(secrets.map((s) => s.secretFullArn ?? `${s.secretArn}-??????`))]
    fn.addPolicy('Secrets', {
      statements: [
        new iam.PolicyStatement({
          actions: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
          resources: arns,
        }),
        ...(kmsKeys.length > 0
          ? [
              new iam.PolicyStatement({
                actions: ['kms:Decrypt'],
                resources: [...kmsKeys],
                conditions: {
                  StringEquals: { 'kms:ViaService': `secretsmanager.${Stack.of(this).region}.amazonaws.com` },
                },
              }),
            ]
          : []),
      ],
      reason:
        'A secret referenced by name is matched with ?????? for the random 6-character suffix Secrets Manager ' +
        'appends to its ARN.',
    })
  }

  #vpc(plan: DeploymentPlan) {
    if (plan.vpc === undefined) return undefined
    const vpc = ec2.Vpc.fromVpcAttributes(this, 'Vpc', {
      vpcId: plan.vpc.vpcId,
      availabilityZones: ['dummy'],
    })
    const subnets = plan.vpc.subnetIds.map((id) => ec2.Subnet.fromSubnetId(this, `Subnet-${id}`, id))
    const securityGroups =
      plan.vpc.securityGroupIds.length > 0
        ? plan.vpc.securityGroupIds.map((id) => ec2.SecurityGroup.fromSecurityGroupId(this, `Sg-${id}`, id))
        : [
            new ec2.SecurityGroup(this, 'FunctionsSecurityGroup', {
              vpc,
              description: 'dimsync functions: outbound only (databases, S3, DynamoDB, BigQuery)',
              allowAllOutbound: true,
            }),
          ]
    const routeTableIds = plan.vpc.gatewayEndpointRouteTableIds
    if (routeTableIds !== undefined) {
      // Gateway endpoints are free and keep staging and state traffic inside the VPC; their default policy
      // (full access) is kept because other workloads of these route tables use the same endpoints.
      for (const [id, service] of [
        ['S3Endpoint', ec2.GatewayVpcEndpointAwsService.S3],
        ['DynamoDbEndpoint', ec2.GatewayVpcEndpointAwsService.DYNAMODB],
      ] as const) {
        new ec2.CfnVPCEndpoint(this, id, {
          vpcId: plan.vpc.vpcId,
          serviceName: service.name,
          vpcEndpointType: 'Gateway',
          routeTableIds: [...routeTableIds],
        })
      }
    }
    return { vpc, subnets, securityGroups }
  }
}
