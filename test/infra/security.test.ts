import * as iam from 'aws-cdk-lib/aws-iam'
import { beforeAll, describe, expect, it } from 'vitest'
import type { BuiltApp } from '../../infra/build-app.ts'
import {
  actionsOf,
  bigQueryProject,
  deploymentYaml,
  statementsOf,
  synthStack,
  type SynthesizedStack,
} from './support/synth-stack.ts'

const KEY = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab'
const OTHER_KEY = 'arn:aws:kms:eu-west-1:123456789012:key/mrk-1234abcd12ab34cd56ef1234567890ab'

describe('security of the deployed roles', () => {
  let synthesized: SynthesizedStack

  beforeAll(async () => {
    synthesized = await synthStack(deploymentYaml({ aws: `  secrets_kms_keys: ['${KEY}', '${OTHER_KEY}']` }))
  })

  it('lets only EventBridge Scheduler of this account and this schedule group assume the schedules role', () => {
    const roles = synthesized.template.findResources('AWS::IAM::Role')
    const [id, role] = Object.entries(roles).find(([rid]) => rid.startsWith('SchedulesRole'))!
    expect(
      (role as { Properties: { AssumeRolePolicyDocument: unknown } }).Properties.AssumeRolePolicyDocument,
      id,
    ).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Action: 'sts:AssumeRole',
          Effect: 'Allow',
          Principal: { Service: 'scheduler.amazonaws.com' },
          Condition: {
            StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
            ArnEquals: {
              'aws:SourceArn': {
                'Fn::Join': [
                  '',
                  [
                    'arn:',
                    { Ref: 'AWS::Partition' },
                    ':scheduler:',
                    { Ref: 'AWS::Region' },
                    ':',
                    { Ref: 'AWS::AccountId' },
                    ':schedule-group/Dimsync-schedules',
                  ],
                ],
              },
            },
          },
        },
      ],
    })
  })

  it('lets the functions decrypt secrets with the customer-managed keys the config names, through Secrets Manager only', () => {
    const { template } = synthesized
    for (const role of ['ExtractMediumRole', 'MergeMediumRole']) {
      const decrypt = statementsOf(template, role).filter((s) => actionsOf(s).includes('kms:Decrypt'))
      expect(decrypt).toEqual([
        {
          Action: 'kms:Decrypt',
          Effect: 'Allow',
          Resource: [KEY, OTHER_KEY],
          Condition: {
            StringEquals: {
              'kms:ViaService': {
                'Fn::Join': ['', ['secretsmanager.', { Ref: 'AWS::Region' }, '.amazonaws.com']],
              },
            },
          },
        },
      ])
    }
  })

  it('grants no kms:Decrypt to the functions when the config names no key', async () => {
    const { template } = await synthStack(deploymentYaml())
    for (const role of ['ExtractMediumRole', 'MergeMediumRole'])
      expect(JSON.stringify(statementsOf(template, role))).not.toContain('kms:')
  })

  it('refuses a key that is not a KMS key ARN (an alias cannot be granted)', () => {
    expect(() => bigQueryProject(deploymentYaml({ aws: '  secrets_kms_keys: [alias/dimsync]' }))).toThrow(
      /aws\.secrets_kms_keys\[0\]: .*a KMS key ARN/,
    )
  })

  const wildcardOn = (pick: (built: BuiltApp) => iam.IRole) => (built: BuiltApp) => {
    pick(built).addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: ['*'] }))
  }

  it.each([
    ['an extract function', (b: BuiltApp) => Object.values(b.stack.functions)[0]!.extract.role],
    ['a merge function', (b: BuiltApp) => Object.values(b.stack.functions)[0]!.merge.role],
    ['the state machine', (b: BuiltApp) => b.stack.orchestration.stateMachine.role],
  ])(
    'reports a new wildcard statement on the role of %s (acknowledgements cover their own statements only)',
    async (_, pick) => {
      await expect(synthStack(deploymentYaml(), wildcardOn(pick))).rejects.toThrow(
        /AwsSolutions-IAM5\[Resource::\*\]/,
      )
    },
  )

  it('reports a new wildcard statement on the role of functions placed in a VPC too', async () => {
    const yaml = deploymentYaml({
      aws: '  vpc: { vpc_id: vpc-0123456789abcdef0, subnet_ids: [subnet-0123456789abcdef0] }',
    })
    await expect(
      synthStack(
        yaml,
        wildcardOn((b) => Object.values(b.stack.functions)[0]!.extract.role),
      ),
    ).rejects.toThrow(/AwsSolutions-IAM5\[Resource::\*\]/)
  })
})
