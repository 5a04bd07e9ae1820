/**
 * The state machine every run goes through, scheduled or started by hand from the console with
 * `{"table": "customers", "mode": "full"}`:
 *
 *   CheckInput → Start → Extract ⟲ (while the extract says complete: false) → Merge → RecordSuccess → Done
 *                          └──────────── any error ────────────┘→ Notify → RecordFailure → Failed
 *
 * Written in JSONata so the table → functions lookup, the metric values and the messages are computed in the
 * definition, without a helper Lambda. Transient errors are retried with backoff; validation errors never are.
 */
import type { RemovalPolicy } from 'aws-cdk-lib'
import { Duration, Stack } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import type * as kms from 'aws-cdk-lib/aws-kms'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import * as logs from 'aws-cdk-lib/aws-logs'
import type * as sns from 'aws-cdk-lib/aws-sns'
import * as sfn from 'aws-cdk-lib/aws-stepfunctions'
import { Construct } from 'constructs'
import { RETRY_ERROR_NAMES } from '../../lib/runtime/aws-env.ts'
import {
  LAMBDA_SERVICE_ERRORS,
  LAMBDA_THROTTLED,
  MAX_EXTRACT_PASSES,
  METRIC,
  METRICS_NAMESPACE,
} from '../defaults.ts'
import type { DeploymentPlan } from '../deploy-plan.ts'
import { scopedPolicy } from '../nag-acknowledgements.ts'
import { observeStateMachine } from './state-machine-observability.ts'

export interface OrchestratedTable {
  readonly name: string
  /** Published versions, not functions: one code version per execution (see LoaderFunction.version). */
  readonly extract: lambda.IVersion
  readonly merge: lambda.IVersion
}

export interface OrchestrationProps {
  readonly tables: readonly OrchestratedTable[]
  readonly topic: sns.ITopic
  /** The topic's KMS key: publishing needs kms:GenerateDataKey and kms:Decrypt on it. */
  readonly topicKey: kms.IKey
  readonly executionLogs: DeploymentPlan['executionLogs']
  readonly logRetentionDays: number
  readonly removalPolicy: RemovalPolicy
}

/** Retriers shared by the extract and merge tasks; the order matters (the first matching retrier wins). */
export const RETRIERS: readonly sfn.RetryProps[] = [
  { errors: [...RETRY_ERROR_NAMES.neverRetried], maxAttempts: 0 },
  {
    errors: [...RETRY_ERROR_NAMES.retriedWithBackoff],
    interval: Duration.seconds(30),
    backoffRate: 2,
    maxAttempts: 6,
    maxDelay: Duration.minutes(5),
    jitterStrategy: sfn.JitterType.FULL,
  },
  // A throttle waits for another run of the size class to finish (an extract may take 15 minutes): about 40
  // minutes of backoff, where a service hiccup gets seconds.
  {
    errors: [LAMBDA_THROTTLED],
    interval: Duration.seconds(10),
    backoffRate: 2,
    maxAttempts: 12,
    maxDelay: Duration.minutes(5),
    jitterStrategy: sfn.JitterType.FULL,
  },
  {
    errors: [...LAMBDA_SERVICE_ERRORS],
    interval: Duration.seconds(2),
    backoffRate: 2,
    maxAttempts: 6,
    jitterStrategy: sfn.JitterType.FULL,
  },
]

const metric = (name: string, value: string, unit: string) => ({
  MetricName: name,
  Dimensions: [{ Name: 'Table', Value: '{% $table %}' }],
  Value: value,
  Unit: unit,
})
const failureReported = (value: string) => ({
  MetricName: METRIC.failuresReported,
  Value: value,
  Unit: 'Count',
})
const orZero = (expr: string) => `{% $exists(${expr}) ? ${expr} : 0 %}`

export class Orchestration extends Construct {
  readonly stateMachine: sfn.StateMachine
  readonly logGroup: logs.LogGroup

