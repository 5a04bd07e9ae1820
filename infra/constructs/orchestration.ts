/**
 * The state machine every run goes through, scheduled or started by hand from the console with
 * `{"table": "customers", "mode": "full"}`:
 *
 *   CheckInput → Start → Extract ⟲ (while the extract says complete: false) → Merge → RecordSuccess → Done
 *       │                  │  └──────────── any error ────────────┘→ Notify → RecordFailure → Failed
 *       │                  ├ skipped (a scheduled start found the table busy) → RecordSkipped → Skipped
 *       │                  └ busy (a start by hand) → RefuseBusyTable → TableBusy
 *       ├ batchId given → Replay → CheckStaged → Merge …   (not staged → RefuseUnstagedBatch → BatchNotStaged)
 *       └ unknown table, invalid input → RefuseUnknownTable / RefuseInvalidInput → UnknownTable / InvalidInput
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
import type * as s3 from 'aws-cdk-lib/aws-s3'
import type * as sns from 'aws-cdk-lib/aws-sns'
import * as sfn from 'aws-cdk-lib/aws-stepfunctions'
import { Construct } from 'constructs'
import { ERROR_DOCS } from '../../lib/core/error-docs.ts'
import { LockHeldError } from '../../lib/core/errors.ts'
import { FAILED_RUN_MARKER, STATE_PARTITIONS } from '../../lib/runtime/aws-env.ts'
import { MAX_EXTRACT_PASSES, METRIC, METRICS_NAMESPACE } from '../defaults.ts'
import type { DeploymentPlan } from '../deploy-plan.ts'
import { scopedPolicy } from '../nag-acknowledgements.ts'
import { EXTRACT_RETRIERS, RETRIERS } from '../retriers.ts'
import { MANIFEST_FILE } from '../../lib/core/batch-manifest.ts'
import { givenExpression, inputProblems, type DeployedTableSettings } from './console-input.ts'
import { observeStateMachine } from './state-machine-observability.ts'

export interface OrchestratedTable {
  readonly name: string
  /** Published versions, not functions: one code version per execution (see LoaderFunction.version). */
  readonly extract: lambda.IVersion
  readonly merge: lambda.IVersion
  /** Where the functions log: a failure notice links to the log group of the step that failed. */
  readonly extractLogGroup: logs.ILogGroup
  readonly mergeLogGroup: logs.ILogGroup
  /** The settings an execution's input is checked against (see console-input.ts). */
  readonly settings: DeployedTableSettings
}

export interface OrchestrationProps {
  readonly tables: readonly OrchestratedTable[]
  readonly topic: sns.ITopic
  /** The topic's KMS key, if it has one: publishing needs kms:GenerateDataKey and kms:Decrypt on it. */
  readonly topicKey?: kms.IKey
  /** The state table's name: a failure notice gives the key of the run record in it. */
  readonly stateTableName: string
  /** Where batches are staged: a replay (`batchId` in the input) checks that its batch is there. */
  readonly staging: { readonly bucket: s3.IBucket; readonly prefix: string }
  readonly executionLogs: DeploymentPlan['executionLogs']
  readonly logRetentionDays: number
  readonly removalPolicy: RemovalPolicy
}

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

/** Where the load's failures go (built first: the extract and merge catch into it). */
interface FailurePath {
  readonly notify: sfn.CustomState
}

export class Orchestration extends Construct {
  readonly stateMachine: sfn.StateMachine
  readonly logGroup: logs.LogGroup
  readonly #names: readonly string[]
  /** Table → { extract, merge } version ARNs, as a JSON text for JSONata's $lookup. */
  readonly #lookup: string
  /** An input a person can start an execution with, for the messages. */
  readonly #example: string

  constructor(scope: Construct, id: string, props: OrchestrationProps) {
    super(scope, id)
    this.#names = props.tables.map((t) => t.name)
    this.#lookup = Stack.of(this).toJsonString(
      Object.fromEntries(
        props.tables.map((t) => [
          t.name,
          {
            extract: t.extract.functionArn,
            merge: t.merge.functionArn,
            extractLogs: t.extractLogGroup.logGroupName,
            mergeLogs: t.mergeLogGroup.logGroupName,
            mode: t.settings.mode,
            newFilesOnly: t.settings.newFilesOnly,
          },
        ]),
      ),
    )
    this.#example = `{"table": "${this.#names[0]}"}`

