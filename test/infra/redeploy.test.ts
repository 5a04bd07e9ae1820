import { describe, expect, it } from 'vitest'
import { scheduleGroupName } from '../../infra/constructs/table-schedules.ts'
import { deploymentYaml, synthStack } from './support/synth-stack.ts'

const yaml = (aws: string) => deploymentYaml({ aws })

type Resource = { Type: string; Properties?: Record<string, unknown>; DeletionPolicy?: string }

function resourcesOf(template: { toJSON(): unknown }): Record<string, Resource> {
  return (template.toJSON() as { Resources: Record<string, Resource> }).Resources
}

describe('deleting the stack and deploying it again under the same name', () => {
  it('removal_policy: destroy deletes every resource (schedule group and KMS key included)', async () => {
    const { template } = await synthStack(yaml('  removal_policy: destroy'))
    // Function versions are the exception: kept on updates for executions still running on them, they are
    // deleted with their function when the stack goes.
    const kept = Object.entries(resourcesOf(template))
      .filter(([, r]) => r.Type !== 'AWS::Lambda::Version')
      .filter(([, r]) => r.DeletionPolicy !== undefined && r.DeletionPolicy !== 'Delete')
      .map(([id, r]) => `${id} ${r.Type} ${r.DeletionPolicy}`)
    expect(kept).toEqual([])
    template.hasResource('AWS::KMS::Key', {
      DeletionPolicy: 'Delete',
      Properties: { PendingWindowInDays: 7 },
    })
  })

  it('removal_policy: retain keeps data and the key, never a named resource the next deploy would recreate', async () => {
    const { template } = await synthStack(yaml('  removal_policy: retain'))
    const resources = resourcesOf(template)
    const retained = (type: string) =>
      Object.values(resources).filter((r) => r.Type === type && r.DeletionPolicy === 'Retain').length
    expect(retained('AWS::S3::Bucket')).toBe(1)
    expect(retained('AWS::DynamoDB::Table')).toBe(1)
    expect(retained('AWS::KMS::Key')).toBe(1)
    // One published version per function, kept by later deploys for the executions still using it.
    expect(retained('AWS::Lambda::Version')).toBe(2)
    // A retained resource with a fixed name makes the next create under the same stack name fail.
    const namedAndRetained = Object.entries(resources)
      .filter(([, r]) => r.DeletionPolicy === 'Retain' && r.Type !== 'AWS::Lambda::Version')
      .filter(([, r]) =>
        ['Name', 'BucketName', 'TableName', 'LogGroupName', 'FunctionName', 'AliasName'].some(
          (field) => r.Properties?.[field] !== undefined,
        ),
      )
      .map(([id]) => id)
    expect(namedAndRetained).toEqual([])
  })

  it('names the schedule group after the stack, so two stacks in one account never share it', async () => {
    const a = await synthStack(yaml('  stack_name: DimsyncShop'))
    const b = await synthStack(yaml('  stack_name: DimsyncOrders'))
    const groupName = (t: typeof a.template) =>
      Object.values(resourcesOf(t)).find((r) => r.Type === 'AWS::Scheduler::ScheduleGroup')!.Properties!.Name
    expect(groupName(a.template)).toBe('DimsyncShop-schedules')
    expect(groupName(b.template)).toBe('DimsyncOrders-schedules')
    a.template.allResourcesProperties('AWS::Scheduler::Schedule', { GroupName: 'DimsyncShop-schedules' })
  })

  it('keeps a long stack name within the 64 characters of a group name, still one group per stack', () => {
    const long = 'D'.repeat(100)
    expect(scheduleGroupName(long)).toHaveLength(64)
    expect(scheduleGroupName(long)).toMatch(/^D+-[0-9a-f]{8}-schedules$/)
    expect(scheduleGroupName(`${long}x`)).not.toBe(scheduleGroupName(long))
    expect(scheduleGroupName('D'.repeat(54))).toBe(`${'D'.repeat(54)}-schedules`)
  })
})
