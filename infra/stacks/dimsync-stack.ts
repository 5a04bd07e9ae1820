/**
 * The whole loader for the tables of one dimsync.yaml: storage, one extract/merge function pair per size class,
 * the state machine, the schedules, notifications, alarms and a dashboard. Every function may touch only the
 * bucket prefixes, state table and secrets of the tables it serves.
 */
import { Annotations, CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager'
import type { Construct } from 'constructs'
import { AWS_ENV, SECRET_NAME_PREFIX, STATE_PARTITIONS } from '../../lib/runtime/aws-env.ts'
import { LoaderFunction } from '../constructs/loader-function.ts'
import { Monitoring, Notifications } from '../constructs/monitoring.ts'
import { Orchestration, type OrchestratedTable } from '../constructs/orchestration.ts'
import { EXTRACT_RETRIERS, longestWaitBetweenPassesSeconds } from '../retriers.ts'
import { Storage } from '../constructs/storage.ts'
import { TableSchedules, type ScheduledTable } from '../constructs/table-schedules.ts'
import { STAGING_PREFIX } from '../defaults.ts'
import type { DeploymentPlan, FunctionClassPlan } from '../deploy-plan.ts'

export interface DimsyncStackProps extends StackProps {
  readonly plan: DeploymentPlan
  /** Handler files; default functions/extract/handler.ts and functions/merge/handler.ts. */
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

export class DimsyncStack extends Stack {
  readonly storage: Storage
  readonly functions: Record<string, { readonly extract: LoaderFunction; readonly merge: LoaderFunction }> =
    {}
  readonly orchestration: Orchestration
  readonly schedules: TableSchedules
  readonly monitoring: Monitoring
  readonly #secrets = new Map<string, secretsmanager.ISecret>()

  constructor(scope: Construct, id: string, props: DimsyncStackProps) {
    super(scope, id, props)
    const { plan } = props
    const removalPolicy = plan.removalPolicy === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN
    this.storage = new Storage(this, 'Storage', { removalPolicy })
    const notifications = new Notifications(this, 'Notifications', {
      removalPolicy,
      ...(plan.alarmEmail !== undefined ? { alarmEmail: plan.alarmEmail } : {}),
    })
    const vpc = this.#vpc(plan)
    const bigQuerySecret =
      plan.bigQuerySecret !== undefined ? this.#secret('BigQuerySecret', plan.bigQuerySecret) : undefined

    const common = {
      [AWS_ENV.stagingBucket]: this.storage.bucket.bucketName,
      [AWS_ENV.stagingPrefix]: STAGING_PREFIX,
      [AWS_ENV.stateTable]: this.storage.stateTable.tableName,
      [AWS_ENV.warehouse]: 'bigquery',
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
      topic: notifications.topic,
      topicKey: notifications.key,
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
      topic: notifications.topic,
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

    new CfnOutput(this, 'StateMachineArn', { value: this.orchestration.stateMachine.stateMachineArn })
    new CfnOutput(this, 'StagingBucketName', { value: this.storage.bucket.bucketName })
    new CfnOutput(this, 'StateTableName', { value: this.storage.stateTable.tableName })
    new CfnOutput(this, 'NotificationTopicArn', { value: notifications.topic.topicArn })
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

  /** Objects and listing under `staging/<table>/` of the class's tables only. */
  #grantStaging(fn: LoaderFunction, fnClass: FunctionClassPlan, actions: string[]): void {
    const bucket = this.storage.bucket
    fn.addPolicy('Staging', {
      statements: [
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
   * Manager only). A secret named without its ARN suffix is granted as `name-??????` (the suffix AWS appends).
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
                  StringEquals: { 'kms:ViaService': `secretsmanager.${this.region}.amazonaws.com` },
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
