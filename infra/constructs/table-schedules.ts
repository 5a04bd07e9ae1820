/**
 * One EventBridge Scheduler schedule per scheduled table, all starting the same state machine with the same
 * input a person would type in the console, plus `whenBusy: skip`: `{"table": "...", "mode": "...", "reason":
 * "schedule", "whenBusy": "skip"}` (a start that finds the table still loading ends as skipped).
 */
import { createHash } from 'node:crypto'
import { ArnFormat, Duration, RemovalPolicy, Stack, TimeZone, Validations } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as scheduler from 'aws-cdk-lib/aws-scheduler'
import * as sqs from 'aws-cdk-lib/aws-sqs'
import * as targets from 'aws-cdk-lib/aws-scheduler-targets'
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions'
import { Construct } from 'constructs'
import type { ScheduleSpec } from '../../lib/core/table-spec.ts'

export interface ScheduledTable {
  readonly name: string
  readonly mode: 'full' | 'incremental'
  readonly schedule: ScheduleSpec
}

export interface TableSchedulesProps {
  readonly tables: readonly ScheduledTable[]
  readonly stateMachine: sfn.IStateMachine
  readonly removalPolicy: RemovalPolicy
}

const MAX_GROUP_NAME = 64
const GROUP_SUFFIX = '-schedules'

/**
 * `<stack name>-schedules`; a stack name too long for the 64 characters a group name may have is cut and made
 * unique again with a hash of the whole name.
 */
export function scheduleGroupName(stackName: string): string {
  const name = `${stackName}${GROUP_SUFFIX}`
  if (name.length <= MAX_GROUP_NAME) return name
  const hash = createHash('sha256').update(stackName).digest('hex').slice(0, 8)
  return `${stackName.slice(0, MAX_GROUP_NAME - GROUP_SUFFIX.length - hash.length - 1)}-${hash}${GROUP_SUFFIX}`
}

/**
 * The execution input a schedule sends; the console accepts the same JSON. No mode: a schedule runs the table as
 * configured, and a mode in the input means an override (a full reload), which some tables refuse.
 */
export function scheduledInput(table: ScheduledTable): Record<string, string> {
  return { table: table.name, reason: 'schedule', whenBusy: 'skip' }
}

/** A schedule that starts a state machine, with its dead-letter queue. */
export interface StateMachineScheduleProps {
  /** What the schedule does, for its description and the alarm on its dead-letter queue. */
  readonly purpose: string
  readonly schedule: scheduler.ScheduleExpression
  readonly stateMachine: sfn.IStateMachine
  readonly input: Record<string, unknown>
  readonly enabled?: boolean
  readonly flexibleWindowMinutes?: number
}

export interface DeadLetters {
  readonly queue: sqs.IQueue
  /** What the lost start was for (`load table customers`). */
  readonly purpose: string
}

export class TableSchedules extends Construct {
  readonly schedules: Record<string, scheduler.Schedule> = {}
  /** Per schedule (its construct id), the queue that receives a start that still failed after its retries. */
  readonly deadLetters: Record<string, DeadLetters> = {}
  readonly group: scheduler.ScheduleGroup
  readonly #role: iam.Role
  readonly #removalPolicy: RemovalPolicy

  constructor(scope: Construct, id: string, props: TableSchedulesProps) {
    super(scope, id)
    this.#removalPolicy = props.removalPolicy
    // Always deleted with the stack, whatever aws.removal_policy says: it holds no data (CloudFormation deletes
    // its schedules anyway), and a group left behind would make the next deploy under this stack name fail.
    this.group = new scheduler.ScheduleGroup(this, 'Group', {
      scheduleGroupName: scheduleGroupName(Stack.of(this).stackName),
      removalPolicy: RemovalPolicy.DESTROY,
    })
    const stack = Stack.of(this)
    const groupArn = stack.formatArn({
      service: 'scheduler',
      resource: 'schedule-group',
      resourceName: this.group.scheduleGroupName,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    })
    // One role for every schedule, allowed to start the stack's state machines only, and assumable only by the
    // Scheduler acting for a schedule of this group (no confused deputy: another account's schedule cannot).
    this.#role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnEquals: { 'aws:SourceArn': groupArn },
        },
      }),
      description: 'dimsync schedules: start the loader state machine',
    })
    for (const table of props.tables) {
      const { schedule } = table
      this.schedules[table.name] = this.addStateMachineSchedule(`Schedule-${table.name}`, {
        purpose: `load table ${table.name}`,
        schedule: scheduler.ScheduleExpression.expression(
          schedule.expression,
          TimeZone.of(schedule.timezone),
        ),
        stateMachine: props.stateMachine,
        input: scheduledInput(table),
        enabled: schedule.enabled,
        flexibleWindowMinutes: schedule.flexibleWindowMinutes,
      })
    }
  }

  /** A schedule of this group starting `stateMachine`, with a dead-letter queue of its own. */
  addStateMachineSchedule(id: string, props: StateMachineScheduleProps): scheduler.Schedule {
    const queue = new sqs.Queue(this, id.replace(/^Schedule-/, 'DeadLetters-'), {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // The longest SQS keeps a message: time to see which start was lost and run it by hand.
      retentionPeriod: Duration.days(14),
      removalPolicy: this.#removalPolicy,
    })
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: `This queue is the dead-letter queue of the schedule that starts to ${props.purpose}.`,
    })
    this.deadLetters[id] = { queue, purpose: props.purpose }
    const flexible = props.flexibleWindowMinutes ?? 0
    return new scheduler.Schedule(this, id, {
      scheduleGroup: this.group,
      description: `dimsync: ${props.purpose} (${props.schedule.expressionString}${props.schedule.timeZone !== undefined ? `, ${props.schedule.timeZone.timezoneName}` : ''})`,
      schedule: props.schedule,
      enabled: props.enabled ?? true,
      timeWindow:
        flexible > 0 ? scheduler.TimeWindow.flexible(Duration.minutes(flexible)) : scheduler.TimeWindow.off(),
      target: new targets.StepFunctionsStartExecution(props.stateMachine, {
        role: this.#role,
        input: scheduler.ScheduleTargetInput.fromObject(props.input),
        // A start retried later than an hour would overlap the next one; a start that still fails is kept.
        retryAttempts: 3,
        maxEventAge: Duration.hours(1),
        deadLetterQueue: queue,
      }),
    })
  }
}
