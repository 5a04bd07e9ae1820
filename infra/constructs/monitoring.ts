/**
 * Notifications and alarms: an encrypted SNS topic (optionally with an email subscription), per table an alarm
 * on failed runs and one on staleness (no successful load in twice the schedule interval), an alarm on
 * executions that ended outside the failure path (timed out, aborted), and a small dashboard.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as kms from 'aws-cdk-lib/aws-kms'
import * as sns from 'aws-cdk-lib/aws-sns'
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions'
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions'
import { Construct } from 'constructs'
import { METRIC, METRICS_NAMESPACE } from '../defaults.ts'

export interface MonitoredTable {
  readonly name: string
  readonly stalenessWindowMinutes?: number
}

export interface NotificationsProps {
  readonly alarmEmail?: string
  readonly removalPolicy: RemovalPolicy
}

/** The SNS topic alarms and the state machine publish to; encrypted with a key CloudWatch may use. */
export class Notifications extends Construct {
  readonly topic: sns.Topic
  readonly key: kms.Key

  constructor(scope: Construct, id: string, props: NotificationsProps) {
    super(scope, id)
    this.key = new kms.Key(this, 'Key', {
      enableKeyRotation: true,
      description: 'dimsync notifications topic',
      removalPolicy: props.removalPolicy,
      // The shortest window KMS allows: the key only protects notifications in transit through the topic.
      ...(props.removalPolicy === RemovalPolicy.DESTROY ? { pendingWindow: Duration.days(7) } : {}),
    })
    // CloudWatch alarms publish to an encrypted topic only if the key lets the service encrypt with it.
    this.key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    )
    this.topic = new sns.Topic(this, 'Topic', {
      displayName: 'dimsync',
      masterKey: this.key,
      enforceSSL: true,
    })
    if (props.alarmEmail !== undefined)
      this.topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail))
  }
}

export interface MonitoringProps {
  readonly tables: readonly MonitoredTable[]
  readonly topic: sns.ITopic
  readonly stateMachine: sfn.StateMachine
}

function tableMetric(name: string, table: string, period: Duration, statistic = 'Sum'): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { Table: table },
    statistic,
    period,
  })
}

/**
 * The period and count of an alarm that looks back `minutes`: one period when it fits in a day (CloudWatch
 * allows only one day of periods shorter than an hour), else hourly periods up to 7 days.
 */
export function stalenessWindow(minutes: number): { period: Duration; evaluationPeriods: number } {
  if (minutes <= 1440) return { period: Duration.minutes(minutes), evaluationPeriods: 1 }
  return { period: Duration.hours(1), evaluationPeriods: Math.ceil(minutes / 60) }
}

export class Monitoring extends Construct {
  readonly failureAlarms: Record<string, cloudwatch.Alarm> = {}
  readonly stalenessAlarms: Record<string, cloudwatch.Alarm> = {}
  readonly dashboard: cloudwatch.Dashboard

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id)
    const notify = new actions.SnsAction(props.topic)

    for (const table of props.tables) {
      const failed = new cloudwatch.Alarm(this, `Failed-${table.name}`, {
        alarmDescription: `dimsync: a run of table ${table.name} failed (see the SNS message or the Step Functions execution)`,
        metric: tableMetric(METRIC.failed, table.name, Duration.minutes(5)),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      })
      failed.addAlarmAction(notify)
      failed.addOkAction(notify)
      this.failureAlarms[table.name] = failed

      if (table.stalenessWindowMinutes !== undefined) {
        const { period, evaluationPeriods } = stalenessWindow(table.stalenessWindowMinutes)
        const stale = new cloudwatch.Alarm(this, `Stale-${table.name}`, {
          alarmDescription:
            `dimsync: no successful load of table ${table.name} in ${table.stalenessWindowMinutes} minutes ` +
            '(twice its schedule interval)',
          metric: tableMetric(METRIC.succeeded, table.name, period),
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
          evaluationPeriods,
          datapointsToAlarm: evaluationPeriods,
          // No datapoint is exactly the symptom: nothing succeeded.
          treatMissingData: cloudwatch.TreatMissingData.BREACHING,
        })
        stale.addAlarmAction(notify)
        stale.addOkAction(notify)
        this.stalenessAlarms[table.name] = stale
      }
    }

    const sm = props.stateMachine
    const abnormalEnds = new cloudwatch.MathExpression({
      expression: 'timedOut + aborted',
      usingMetrics: {
        timedOut: sm.metricTimedOut({ period: Duration.minutes(5), statistic: 'Sum' }),
        aborted: sm.metricAborted({ period: Duration.minutes(5), statistic: 'Sum' }),
      },
      label: 'executions timed out or aborted',
    })
    const abnormal = new cloudwatch.Alarm(this, 'ExecutionsTimedOutOrAborted', {
      alarmDescription: 'dimsync: an execution timed out or was stopped, so its failure was not reported',
      metric: abnormalEnds,
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    })
    abnormal.addAlarmAction(notify)

    const hour = Duration.hours(1)
    const perTable = (name: string, statistic = 'Sum') =>
      props.tables.map((t) => tableMetric(name, t.name, hour, statistic).with({ label: t.name }))
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.days(7),
      widgets: [
        [
          new cloudwatch.GraphWidget({
            title: 'Successful loads',
            left: perTable(METRIC.succeeded),
            width: 8,
          }),
          new cloudwatch.GraphWidget({ title: 'Failed runs', left: perTable(METRIC.failed), width: 8 }),
          new cloudwatch.AlarmStatusWidget({
            title: 'Alarms',
            alarms: [...Object.values(this.failureAlarms), ...Object.values(this.stalenessAlarms), abnormal],
            width: 8,
          }),
        ],
        [
          new cloudwatch.GraphWidget({ title: 'Rows extracted', left: perTable(METRIC.rows), width: 8 }),
          new cloudwatch.GraphWidget({
            title: 'Versions inserted / closed',
            left: perTable(METRIC.versionsInserted),
            right: perTable(METRIC.versionsClosed),
            width: 8,
          }),
          new cloudwatch.GraphWidget({
            title: 'Run duration (s, max)',
            left: perTable(METRIC.duration, 'Maximum'),
            width: 8,
          }),
        ],
      ],
    })
  }
}
