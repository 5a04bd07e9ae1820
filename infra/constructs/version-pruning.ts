/**
 * Deletes old published versions of the loader's functions on every deploy: a custom resource whose properties
 * hold the versions this deploy published (a new one changes them, so CloudFormation runs it again), served by a
 * small function (infra/prune-versions/index.mjs, shipped as it is, on the runtime's AWS SDK). Every deploy that
 * changes the code or dimsync.yaml publishes a version per function (tens of MB each, kept otherwise forever).
 */
import { fileURLToPath } from 'node:url'
import { CustomResource, Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import * as logs from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { LAMBDA_RUNTIME_NAME } from '../defaults.ts'
import { scopedPolicy } from '../nag-acknowledgements.ts'

const HANDLER_DIR = fileURLToPath(new URL('../prune-versions', import.meta.url))

/** No execution runs longer than the state machine's timeout: a version replaced that long ago is unused. */
export const MIN_SUPERSEDED_HOURS = 24

export interface VersionPruningProps {
  readonly versions: readonly lambda.IVersion[]
  /** Published versions kept per function, newest first. */
  readonly keep: number
  readonly logRetentionDays: number
  readonly removalPolicy: RemovalPolicy
}

export class VersionPruning extends Construct {
  constructor(scope: Construct, id: string, props: VersionPruningProps) {
    super(scope, id)
    const functions = [...new Set(props.versions.map((v) => v.lambda))]
    const logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetentionDays as logs.RetentionDays,
      removalPolicy: props.removalPolicy,
    })
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'dimsync: delete old versions of the loader functions',
    })
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [logGroup.logGroupArn],
      }),
    )
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['lambda:ListVersionsByFunction'],
        resources: functions.map((f) => f.functionArn),
      }),
    )
    scopedPolicy(this, 'DeleteVersions', {
      role,
      statements: [
        new iam.PolicyStatement({
          actions: ['lambda:DeleteFunction'],
          resources: functions.map((f) => `${f.functionArn}:*`),
        }),
      ],
      reason:
        'Old versions of the loader functions are deleted by number (function:<name>:<version>): the numbers ' +
        'are not known at deploy time. Only qualified ARNs: the functions themselves cannot be deleted.',
    })
    const handler = new lambda.Function(this, 'Function', {
      runtime: new lambda.Runtime(LAMBDA_RUNTIME_NAME, lambda.RuntimeFamily.NODEJS),
      architecture: lambda.Architecture.ARM_64,
      code: lambda.Code.fromAsset(HANDLER_DIR),
      handler: 'index.handler',
      memorySize: 256,
      timeout: Duration.minutes(5),
      role,
      logGroup,
      description: 'dimsync: delete old versions of the loader functions on deploy',
    })
    handler.node.addDependency(role)
    Validations.of(handler).acknowledge({
      id: 'AwsSolutions-L1',
      reason: 'The runtime is pinned to nodejs22.x, like the loader functions.',
    })
    new CustomResource(this, 'Resource', {
      serviceToken: handler.functionArn,
      resourceType: 'Custom::DimsyncPruneVersions',
      properties: {
        FunctionNames: functions.map((f) => f.functionName),
        Keep: props.keep,
        MinSupersededHours: MIN_SUPERSEDED_HOURS,
        Versions: props.versions.map((v) => v.functionArn),
      },
    })
  }
}