  constructor(scope: Construct, id: string, props: OrchestrationProps) {
    super(scope, id)
    const names = props.tables.map((t) => t.name)
    // `arn:aws:states:::...` exists only in the aws partition; aws-cn and aws-us-gov have their own.
    const integration = (action: string) => `arn:${Stack.of(this).partition}:states:::${action}`
    const lookup = Stack.of(this).toJsonString(
      Object.fromEntries(
        props.tables.map((t) => [t.name, { extract: t.extract.functionArn, merge: t.merge.functionArn }]),
      ),
    )
    const example = `{"table": "${names[0]}", "mode": "full"}`
    // Inside a JSONata string literal (double-quoted), the example's quotes must be escaped.
    const quotedExample = example.replace(/"/g, '\\"')

    // A refused input is reported to whoever started the execution (it fails at once with the reason); counted
    // as reported so the alarm on failures nobody was told about stays quiet. The input passes through.
    const reportRefusal = (id: string) =>
      new sfn.CustomState(this, id, {
        stateJson: {
          Type: 'Task',
          QueryLanguage: 'JSONata',
          Resource: integration('aws-sdk:cloudwatch:putMetricData'),
          Arguments: { Namespace: METRICS_NAMESPACE, MetricData: [failureReported('{% 1 %}')] },
          Output: '{% $states.input %}',
        },
      })
    const unknownTable = sfn.Fail.jsonata(this, 'UnknownTable', {
      error: 'UnknownTable',
      cause: `{% "table " & $string($states.input.table) & " is not deployed by this stack (tables: ${names.join(', ')}); start an execution with ${quotedExample}" %}`,
    })
    const invalidMode = sfn.Fail.jsonata(this, 'InvalidInput', {
      error: 'InvalidInput',
      cause: `{% "mode must be \\"full\\" or \\"incremental\\" (got " & $string($states.input.mode) & "); e.g. ${quotedExample}" %}`,
    })
    const start = sfn.Pass.jsonata(this, 'Start', {
      assign: {
        table: '{% $states.input.table %}',
        mode: '{% $exists($states.input.mode) ? $states.input.mode : null %}',
        reason:
          '{% $exists($states.input.reason) ? $string($states.input.reason) : "started by hand: " & $states.context.Execution.Name %}',
        functions: `{% $lookup(${lookup}, $states.input.table) %}`,
        passes: 0,
        resume: null,
        batchId: null,
      },
    })

    const extract = new sfn.CustomState(this, 'Extract', {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: integration('lambda:invoke'),
        Arguments: {
          FunctionName: '{% $functions.extract %}',
          Payload:
            "{% $merge([{'table': $table, 'reason': $reason}, $mode ? {'mode': $mode} : {}, " +
            "$resume != null ? {'batchId': $batchId, 'resume': $resume} : {}]) %}",
        },
        Assign: {
          extract: '{% $states.result.Payload %}',
          batchId: '{% $states.result.Payload.batchId %}',
          passes: '{% $passes + 1 %}',
        },
        Output: '{% $states.result.Payload %}',
      },
    })
    const continueExtract = sfn.Pass.jsonata(this, 'ContinueExtract', {
      comment: 'The extract stopped before its time limit and returned where to resume; call it again.',
      assign: { resume: '{% $extract.resume %}' },
    })
    const extractDidNotFinish = sfn.Pass.jsonata(this, 'ExtractDidNotFinish', {
      assign: {
        error: {
          Error: 'ExtractDidNotFinish',
          Cause: `{% "table " & $table & ": the extract was still incomplete after ${MAX_EXTRACT_PASSES} passes (batch " & $batchId & ")" %}`,
        },
        failedStep: 'Extract',
      },
    })

    const merge = new sfn.CustomState(this, 'Merge', {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: integration('lambda:invoke'),
        Arguments: {
          FunctionName: '{% $functions.merge %}',
          Payload: "{% {'table': $table, 'batchId': $batchId} %}",
        },
        // Not `merge`: a variable of that name would shadow JSONata's $merge(), which the Extract payload calls.
        Assign: { merged: '{% $states.result.Payload %}' },
        Output: '{% $states.result.Payload %}',
      },
    })

