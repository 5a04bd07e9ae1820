/**
 * X-Ray tracing and execution logs of a state machine, set on the resource instead of through the L2 props:
 * those would add their wildcard statements to the role's default policy, where an acknowledgement would also
 * hide any later one. Logs are ERROR-level without execution data unless the config raises them: inputs,
 * outputs and error causes can hold key values and SQL.
 */
import { Validations } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import type * as logs from 'aws-cdk-lib/aws-logs'
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions'
import type { DeploymentPlan } from '../deploy-plan.ts'
import { scopedPolicy } from '../nag-acknowledgements.ts'

export function observeStateMachine(
  stateMachine: sfn.StateMachine,
  logGroup: logs.ILogGroup,
  executionLogs: DeploymentPlan['executionLogs'],
): void {
  const resource = stateMachine.node.defaultChild as sfn.CfnStateMachine
  resource.tracingConfiguration = { enabled: true }
  const statements = [
    new iam.PolicyStatement({
      actions: [
        'xray:PutTraceSegments',
        'xray:PutTelemetryRecords',
        'xray:GetSamplingRules',
        'xray:GetSamplingTargets',
      ],
      resources: ['*'],
    }),
  ]
  if (executionLogs.level !== 'off') {
    resource.loggingConfiguration = {
      destinations: [{ cloudWatchLogsLogGroup: { logGroupArn: logGroup.logGroupArn } }],
      level: executionLogs.level.toUpperCase(),
      includeExecutionData: executionLogs.includeData,
    }
    statements.push(
      new iam.PolicyStatement({
        actions: [
          'logs:CreateLogDelivery',
          'logs:GetLogDelivery',
          'logs:UpdateLogDelivery',
          'logs:DeleteLogDelivery',
          'logs:ListLogDeliveries',
          'logs:PutResourcePolicy',
          'logs:DescribeResourcePolicies',
          'logs:DescribeLogGroups',
        ],
        resources: ['*'],
      }),
    )
  }
  const policy = scopedPolicy(stateMachine.node.scope!, `${stateMachine.node.id}Observability`, {
    role: stateMachine.role,
    statements,
    reason:
      'X-Ray and the CloudWatch Logs delivery actions Step Functions needs for its log group support no ' +
      'resource-level permissions.',
  })
  // Step Functions refuses to create a logging state machine whose role cannot deliver logs yet.
  resource.node.addDependency(policy)
  if (executionLogs.level !== 'all')
    Validations.of(stateMachine).acknowledge({
      id: 'AwsSolutions-SF1',
      reason:
        'Execution logs are ERROR-level by default: every state of a successful run would otherwise be logged, ' +
        'with inputs and outputs that can hold key values; aws.execution_logs raises the level.',
    })
}
