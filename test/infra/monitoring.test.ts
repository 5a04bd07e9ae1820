import { describe, expect, it } from 'vitest'
import { deploymentYaml, synthStack } from './support/synth-stack.ts'

type Resource = { Type: string; Properties: Record<string, unknown>; DependsOn?: string[] }

function stateMachineOf(template: { toJSON(): unknown }): Resource {
  const resources = Object.values((template.toJSON() as { Resources: Record<string, Resource> }).Resources)
  return resources.find((r) => r.Type === 'AWS::StepFunctions::StateMachine')!
}

describe('state machine execution logs', () => {
  it('log failed states only, without execution data, by default; the log delivery grant exists first', async () => {
    const { template, violations } = await synthStack(deploymentYaml())
    expect(violations).toEqual([])
    const machine = stateMachineOf(template)
    expect(machine.Properties.LoggingConfiguration).toEqual({
      Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: expect.anything() } }],
      Level: 'ERROR',
      IncludeExecutionData: false,
    })
    expect(machine.Properties.TracingConfiguration).toEqual({ Enabled: true })
    const policies = template.findResources('AWS::IAM::Policy')
    const delivery = (machine.DependsOn ?? []).filter((id) =>
      JSON.stringify(policies[id] ?? {}).includes('logs:CreateLogDelivery'),
    )
    expect(delivery).toHaveLength(1)
  })

  it('log every state with its data when the config asks, and nothing when it says off', async () => {
    const all = await synthStack(
      deploymentYaml({ aws: '  execution_logs: { level: all, include_data: true }' }),
    )
    expect(stateMachineOf(all.template).Properties.LoggingConfiguration).toMatchObject({
      Level: 'ALL',
      IncludeExecutionData: true,
    })
    const off = await synthStack(deploymentYaml({ aws: '  execution_logs: { level: off }' }))
    expect(stateMachineOf(off.template).Properties.LoggingConfiguration).toBeUndefined()
    expect(JSON.stringify(off.template.toJSON())).not.toContain('logs:CreateLogDelivery')
  })
})

type Alarm = { Properties: Record<string, unknown> }

function alarmsOf(template: { findResources(type: string): Record<string, unknown> }): Record<string, Alarm> {
  return template.findResources('AWS::CloudWatch::Alarm') as Record<string, Alarm>
}

describe('alarms: one message per failure, and alarms for what the state machine cannot report', () => {
  it('sends no message when an alarm returns to OK, and none for a failed run (its notice is the message)', async () => {
    const { template } = await synthStack(deploymentYaml())
    const alarms = Object.values(alarmsOf(template))
    expect(alarms.filter((a) => a.Properties.OKActions !== undefined)).toEqual([])
    const failed = alarms.filter((a) => a.Properties.MetricName === 'LoadFailed')
    expect(failed).toHaveLength(1)
    expect(failed[0]!.Properties.AlarmActions).toBeUndefined()
  })

  it('alarms on failed executions nobody was told about, timed-out, throttled and aborted executions', async () => {
    const { template } = await synthStack(deploymentYaml())
    const alarms = Object.values(alarmsOf(template))
    const untold = alarms.find((a) => JSON.stringify(a.Properties).includes('FailuresReported'))!
    const metrics = untold.Properties.Metrics as { Id: string; Expression?: string; MetricStat?: unknown }[]
    const expression = metrics.find((m) => m.Expression !== undefined)!.Expression
    expect(expression).toMatch(/^FILL\((\w+), ?0\) - FILL\((\w+), ?0\)$/)
    expect(JSON.stringify(metrics)).toContain('"MetricName":"ExecutionsFailed"')
    expect(untold.Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [{ Ref: expect.stringMatching(/^NotificationsTopic/) }],
    })
    for (const name of ['ExecutionsTimedOut', 'ExecutionThrottled', 'ExecutionsAborted']) {
      const alarm = alarms.find((a) => a.Properties.MetricName === name)!
      expect(alarm.Properties).toMatchObject({
        Namespace: 'AWS/States',
        Statistic: 'Sum',
        Threshold: 1,
        AlarmActions: [{ Ref: expect.stringMatching(/^NotificationsTopic/) }],
      })
    }
  })

  it('alarms on Lambda throttles and on a function close to its timeout; errors are on the dashboard', async () => {
    const { template } = await synthStack(
      deploymentYaml({
        aws: '',
        tables:
          '  - { name: small, source: { type: postgres, url_env: SHOP_DB_URL, table: s }, key: id, lambda: small }',
      }),
    )
    const alarms = Object.values(alarmsOf(template)).filter((a) => a.Properties.Namespace === 'AWS/Lambda')
    // Two size classes (medium, small) × extract and merge.
    const of = (metric: string) => alarms.filter((a) => a.Properties.MetricName === metric)
    expect(of('Throttles')).toHaveLength(4)
    for (const alarm of of('Throttles'))
      expect(alarm.Properties).toMatchObject({ Threshold: 1, AlarmActions: [expect.anything()] })
    expect(
      of('Duration')
        .map((a) => a.Properties.Threshold)
        .sort(),
    ).toEqual([270_000, 270_000, 870_000, 870_000])
    for (const alarm of of('Duration'))
      expect(alarm.Properties).toMatchObject({ Statistic: 'Maximum', AlarmActions: [expect.anything()] })
    expect(of('Errors')).toHaveLength(4)
    for (const alarm of of('Errors')) expect(alarm.Properties.AlarmActions).toBeUndefined()
  })
})

describe('scheduled starts that fail', () => {
  it('give every schedule a dead-letter queue of its own, and alarm when a start lands in one or is lost', async () => {
    const { template, violations } = await synthStack(
      deploymentYaml({
        tables:
          '  - { name: orders, source: { type: postgres, url_env: SHOP_DB_URL, table: o }, key: id, schedule: cron(0 3 * * ? *) }',
      }),
    )
    expect(violations).toEqual([])
    const schedules = Object.values(template.findResources('AWS::Scheduler::Schedule')) as {
      Properties: { Target: { DeadLetterConfig?: { Arn: { 'Fn::GetAtt': [string, string] } } } }
    }[]
    const queues = schedules.map((s) => s.Properties.Target.DeadLetterConfig!.Arn['Fn::GetAtt'][0])
    // The two tables' schedules and the staleness check's.
    expect(new Set(queues).size).toBe(3)
    template.resourceCountIs('AWS::SQS::Queue', 3)
    template.allResourcesProperties('AWS::SQS::Queue', {
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 1209600,
    })

    const alarms = Object.values(alarmsOf(template))
    for (const queue of queues) {
      const alarm = alarms.find(
        (a) =>
          a.Properties.MetricName === 'ApproximateNumberOfMessagesVisible' &&
          JSON.stringify(a.Properties.Dimensions).includes(queue),
      )!
      expect(alarm.Properties).toMatchObject({ Threshold: 1, AlarmActions: [expect.anything()] })
    }
    const lost = alarms.find((a) => JSON.stringify(a.Properties).includes('InvocationDroppedCount'))!
    expect(JSON.stringify(lost.Properties)).toContain('InvocationsFailedToBeSentToDeadLetterCount')
    expect(lost.Properties.AlarmActions).toEqual([expect.anything()])
    const targetErrors = alarms.find((a) => a.Properties.MetricName === 'TargetErrorCount')!
    // Retried by the schedule; a start that still fails is in a dead-letter queue and alarms there.
    expect(targetErrors.Properties.AlarmActions).toBeUndefined()
  })
})
