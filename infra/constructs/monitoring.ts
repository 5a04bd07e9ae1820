/**
 * Notifications and alarms: an encrypted SNS topic (optionally with an email subscription), per table an alarm
 * on failed runs and one on staleness (no successful load in twice the schedule interval), one when the
 * staleness check itself stops succeeding, alarms on executions that ended outside the failure path (timed out,
 * aborted, failed without a notice), and a small dashboard.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as kms from 'aws-cdk-lib/aws-kms'
import * as sns from 'aws-cdk-lib/aws-sns'
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import * as scheduler from 'aws-cdk-lib/aws-scheduler'
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions'
import { Construct } from 'constructs'
import { METRIC, METRICS_NAMESPACE } from '../defaults.ts'
import type { DeploymentPlan } from '../deploy-plan.ts'
import { STALE_METRIC, STALENESS_CHECK_MINUTES, StalenessCheck } from './staleness-check.ts'
import type { TableSchedules } from './table-schedules.ts'

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

/** A function the alarms watch, with the timeout its duration is compared to. */
export interface MonitoredFunction {
  /** Construct id part: `ExtractMedium`. */
  readonly id: string
  readonly function: lambda.IFunction
  readonly timeoutSeconds: number
}

export interface MonitoringProps {
  readonly tables: readonly MonitoredTable[]
  /** The stack's schedules: their group, the dead-letter queue of each, and where the staleness check goes. */
  readonly schedules: TableSchedules
  readonly functions: readonly MonitoredFunction[]
  /** For the staleness check's own state machine. */
  readonly executionLogs: DeploymentPlan['executionLogs']
  readonly logRetentionDays: number
  readonly removalPolicy: RemovalPolicy
  readonly topic: sns.ITopic
  readonly stateMachine: sfn.StateMachine
}

/**
 * A function this close to its timeout is about to be killed: an extract pass stops a minute before its timeout
 * on purpose (functions/shared/handlers.ts), so only the last half of that minute is a warning.
 */
export const NEAR_TIMEOUT_SECONDS = 30

function tableMetric(name: string, table: string, period: Duration, statistic = 'Sum'): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { Table: table },
    statistic,
    period,
  })
}

