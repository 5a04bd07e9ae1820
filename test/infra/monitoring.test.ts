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