    const failure = this.#failurePath(props.topic, props.stateTableName)
    const merge = this.#merge(failure)
    const load = this.#load(failure, merge)
    const replay = this.#replay(failure, merge, props.staging)
    const definition = this.#inputChecks(load, replay)
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      comment: `dimsync: extract then merge one table (${this.#names.join(', ')}); start with ${this.#example}`,
      definitionBody: sfn.DefinitionBody.fromChainable(definition),
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

  /** `arn:aws:states:::...` exists only in the aws partition; aws-cn and aws-us-gov have their own. */
  #integration(action: string): string {
    return `arn:${Stack.of(this).partition}:states:::${action}`
  }

  /** The example input inside a JSONata string literal (double-quoted): its quotes escaped. */
  get #quotedExample(): string {
    return this.#example.replace(/"/g, '\\"')
  }

  /** A task that puts run metrics into the dimsync namespace; `output` replaces the state's output when given. */
  #putMetrics(id: string, metricData: readonly object[], output?: string): sfn.CustomState {
    return new sfn.CustomState(this, id, {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: this.#integration('aws-sdk:cloudwatch:putMetricData'),
        Arguments: { Namespace: METRICS_NAMESPACE, MetricData: metricData },
        ...(output !== undefined ? { Output: output } : {}),
      },
    })
  }

  /**
   * A refusal told to whoever started the execution (it fails at once with the reason): counted as reported,
   * so the alarm on failures nobody was told about stays quiet. The input passes through.
   */
  #reportRefusal(id: string): sfn.CustomState {
    return this.#putMetrics(id, [failureReported('{% 1 %}')], '{% $states.input %}')
  }

  /**
   * Notify → RecordFailure → Failed: a failure is told once, by the notice; its metrics count whether it was.
   * The notice names the table, step, batch, error class and the run record's key, and links to the execution
   * and the failed function's logs; never the error's cause, which can hold key values and SQL (it stays in the
   * execution, for those allowed to read it).
   */
  #failurePath(topic: sns.ITopic, stateTableName: string): FailurePath {
    const notify = new sfn.CustomState(this, 'Notify', {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: this.#integration('sns:publish'),
        Arguments: {
          TopicArn: topic.topicArn,
          Subject:
            // SNS refuses a subject of 100 characters or more (and the failure would then go unreported).
            '{% $substring("dimsync: " & $table & " failed in " & $failedStep & " (" & $error.Error & ")", 0, 99) %}',
          Message: `{% ${this.#noticeExpression(stateTableName)} %}`,
        },
        Assign: { notified: true },
      },
    })
    const recordFailure = this.#putMetrics('RecordFailure', [
      metric(METRIC.failed, '{% 1 %}', 'Count'),
      failureReported('{% $notified ? 1 : 0 %}'),
    ])
    const failed = sfn.Fail.jsonata(this, 'Failed', {
      error: '{% $error.Error %}',
      cause: '{% $error.Cause %}',
    })
    // Bookkeeping must not hide the failure being reported.
    notify.addCatch(recordFailure, { errors: ['States.ALL'], assign: { notified: false } })
    recordFailure.addCatch(failed, { errors: ['States.ALL'] })
    notify.next(recordFailure.next(failed))
    return { notify }
  }

  /**
   * The failure notice as JSON text. The batch is the execution's, or else the one a failed first extract pass
   * names at the end of its error (FAILED_RUN_MARKER); console links are built from the execution ARN
   * (partition and region), so they need no CloudFormation token. `docs` is the section of docs/errors.md that
   * explains the error (none for an error dimsync does not raise).
   */
  #noticeExpression(stateTableName: string): string {
    const table = Stack.of(this).toJsonString(stateTableName)
    const { start, end } = FAILED_RUN_MARKER
    return [
      '(',
      `$cause := $type($error.Cause) = "string" ? $error.Cause : "";`,
      `$batch := $batchId != null ? $batchId : ($contains($cause, "${start}") ? $substringBefore($substringAfter($cause, "${start}"), "${end}") : null);`,
      '$arn := $states.context.Execution.Id;',
      '$arnParts := $split($arn, ":");',
      '$region := $arnParts[3];',
      `$consoleHost := $lookup({"aws-cn": "console.amazonaws.cn", "aws-us-gov": "console.amazonaws-us-gov.com"}, $arnParts[1]);`,
      '$console := "https://" & ($exists($consoleHost) ? $consoleHost : $region & ".console.aws.amazon.com");',
      '$logGroup := $failedStep = "Merge" ? $functions.mergeLogs : $functions.extractLogs;',
      '$string({',
      "'table': $table, 'step': $failedStep, 'error': $error.Error, 'batchId': $batch, 'mode': $mode, 'reason': $reason,",
      `'runRecord': $batch != null ? {'stateTable': ${table}, 'pk': '${STATE_PARTITIONS.runs('')}' & $table, 'sk': 'RUNID#run-' & $batch} : null,`,
      "'execution': $arn,",
      "'links': {",
      "'execution': $console & '/states/home?region=' & $region & '#/v2/executions/details/' & $arn,",
      "'logs': $console & '/cloudwatch/home?region=' & $region & '#logsV2:log-groups/log-group/' & $replace($logGroup, '/', '$252F')",
      '},',
      "'logGroup': $logGroup,",
      `'docs': $lookup(${JSON.stringify(ERROR_DOCS)}, $error.Error)`,
      '}, true)',
      ')',
    ].join(' ')
  }

  /** Start → Extract ⟲ → Merge → RecordSuccess → Done, with the skipped and busy endings of the extract. */
  #load(failure: FailurePath, merge: sfn.CustomState): sfn.IChainable {
    const start = sfn.Pass.jsonata(this, 'Start', {
      assign: {
        ...this.#runVariables(),
        mode: `{% ${givenExpression('$states.input.mode')} ? $states.input.mode : null %}`,
        whenBusy: `{% ${givenExpression('$states.input.whenBusy')} ? $states.input.whenBusy : null %}`,
        batchId: null,
      },
    })
    const extract = this.#extract(failure)
    const extractComplete = sfn.Choice.jsonata(this, 'ExtractComplete')
      .when(sfn.Condition.jsonata('{% $extract.skipped = true %}'), this.#skipped())
      .when(
        sfn.Condition.jsonata(`{% $extract.complete = false and $passes < ${MAX_EXTRACT_PASSES} %}`),
        sfn.Pass.jsonata(this, 'ContinueExtract', {
          comment: 'The extract stopped before its time limit and returned where to resume; call it again.',
          assign: { resume: '{% $extract.resume %}' },
        }).next(extract),
      )
      .when(
        sfn.Condition.jsonata('{% $extract.complete = false %}'),
        sfn.Pass.jsonata(this, 'ExtractDidNotFinish', {
          assign: {
            error: {
              Error: 'ExtractDidNotFinish',
              Cause: `{% "table " & $table & ": the extract was still incomplete after ${MAX_EXTRACT_PASSES} passes (batch " & $batchId & ")" %}`,
            },
            failedStep: 'Extract',
          },
        }).next(failure.notify),
      )
      .otherwise(merge.next(this.#succeeded()))
    return start.next(extract.next(extractComplete))
  }

  /** The variables every execution assigns in its first state after the checks (the same on every path). */
  #runVariables(): Record<string, unknown> {
    return {
      table: '{% $states.input.table %}',
      reason: `{% ${givenExpression('$states.input.reason')} ? $states.input.reason : "started by hand: " & $states.context.Execution.Name %}`,
      functions: `{% $lookup(${this.#lookup}, $states.input.table) %}`,
      passes: 0,
      resume: null,
      extract: null,
    }
  }

  /**
   * Replay → CheckStaged → Merge: `{"table": ..., "batchId": ...}` merges a batch left staged (a merge that
   * failed) without extracting again. A batch that is not staged (a typo, or merged already and removed) is
   * refused as InvalidInput, like any other wrong input.
   */
  #replay(
    failure: FailurePath,
    merge: sfn.CustomState,
    staging: OrchestrationProps['staging'],
  ): sfn.IChainable {
    const replay = sfn.Pass.jsonata(this, 'Replay', {
      comment: 'Merge a staged batch again, without extracting.',
      assign: {
        ...this.#runVariables(),
        mode: null,
        whenBusy: null,
        batchId: '{% $states.input.batchId %}',
      },
    })
    const manifest = `"/" & $table & "/" & $batchId & "/${MANIFEST_FILE}"`
    const checkStaged = new sfn.CustomState(this, 'CheckStaged', {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: this.#integration('aws-sdk:s3:listObjectsV2'),
        Arguments: {
          Bucket: staging.bucket.bucketName,
          Prefix: `{% "${staging.prefix}" & ${manifest} %}`,
          MaxKeys: 1,
        },
        Assign: {
          staged: '{% $exists($states.result.KeyCount) and $states.result.KeyCount > 0 %}',
        },
      },
    })
    checkStaged.addCatch(failure.notify, {
      errors: ['States.ALL'],
      assign: { error: '{% $states.errorOutput %}', failedStep: 'CheckStaged' },
    })
    const notStaged = sfn.Fail.jsonata(this, 'BatchNotStaged', {
      error: 'InvalidInput',
      cause:
        `{% "batchId: batch " & $batchId & " of table " & $table & " is not staged (nothing at s3://" & ` +
        `${Stack.of(this).toJsonString(staging.bucket.bucketName)} & "/${staging.prefix}" & ${manifest} & "); ` +
        'a merged or discarded batch is removed from staging: start the table without batchId to load it again" %}',
    })
    const staged = sfn.Choice.jsonata(this, 'BatchStaged')
      .when(sfn.Condition.jsonata('{% $staged %}'), merge)
      .otherwise(this.#reportRefusal('RefuseUnstagedBatch').next(notStaged))
    return replay.next(checkStaged).next(staged)
  }

  /** One extract pass; a first pass that finds the table busy fails at once, told to who started it. */
  #extract(failure: FailurePath): sfn.CustomState {
    const extract = new sfn.CustomState(this, 'Extract', {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: this.#integration('lambda:invoke'),
        Arguments: {
          FunctionName: '{% $functions.extract %}',
          Payload:
            "{% $merge([{'table': $table, 'reason': $reason}, $mode ? {'mode': $mode} : {}, " +
            "$whenBusy ? {'whenBusy': $whenBusy} : {}, " +
            "$resume != null ? {'batchId': $batchId, 'resume': $resume} : {}]) %}",
        },
        Assign: {
          extract: '{% $states.result.Payload %}',
          // A skipped start has no batch.
          batchId: '{% $exists($states.result.Payload.batchId) ? $states.result.Payload.batchId : null %}',
          passes: '{% $passes + 1 %}',
        },
        Output: '{% $states.result.Payload %}',
      },
    })
    for (const retry of EXTRACT_RETRIERS) extract.addRetry(retry)
    const tableBusy = sfn.Fail.jsonata(this, 'TableBusy', {
      error: 'TableBusy',
      cause:
        '{% "table " & $table & " is busy, another run is loading it; start again when it ends (a scheduled ' +
        'start skips a busy table): " & $error.Cause %}',
    })
    extract.addCatch(this.#reportRefusal('RefuseBusyTable').next(tableBusy), {
      errors: [LockHeldError.name],
      assign: { error: '{% $states.errorOutput %}' },
    })
    extract.addCatch(failure.notify, {
      errors: ['States.ALL'],
      assign: { error: '{% $states.errorOutput %}', failedStep: 'Extract' },
    })
    return extract
  }

  #merge(failure: FailurePath): sfn.CustomState {
    const merge = new sfn.CustomState(this, 'Merge', {
      stateJson: {
        Type: 'Task',
        QueryLanguage: 'JSONata',
        Resource: this.#integration('lambda:invoke'),
        Arguments: {
          FunctionName: '{% $functions.merge %}',
          Payload: "{% {'table': $table, 'batchId': $batchId} %}",
        },
        // Not `merge`: a variable of that name would shadow JSONata's $merge(), which the Extract payload calls.
        Assign: { merged: '{% $states.result.Payload %}' },
        Output: '{% $states.result.Payload %}',
      },
    })
    for (const retry of RETRIERS) merge.addRetry(retry)
    merge.addCatch(failure.notify, {
      errors: ['States.ALL'],
      assign: { error: '{% $states.errorOutput %}', failedStep: 'Merge' },
    })
    return merge
  }

  /** RecordSuccess → Done: the run metrics, then the execution's output. */
  #succeeded(): sfn.IChainable {
    const recordSuccess = this.#putMetrics('RecordSuccess', [
      metric(METRIC.succeeded, '{% 1 %}', 'Count'),
      metric(METRIC.rows, orZero('$extract.rows'), 'Count'),
      metric(METRIC.versionsInserted, orZero('$merged.counts.insertedVersions'), 'Count'),
      metric(METRIC.versionsClosed, orZero('$merged.counts.closedVersions'), 'Count'),
      metric(
        METRIC.duration,
        '{% ($millis() - $toMillis($states.context.Execution.StartTime)) / 1000 %}',
        'Seconds',
      ),
    ])
    const done = sfn.Succeed.jsonata(this, 'Done', {
      outputs: {
        table: '{% $table %}',
        batchId: '{% $batchId %}',
        rows: orZero('$extract.rows'),
        merge: '{% $merged %}',
      },
    })
    // Bookkeeping must not turn a committed load into a failed run.
    recordSuccess.addCatch(done, { errors: ['States.ALL'] })
    return recordSuccess.next(done)
  }

  /** RecordSkipped → Skipped: a scheduled start that found the table busy succeeds, counted as skipped. */
  #skipped(): sfn.IChainable {
    const recordSkipped = this.#putMetrics('RecordSkipped', [metric(METRIC.skipped, '{% 1 %}', 'Count')])
    const skipped = sfn.Succeed.jsonata(this, 'Skipped', {
      outputs: {
        table: '{% $table %}',
        status: 'skipped',
        heldBy: '{% $extract.heldBy %}',
        since: '{% $extract.since %}',
      },
    })
    recordSkipped.addCatch(skipped, { errors: ['States.ALL'] })
    return recordSkipped.next(skipped)
  }

  /**
   * CheckInput: an unknown table, or any input the table's deployed settings refuse (console-input.ts), ends the
   * execution at once with the reason, told to whoever started it; a `batchId` replays a staged batch.
   */
  #inputChecks(load: sfn.IChainable, replay: sfn.IChainable): sfn.IChainable {
    const names = this.#names.join(', ')
    const problems = inputProblems(this.#lookup, this.#names, this.#example)
    const unknownTable = sfn.Fail.jsonata(this, 'UnknownTable', {
      error: 'UnknownTable',
      cause: `{% "table " & $string($states.input.table) & " is not deployed by this stack (tables: ${names}); start an execution with ${this.#quotedExample}" %}`,
    })
    const invalidInput = sfn.Fail.jsonata(this, 'InvalidInput', {
      error: 'InvalidInput',
      cause: `{% $join(${problems}, "; ") %}`,
    })
    return sfn.Choice.jsonata(this, 'CheckInput')
      .when(
        sfn.Condition.jsonata(
          `{% $type($states.input) = "object" and $type($states.input.table) = "string" and $not($exists($lookup(${this.#lookup}, $states.input.table))) %}`,
        ),
        this.#reportRefusal('RefuseUnknownTable').next(unknownTable),
      )
      .when(
        sfn.Condition.jsonata(`{% $count(${problems}) > 0 %}`),
        this.#reportRefusal('RefuseInvalidInput').next(invalidInput),
      )
      .when(sfn.Condition.jsonata(`{% ${givenExpression('$states.input.batchId')} %}`), replay)
      .otherwise(load)
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
    // A replay checks that its batch's manifest is staged: listing, under the staging prefix only.
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [props.staging.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': `${props.staging.prefix}/*` } },
      }),
    )
    // What SNS asks of a publisher to an encrypted topic, named exactly (no kms:GenerateDataKey* wildcard).
    if (props.topicKey !== undefined)
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