    const recordSuccess = new sfn.CustomState(this, 'RecordSuccess', {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: integration('aws-sdk:cloudwatch:putMetricData'),
        Arguments: {
          Namespace: METRICS_NAMESPACE,
          MetricData: [
            metric(METRIC.succeeded, '{% 1 %}', 'Count'),
            metric(METRIC.rows, orZero('$extract.rows'), 'Count'),
            metric(METRIC.versionsInserted, orZero('$merged.counts.insertedVersions'), 'Count'),
            metric(METRIC.versionsClosed, orZero('$merged.counts.closedVersions'), 'Count'),
            metric(
              METRIC.duration,
              '{% ($millis() - $toMillis($states.context.Execution.StartTime)) / 1000 %}',
              'Seconds',
            ),
          ],
        },
      },
    })
    const done = sfn.Succeed.jsonata(this, 'Done', {
      outputs: {
        table: '{% $table %}',
        batchId: '{% $batchId %}',
        rows: orZero('$extract.rows'),
        merge: '{% $merged %}',
      },
    })

    const recordFailure = new sfn.CustomState(this, 'RecordFailure', {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: integration('aws-sdk:cloudwatch:putMetricData'),
        Arguments: {
          Namespace: METRICS_NAMESPACE,
          MetricData: [metric(METRIC.failed, '{% 1 %}', 'Count'), failureReported('{% $notified ? 1 : 0 %}')],
        },
      },
    })
    const notify = new sfn.CustomState(this, 'Notify', {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: integration('sns:publish'),
        Arguments: {
          TopicArn: props.topic.topicArn,
          Subject:
            // SNS refuses a subject of 100 characters or more (and the failure would then go unreported).
            '{% $substring("dimsync: " & $table & " failed in " & $failedStep & " (" & $error.Error & ")", 0, 99) %}',
          Message:
            "{% $string({'table': $table, 'mode': $mode, 'reason': $reason, 'step': $failedStep, 'batchId': $batchId, " +
            "'error': $error.Error, 'cause': $error.Cause, 'execution': $states.context.Execution.Id}, true) %}",
        },
        Assign: { notified: true },
      },
    })
    const failed = sfn.Fail.jsonata(this, 'Failed', {
      error: '{% $error.Error %}',
      cause: '{% $error.Cause %}',
    })

    for (const task of [extract, merge]) for (const retry of RETRIERS) task.addRetry(retry)
    // A failure is told once, by the notification; its metrics come after, counting whether it was told.
    extract.addCatch(notify, {
      errors: ['States.ALL'],
      assign: { error: '{% $states.errorOutput %}', failedStep: 'Extract' },
    })
    merge.addCatch(notify, {
      errors: ['States.ALL'],
      assign: { error: '{% $states.errorOutput %}', failedStep: 'Merge' },
    })
    // Bookkeeping must not turn a committed load into a failed run, nor hide the failure being reported.
    recordSuccess.addCatch(done, { errors: ['States.ALL'] })
    notify.addCatch(recordFailure, { errors: ['States.ALL'], assign: { notified: false } })
    recordFailure.addCatch(failed, { errors: ['States.ALL'] })

    const extractComplete = sfn.Choice.jsonata(this, 'ExtractComplete')
      .when(
        sfn.Condition.jsonata(`{% $extract.complete = false and $passes < ${MAX_EXTRACT_PASSES} %}`),
        continueExtract.next(extract),
      )
      .when(sfn.Condition.jsonata('{% $extract.complete = false %}'), extractDidNotFinish.next(notify))
      .otherwise(merge.next(recordSuccess.next(done)))
    notify.next(recordFailure.next(failed))

    const checkInput = sfn.Choice.jsonata(this, 'CheckInput')
      .when(
        sfn.Condition.jsonata(
          `{% $type($states.input.table) = "string" ? $not($exists($lookup(${lookup}, $states.input.table))) : true %}`,
        ),
        reportRefusal('RefuseUnknownTable').next(unknownTable),
      )
      .when(
        sfn.Condition.jsonata(
          '{% $exists($states.input.mode) and $type($states.input.mode) != "null" and $not($states.input.mode in ["full", "incremental"]) %}',
        ),
        reportRefusal('RefuseInvalidInput').next(invalidMode),
      )
      .otherwise(start.next(extract.next(extractComplete)))

    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      comment: `dimsync: extract then merge one table (${names.join(', ')}); start with ${example}`,
      definitionBody: sfn.DefinitionBody.fromChainable(checkInput),
      queryLanguage: sfn.QueryLanguage.JSONATA,
      stateMachineType: sfn.StateMachineType.STANDARD,
      timeout: Duration.hours(24),
    })
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetentionDays as logs.RetentionDays,
      removalPolicy: props.removalPolicy,
    })
    observeStateMachine(this.stateMachine, this.logGroup, props.executionLogs)
    this.#allow(props)
  }

  /** Invoking the functions, publishing the run metrics, and notifying through the encrypted topic. */
  #allow(props: OrchestrationProps): void {
    // Any version of the stack's functions: an execution started before a deploy goes on invoking the version
    // it started with, after the policy has been updated for the new one.
    const versions = props.tables.flatMap((t) => [
      `${t.extract.lambda.functionArn}:*`,
      `${t.merge.lambda.functionArn}:*`,
    ])
    scopedPolicy(this, 'Invoke', {
      role: this.stateMachine.role,
      statements: [
        new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [...new Set(versions)] }),
      ],
      reason:
        'Executions invoke the function versions of the deploy they started under; one started before a deploy ' +
        'invokes an older version, whose number the new policy cannot know.',
    })
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['sns:Publish'], resources: [props.topic.topicArn] }),
    )
    // What SNS asks of a publisher to an encrypted topic, named exactly (no kms:GenerateDataKey* wildcard).
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: [props.topicKey.keyArn],
      }),
    )
    scopedPolicy(this, 'Metrics', {
      role: this.stateMachine.role,
      statements: [
        new iam.PolicyStatement({
          actions: ['cloudwatch:PutMetricData'],
          resources: ['*'],
          conditions: { StringEquals: { 'cloudwatch:namespace': METRICS_NAMESPACE } },
        }),
      ],
      reason:
        'cloudwatch:PutMetricData supports no resource-level permission; a cloudwatch:namespace condition limits ' +
        'it to the run metrics.',
    })
  }
}