export class Monitoring extends Construct {
  readonly failureAlarms: Record<string, cloudwatch.Alarm> = {}
  readonly stalenessAlarms: Record<string, cloudwatch.Alarm> = {}
  /** Alarms when the staleness check stops succeeding (absent when no table is checked). */
  stalenessCheckAlarm?: cloudwatch.Alarm
  readonly dashboard: cloudwatch.Dashboard

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id)
    const notify = new actions.SnsAction(props.topic)

    for (const table of props.tables) {
      // No action: the state machine's notification is the one message of a failed run; the alarm shows it on
      // the dashboard.
      this.failureAlarms[table.name] = this.#whenAtLeast(
        `Failed-${table.name}`,
        `dimsync: a run of table ${table.name} failed (the SNS notice says why; no other message)`,
        tableMetric(METRIC.failed, table.name, Duration.minutes(5)),
      )
    }
    this.#stalenessAlarms(props, notify)

    const escaped = this.#executionAlarms(props.stateMachine, notify)
    const functionAlarms = props.functions.flatMap((fn) => this.#functionAlarms(fn, notify))
    const scheduleAlarms = this.#scheduleAlarms(props.schedules, notify)

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
            alarms: [
              ...Object.values(this.failureAlarms),
              ...Object.values(this.stalenessAlarms),
              ...(this.stalenessCheckAlarm !== undefined ? [this.stalenessCheckAlarm] : []),
              ...escaped,
              ...functionAlarms,
              ...scheduleAlarms,
            ],
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

  /**
   * What ends an execution without the state machine's own notice: a failure outside its catch (an expression
   * error, a notice that could not be sent), a timeout, a throttled start.
   */
  #executionAlarms(sm: sfn.StateMachine, notify: actions.SnsAction): cloudwatch.Alarm[] {
    // A failed execution and the count of reported failures land in the same 15 minutes unless the minute
    // boundary falls in the second between the two.
    const period = Duration.minutes(15)
    const untold = this.#whenAtLeast(
      'ExecutionsFailedUntold',
      'dimsync: an execution failed without a notification (an error outside its catch, or the notice could ' +
        'not be sent); see the failed executions of the state machine',
      new cloudwatch.MathExpression({
        expression: 'FILL(failed, 0) - FILL(reported, 0)',
        usingMetrics: {
          failed: sm.metricFailed({ period, statistic: 'Sum' }),
          reported: new cloudwatch.Metric({
            namespace: METRICS_NAMESPACE,
            metricName: METRIC.failuresReported,
            statistic: 'Sum',
            period,
          }),
        },
        label: 'failed executions nobody was told about',
        period,
      }),
    )
    const timedOut = this.#whenAtLeast(
      'ExecutionsTimedOut',
      'dimsync: an execution ran into the state machine timeout (24 hours); it was not reported',
      sm.metricTimedOut({ period: Duration.minutes(5), statistic: 'Sum' }),
    )
    const throttled = this.#whenAtLeast(
      'ExecutionsThrottled',
      'dimsync: Step Functions throttled the start of an execution; a load may not have run',
      sm.metricThrottled({ period: Duration.minutes(5), statistic: 'Sum' }),
    )
    const aborted = this.#whenAtLeast(
      'ExecutionsAborted',
      'dimsync: an execution was stopped before it ended (no notice is sent for it); an extract stopped between ' +
        'passes keeps its table busy until its lease expires, and its batch is removed by the next extract',
      sm.metricAborted({ period: Duration.minutes(5), statistic: 'Sum' }),
    )
    for (const alarm of [untold, timedOut, throttled, aborted]) alarm.addAlarmAction(notify)
    return [untold, timedOut, throttled, aborted]
  }

  /**
   * Throttles (a run waited for concurrency) and a duration close to the timeout (the next run may be killed)
   * notify; errors do not, each failed run being notified by the state machine (and a retried LockHeldError is
   * an error too).
   */
  #functionAlarms(fn: MonitoredFunction, notify: actions.SnsAction): cloudwatch.Alarm[] {
    const period = Duration.minutes(5)
    const throttles = this.#whenAtLeast(
      `Throttles-${fn.id}`,
      `dimsync: invocations of ${fn.id} were throttled (reserved concurrency or account limit)`,
      fn.function.metricThrottles({ period, statistic: 'Sum' }),
    )
    const limitSeconds = fn.timeoutSeconds - NEAR_TIMEOUT_SECONDS
    const nearTimeout = this.#whenAtLeast(
      `NearTimeout-${fn.id}`,
      `dimsync: ${fn.id} ran ${limitSeconds} s or longer, close to its ${fn.timeoutSeconds} s timeout; give ` +
        'the tables a larger lambda size or split their extract',
      fn.function.metricDuration({ period, statistic: 'Maximum' }),
      limitSeconds * 1000,
    )
    const errors = this.#whenAtLeast(
      `Errors-${fn.id}`,
      `dimsync: ${fn.id} returned errors (no message: each failed run is notified by the state machine, and ` +
        'retried lock waits count here too)',
      fn.function.metricErrors({ period, statistic: 'Sum' }),
    )
    throttles.addAlarmAction(notify)
    nearTimeout.addAlarmAction(notify)
    return [throttles, nearTimeout, errors]
  }

  /**
   * A scheduled start that failed after its retries lands in the schedule's dead-letter queue (one message there,
   * naming the table); one that could not even be put there, or was dropped, alarms for the group. Target errors
   * that a retry fixed are shown, not sent.
   */
  #scheduleAlarms(schedules: TableSchedules, notify: actions.SnsAction): cloudwatch.Alarm[] {
    const period = Duration.minutes(5)
    const waiting = Object.entries(schedules.deadLetters).map(([id, { queue, purpose }]) =>
      this.#whenAtLeast(
        id.replace(/^Schedule-/, 'StartLost-'),
        `dimsync: the schedule to ${purpose} could not start its state machine; the start is in its ` +
          'dead-letter queue (start it by hand, then delete the message)',
        queue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
      ),
    )
    const group = schedules.group
    const lost = this.#whenAtLeast(
      'ScheduledStartsDropped',
      'dimsync: a scheduled start was dropped without reaching a dead-letter queue',
      new cloudwatch.MathExpression({
        expression: 'FILL(dropped, 0) + FILL(undelivered, 0)',
        usingMetrics: {
          dropped: group.metricDropped({ period, statistic: 'Sum' }),
          undelivered: group.metricFailedToBeSentToDLQ(undefined, { period, statistic: 'Sum' }),
        },
        period,
      }),
    )
    for (const alarm of [...waiting, lost]) alarm.addAlarmAction(notify)
    const targetErrors = this.#whenAtLeast(
      'ScheduleTargetErrors',
      'dimsync: a schedule failed to start the state machine and retried (no message: a start that still fails ' +
        'goes to a dead-letter queue, which alarms)',
      group.metricTargetErrors({ period, statistic: 'Sum' }),
    )
    return [...waiting, lost, targetErrors]
  }

  /**
   * Per scheduled table, an alarm on the `Stale` metric the staleness check publishes every 15 minutes. One
   * message when a table becomes stale, none when it recovers; a missing check keeps the alarm as it was, and the
   * check's own alarm says that no check succeeded.
   */
  #stalenessAlarms(props: MonitoringProps, notify: actions.SnsAction): void {
    const checked = props.tables.flatMap((t) => {
      const schedule = props.schedules.schedules[t.name]
      return t.stalenessWindowMinutes !== undefined && schedule !== undefined
        ? [{ name: t.name, windowMinutes: t.stalenessWindowMinutes, schedule }]
        : []
    })
    if (checked.length === 0) return
    const check = new StalenessCheck(this, 'StalenessCheck', {
      tables: checked,
      group: props.schedules.group,
      executionLogs: props.executionLogs,
      logRetentionDays: props.logRetentionDays,
      removalPolicy: props.removalPolicy,
    })
    props.schedules.addStateMachineSchedule('Schedule-StalenessCheck', {
      purpose: 'check that every scheduled table loaded recently',
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(STALENESS_CHECK_MINUTES)),
      stateMachine: check.stateMachine,
      input: {},
    })
    // The Stale alarms keep their state while no check runs (one message, here, instead of one per table).
    const checkPeriod = Duration.minutes(STALENESS_CHECK_MINUTES)
    const missedChecks = 3
    const checkFailing = new cloudwatch.Alarm(this, 'StalenessCheckFailing', {
      alarmDescription:
        `dimsync: the staleness check has not succeeded in ${missedChecks * STALENESS_CHECK_MINUTES} minutes, so ` +
        `the staleness alarms of ${checked.map((t) => t.name).join(', ')} are not updated; see the failed ` +
        "executions of the staleness check state machine (or its schedule's dead-letter queue)",
      metric: check.stateMachine.metricSucceeded({ period: checkPeriod, statistic: 'Sum' }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: missedChecks,
      datapointsToAlarm: missedChecks,
      // No data is no successful check: a check that stopped running is as broken as one that fails.
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    })
    checkFailing.addAlarmAction(notify)
    this.stalenessCheckAlarm = checkFailing
    for (const table of checked) {
      const alarm = new cloudwatch.Alarm(this, `Stale-${table.name}`, {
        alarmDescription:
          `dimsync: no successful load of table ${table.name} in ${table.windowMinutes} minutes (twice its ` +
          'schedule interval)',
        metric: tableMetric(
          STALE_METRIC,
          table.name,
          Duration.minutes(2 * STALENESS_CHECK_MINUTES),
          'Maximum',
        ),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.IGNORE,
      })
      alarm.addAlarmAction(notify)
      this.stalenessAlarms[table.name] = alarm
    }
  }

  /** An alarm in ALARM while `metric` reaches `threshold` in its one period; missing data is not a breach. */
  #whenAtLeast(id: string, description: string, metric: cloudwatch.IMetric, threshold = 1): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, id, {
      alarmDescription: description,
      metric,
      threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    })
  }
}
