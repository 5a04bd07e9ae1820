import { Match } from 'aws-cdk-lib/assertions'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  GET_METRIC_DATA,
  GET_SCHEDULE,
  JsonataStateMachine,
  PUT_METRIC_DATA,
  definitionFromTemplate,
  type Json,
  type ServiceCall,
  type StateMachineDefinition,
} from '../support/step-functions/jsonata-state-machine.ts'
import { deploymentYaml, statementsOf, synthStack, type SynthesizedStack } from './support/synth-stack.ts'

/** customers hourly, orders weekly (rarer than every 3.5 days), products disabled. */
const YAML = deploymentYaml({
  tables: [
    '  - name: orders',
    '    source: { type: postgres, url_env: SHOP_DB_URL, table: public.orders }',
    '    key: order_id',
    '    schedule: cron(0 3 ? * MON *)',
    '  - name: products',
    '    source: { type: postgres, url_env: SHOP_DB_URL, table: public.products }',
    '    key: sku',
    '    schedule: { expression: rate(15 minutes), enabled: false }',
  ].join('\n'),
})

type TemplateJson = Parameters<typeof definitionFromTemplate>[0]
type Item = { table: string; windowMinutes: number; schedule: string; group: string }

const MINUTE = 60_000

describe('staleness: no successful load in twice the schedule interval', () => {
  let synthesized: SynthesizedStack
  let check: StateMachineDefinition & {
    States: { Check: { Items: Item[]; ItemProcessor: StateMachineDefinition } }
  }

  beforeAll(async () => {
    synthesized = await synthStack(YAML)
    check = definitionFromTemplate(
      synthesized.template.toJSON() as TemplateJson,
      'StalenessCheck',
    ) as typeof check
  })

  it('checks every enabled schedule, rare ones included, from an Express state machine on its own schedule', () => {
    const { template, violations } = synthesized
    expect(violations).toEqual([])
    expect(check.States.Check.Items.map((i) => [i.table, i.windowMinutes])).toEqual([
      ['customers', 120],
      ['orders', 2 * 7 * 24 * 60],
    ])
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', { StateMachineType: 'EXPRESS' })
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(15 minutes)',
      Target: {
        Arn: { Ref: Match.stringLikeRegexp('^MonitoringStalenessCheckStateMachine') },
        DeadLetterConfig: Match.anyValue(),
      },
    })
  })

  it('alarms per table on the Stale metric the check publishes, keeping its state when a check is missing', () => {
    const alarms = Object.values(synthesized.template.findResources('AWS::CloudWatch::Alarm')) as {
      Properties: Record<string, unknown>
    }[]
    const stale = alarms.filter((a) => a.Properties.MetricName === 'Stale')
    expect(stale.map((a) => (a.Properties.Dimensions as { Value: string }[])[0]!.Value).sort()).toEqual([
      'customers',
      'orders',
    ])
    for (const alarm of stale)
      expect(alarm.Properties).toMatchObject({
        Namespace: 'Dimsync',
        Statistic: 'Maximum',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'ignore',
        AlarmActions: [expect.anything()],
      })
    expect(alarms.filter((a) => a.Properties.MetricName === 'LoadSucceeded')).toEqual([])
  })

  it('alarms when the check itself fails or stops running: no successful check is a breach, one message for all tables', () => {
    const alarms = Object.values(synthesized.template.findResources('AWS::CloudWatch::Alarm')) as {
      Properties: Record<string, unknown>
    }[]
    const health = alarms.filter(
      (a) =>
        a.Properties.Namespace === 'AWS/States' &&
        JSON.stringify(a.Properties.Dimensions).includes('MonitoringStalenessCheckStateMachine'),
    )
    expect(health).toHaveLength(1)
    expect(health[0]!.Properties).toMatchObject({
      MetricName: 'ExecutionsSucceeded',
      Statistic: 'Sum',
      Period: 900,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
      AlarmActions: [expect.anything()],
    })
    expect(String(health[0]!.Properties.AlarmDescription)).toMatch(/staleness alarms of customers, orders/)
  })

  it('may read the two schedules it checks and nothing else of the Scheduler', () => {
    const statements = statementsOf(synthesized.template, 'MonitoringStalenessCheckStateMachineRole')
    const read = statements.filter((s) => JSON.stringify(s.Action).includes('scheduler:'))
    expect(read).toHaveLength(1)
    expect(read[0]!.Action).toBe('scheduler:GetSchedule')
    expect(JSON.stringify(read[0]!.Resource)).not.toContain('*')
    expect((read[0]!.Resource as unknown[]).length).toBe(2)
  })

  describe('one table checked (the Map iteration, run by the JSONata interpreter)', () => {
    let iteration: JsonataStateMachine

    beforeAll(async () => {
      // The iteration as a definition of its own: the Map runs it with one item as input, in the machine's
      // query language (its ProcessorConfig says INLINE, which is what this simulation does).
      const { StartAt, States } = check.States.Check.ItemProcessor
      expect(check.States.Check.ItemProcessor).toMatchObject({ ProcessorConfig: { Mode: 'INLINE' } })
      iteration = await JsonataStateMachine.load({ QueryLanguage: 'JSONata', StartAt, States })
    })

    async function run(item: Item, created: Date, loads: number[]) {
      const result = await iteration.run({
        input: item as unknown as Json,
        invoke: async () => {
          throw new Error('no function is invoked')
        },
        callService: (call: ServiceCall) => {
          if (call.resource === GET_SCHEDULE)
            return { Name: item.schedule, CreationDate: created.toISOString() }
          if (call.resource === GET_METRIC_DATA)
            return { MetricDataResults: [{ Id: 'loads', Values: loads, StatusCode: 'Complete' }] }
          return {}
        },
      })
      expect(result.status).toBe('SUCCEEDED')
      const put = result.calls.find((c) => c.resource === PUT_METRIC_DATA)!
      const [datum] = (
        put.arguments as { MetricData: { MetricName: string; Value: number; Dimensions: unknown }[] }
      ).MetricData
      expect(datum).toMatchObject({ MetricName: 'Stale', Dimensions: [{ Name: 'Table', Value: item.table }] })
      return { stale: datum!.Value, calls: result.calls }
    }

    const hourly = () => check.States.Check.Items[0]!
    const weekly = () => check.States.Check.Items[1]!

    it('is not stale within one window of the schedule being created (first deploy), whatever the metrics say', async () => {
      const { stale, calls } = await run(hourly(), new Date(Date.now() - 30 * MINUTE), [])
      expect(stale).toBe(0)
      expect(calls.map((c) => c.resource)).toEqual([GET_SCHEDULE, PUT_METRIC_DATA])
      expect(calls[0]!.arguments).toEqual({ Name: hourly().schedule, GroupName: 'Dimsync-schedules' })
    })

    it('is stale when no load succeeded in the window, fresh when one did', async () => {
      const old = new Date(Date.now() - 3 * 24 * 60 * MINUTE)
      expect((await run(hourly(), old, [])).stale).toBe(1)
      expect((await run(hourly(), old, [0, 0])).stale).toBe(1)
      expect((await run(hourly(), old, [0, 1])).stale).toBe(0)
    })

    it('counts the successes of the whole window, two weeks for a weekly table', async () => {
      const before = Date.now()
      const { stale, calls } = await run(weekly(), new Date(before - 30 * 24 * 60 * MINUTE), [1])
      expect(stale).toBe(0)
      const query = calls.find((c) => c.resource === GET_METRIC_DATA)!.arguments as {
        StartTime: string
        EndTime: string
        MetricDataQueries: { MetricStat: { Period: number; Stat: string; Metric: unknown } }[]
      }
      const span = Date.parse(query.EndTime) - Date.parse(query.StartTime)
      expect(Math.abs(span - 14 * 24 * 60 * MINUTE)).toBeLessThan(MINUTE)
      // Older than 63 days CloudWatch keeps hourly data only: periods are whole hours.
      expect(query.MetricDataQueries[0]!.MetricStat).toMatchObject({
        Stat: 'Sum',
        Metric: {
          Namespace: 'Dimsync',
          MetricName: 'LoadSucceeded',
          Dimensions: [{ Name: 'Table', Value: 'orders' }],
        },
      })
      expect(query.MetricDataQueries[0]!.MetricStat.Period % 3600).toBe(0)
    })
  })
})
