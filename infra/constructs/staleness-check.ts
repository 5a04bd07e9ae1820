/**
 * The staleness check: an Express state machine, started every 15 minutes by a schedule of the stack's group,
 * that publishes per scheduled table `Stale` = 1 when no load succeeded in the table's window (twice its
 * longest schedule interval), else 0. A CloudWatch alarm cannot do this alone: it looks back 7 days at most (a
 * weekly table needs 14), and it cannot tell "nothing ran yet" right after a deploy from "nothing succeeded".
 * The check can: it counts the `LoadSucceeded` metric over any window with GetMetricData, and a table whose
 * schedule was created less than one window ago is not stale yet.
 */
import { Duration, Stack } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as logs from 'aws-cdk-lib/aws-logs'
import type { RemovalPolicy } from 'aws-cdk-lib'
import type * as scheduler from 'aws-cdk-lib/aws-scheduler'
import * as sfn from 'aws-cdk-lib/aws-stepfunctions'
import { Construct } from 'constructs'
import { METRIC, METRICS_NAMESPACE } from '../defaults.ts'
import type { DeploymentPlan } from '../deploy-plan.ts'
import { scopedPolicy } from '../nag-acknowledgements.ts'
import { observeStateMachine } from './state-machine-observability.ts'

/** A scheduled table whose staleness is checked. */
export interface CheckedTable {
  readonly name: string
  readonly windowMinutes: number
  readonly schedule: scheduler.ISchedule
}

export interface StalenessCheckProps {
  readonly tables: readonly CheckedTable[]
  readonly group: scheduler.IScheduleGroup
  readonly executionLogs: DeploymentPlan['executionLogs']
  readonly logRetentionDays: number
  readonly removalPolicy: RemovalPolicy
}

/** How often the check runs: the longest a stale table goes unnoticed past its window. */
export const STALENESS_CHECK_MINUTES = 15
/** The metric the check publishes per table (dimension Table): 1 stale, 0 fresh. */
export const STALE_METRIC = 'Stale'

export class StalenessCheck extends Construct {
  readonly stateMachine: sfn.StateMachine

  constructor(scope: Construct, id: string, props: StalenessCheckProps) {
    super(scope, id)
    const partition = Stack.of(this).partition
    const integration = (action: string) => `arn:${partition}:states:::aws-sdk:${action}`
    const task = (resource: string, fields: Record<string, unknown>) => ({
      Type: 'Task',
      QueryLanguage: 'JSONata',
      Resource: integration(resource),
      ...fields,
    })
    const check = new sfn.CustomState(this, 'Check', {
      stateJson: {
        Type: 'Map',
        QueryLanguage: 'JSONata',
        Items: props.tables.map((t) => ({
          table: t.name,
          windowMinutes: t.windowMinutes,
          // Whole hours: CloudWatch keeps only hourly data for windows reaching back more than 63 days.
          periodSeconds: Math.ceil(t.windowMinutes / 60) * 3600,
          schedule: t.schedule.scheduleName,
          group: props.group.scheduleGroupName,
        })),
        MaxConcurrency: 5,
        ItemProcessor: {
          ProcessorConfig: { Mode: 'INLINE' },
          StartAt: 'ReadSchedule',
          States: {
            ReadSchedule: task('scheduler:getSchedule', {
              Arguments: { Name: '{% $states.input.schedule %}', GroupName: '{% $states.input.group %}' },
              Assign: {
                table: '{% $states.input.table %}',
                windowMs: '{% $states.input.windowMinutes * 60000 %}',
                periodSeconds: '{% $states.input.periodSeconds %}',
                created: '{% $toMillis($states.result.CreationDate) %}',
              },
              Next: 'InGrace',
            }),
            InGrace: {
              Type: 'Choice',
              QueryLanguage: 'JSONata',
              Comment: 'A schedule younger than the window (a first deploy, a new table) cannot be late yet.',
              Choices: [{ Condition: '{% $created > $millis() - $windowMs %}', Next: 'NotDueYet' }],
              Default: 'CountLoads',
            },
            NotDueYet: { Type: 'Pass', QueryLanguage: 'JSONata', Assign: { stale: 0 }, Next: 'Record' },
            CountLoads: task('cloudwatch:getMetricData', {
              Arguments: {
                StartTime: '{% $fromMillis($millis() - $windowMs) %}',
                EndTime: '{% $now() %}',
                MetricDataQueries: [
                  {
                    Id: 'loads',
                    MetricStat: {
                      Metric: {
                        Namespace: METRICS_NAMESPACE,
                        MetricName: METRIC.succeeded,
                        Dimensions: [{ Name: 'Table', Value: '{% $table %}' }],
                      },
                      Period: '{% $periodSeconds %}',
                      Stat: 'Sum',
                    },
                  },
                ],
              },
              Assign: { stale: '{% $sum($states.result.MetricDataResults[0].Values) > 0 ? 0 : 1 %}' },
              Next: 'Record',
            }),
            Record: task('cloudwatch:putMetricData', {
              Arguments: {
                Namespace: METRICS_NAMESPACE,
                MetricData: [
                  {
                    MetricName: STALE_METRIC,
                    Dimensions: [{ Name: 'Table', Value: '{% $table %}' }],
                    Value: '{% $stale %}',
                    Unit: 'Count',
                  },
                ],
              },
              End: true,
            }),
          },
        },
      },
    })
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      comment:
        'dimsync: publish Stale per scheduled table (no successful load in twice its schedule interval)',
      definitionBody: sfn.DefinitionBody.fromChainable(check),
      queryLanguage: sfn.QueryLanguage.JSONATA,
      stateMachineType: sfn.StateMachineType.EXPRESS,
      timeout: Duration.minutes(5),
    })
    const logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetentionDays as logs.RetentionDays,
      removalPolicy: props.removalPolicy,
    })
    observeStateMachine(this.stateMachine, logGroup, props.executionLogs)
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['scheduler:GetSchedule'],
        resources: props.tables.map((t) => t.schedule.scheduleArn),
      }),
    )
    scopedPolicy(this, 'Metrics', {
      role: this.stateMachine.role,
      statements: [
        new iam.PolicyStatement({ actions: ['cloudwatch:GetMetricData'], resources: ['*'] }),
        new iam.PolicyStatement({
          actions: ['cloudwatch:PutMetricData'],
          resources: ['*'],
          conditions: { StringEquals: { 'cloudwatch:namespace': METRICS_NAMESPACE } },
        }),
      ],
      reason:
        'cloudwatch:GetMetricData and PutMetricData support no resource-level permission; a cloudwatch:namespace ' +
        'condition limits publishing to the dimsync namespace.',
    })
  }
}
