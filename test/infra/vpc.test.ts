import { Match } from 'aws-cdk-lib/assertions'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  actionsOf,
  bigQueryProject,
  deploymentYaml,
  loaderFunctionsOf,
  statementsOf,
  synthStack,
  type SynthesizedStack,
} from './support/synth-stack.ts'

const yaml = (vpc: string) =>
  deploymentYaml({
    tables: [
      '  - name: orders',
      '    source: { type: mysql, url_env: ORDERS_DB_URL, table: orders }',
      '    key: order_id',
      '    lambda: large',
    ].join('\n'),
    secrets: { SHOP_DB_URL: 'dimsync/shop-db', ORDERS_DB_URL: 'dimsync/orders-db' },
    ...(vpc !== '' ? { aws: `  vpc: ${vpc}` } : {}),
  })

const SUBNETS = '[subnet-0123456789abcdef0, subnet-0fedcba9876543210]'
const ENI_ACTIONS = [
  'ec2:CreateNetworkInterface',
  'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
]
const FUNCTION_ROLES = ['ExtractMediumRole', 'MergeMediumRole', 'ExtractLargeRole', 'MergeLargeRole']

describe('functions placed in a VPC', () => {
  let synthesized: SynthesizedStack

  beforeAll(async () => {
    synthesized = await synthStack(
      yaml(
        `{ vpc_id: vpc-0123456789abcdef0, subnet_ids: ${SUBNETS}, security_group_ids: [sg-0123456789abcdef0], ` +
          'gateway_endpoints: { route_table_ids: [rtb-0123456789abcdef0, rtb-0fedcba9876543210] } }',
      ),
    )
  })

  it('synthesizes with cdk-nag clean and no managed policy', () => {
    expect(synthesized.violations).toEqual([])
    synthesized.template.resourcePropertiesCountIs(
      'AWS::IAM::Role',
      { ManagedPolicyArns: Match.anyValue() },
      0,
    )
  })

  it('lets every function role manage its network interfaces, scoped to its subnets and security groups', () => {
    const { template } = synthesized
    for (const role of FUNCTION_ROLES) {
      const statements = statementsOf(template, role)
      const describe = statements.filter((s) => actionsOf(s).includes('ec2:DescribeNetworkInterfaces'))
      expect(describe).toEqual([
        {
          Action: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
          Effect: 'Allow',
          Resource: '*',
        },
      ])
      const create = statements.find((s) => actionsOf(s).includes('ec2:CreateNetworkInterface'))!
      const resources = JSON.stringify(create.Resource)
      expect(resources).toContain(':network-interface/*')
      expect(resources).toContain(':subnet/subnet-0123456789abcdef0')
      expect(resources).toContain(':subnet/subnet-0fedcba9876543210')
      expect(resources).toContain(':security-group/sg-0123456789abcdef0')
      // A subnet shared from another account (AWS RAM) has that account's id in its ARN.
      expect(resources).toContain(':*:subnet/')
      const manage = statements.find((s) => actionsOf(s).includes('ec2:DeleteNetworkInterface'))!
      expect(actionsOf(manage).sort()).toEqual(ENI_ACTIONS.slice(1).sort())
      expect(JSON.stringify(manage.Resource)).toMatch(/:network-interface\/\*"\]\]\}$/)
    }
  })

  it('creates each function only after its role may create network interfaces', () => {
    const { template } = synthesized
    const functions = loaderFunctionsOf(template)
    const policies = template.findResources('AWS::IAM::Policy')
    for (const [id, fn] of Object.entries(functions)) {
      const dependsOn = (fn as { DependsOn?: string[] }).DependsOn ?? []
      const granting = dependsOn.filter((dep) =>
        JSON.stringify(policies[dep]?.Properties ?? {}).includes('ec2:CreateNetworkInterface'),
      )
      expect(granting, id).toHaveLength(1)
    }
  })

  it('adds S3 and DynamoDB gateway endpoints to the route tables it is given', () => {
    const { template } = synthesized
    template.resourceCountIs('AWS::EC2::VPCEndpoint', 2)
    for (const service of ['s3', 'dynamodb']) {
      template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
        VpcId: 'vpc-0123456789abcdef0',
        VpcEndpointType: 'Gateway',
        ServiceName: { 'Fn::Join': ['', ['com.amazonaws.', { Ref: 'AWS::Region' }, `.${service}`]] },
        RouteTableIds: ['rtb-0123456789abcdef0', 'rtb-0fedcba9876543210'],
      })
    }
    const functions = Object.values(loaderFunctionsOf(template))
    expect(functions.length).toBeGreaterThan(0)
    for (const fn of functions)
      expect(fn.Properties.VpcConfig).toEqual({
        SubnetIds: expect.anything(),
        SecurityGroupIds: ['sg-0123456789abcdef0'],
      })
  })

  it('adds no endpoint unless asked (the VPC may have its own), and none outside a VPC', async () => {
    const own = await synthStack(yaml(`{ vpc_id: vpc-0123456789abcdef0, subnet_ids: ${SUBNETS} }`))
    expect(own.violations).toEqual([])
    own.template.resourceCountIs('AWS::EC2::VPCEndpoint', 0)
    const createdGroup = JSON.stringify(statementsOf(own.template, 'ExtractMediumRole'))
    expect(createdGroup).toMatch(
      /:security-group\/",\{"Fn::GetAtt":\["FunctionsSecurityGroup[0-9A-F]+","GroupId"\]\}/,
    )

    const outside = await synthStack(yaml(''))
    expect(JSON.stringify(outside.template.toJSON())).not.toContain('ec2:')
  })

  it('refuses a route table id that is not one, naming the key', () => {
    const bad = yaml(
      `{ vpc_id: vpc-0123456789abcdef0, subnet_ids: ${SUBNETS}, gateway_endpoints: { route_table_ids: [main] } }`,
    )
    expect(() => bigQueryProject(bad)).toThrow(
      /aws\.vpc\.gateway_endpoints\.route_table_ids\[0\]: .*a route table id \(rtb-\.\.\.\)/,
    )
  })
})
