import { describe, expect, it } from 'vitest'
import { deploymentYaml, statementsOf, synthStack, type Statement } from './support/synth-stack.ts'

const KEY_ARN = 'arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d'

type Resource = { Properties: Record<string, unknown> }
const resources = (template: { findResources(type: string): Record<string, unknown> }, type: string) =>
  Object.values(template.findResources(type)) as Resource[]

const kmsStatements = (statements: Statement[]) =>
  statements.filter((s) => JSON.stringify(s.Action).includes('kms:'))

describe('at rest: a customer-managed KMS key for staging and logs, staging versions', () => {
  it('encrypts the staging bucket and every log group with the key the config names, and lets the functions use it through S3 only', async () => {
    const { template, violations } = await synthStack(
      deploymentYaml({ aws: `  kms_key: ${KEY_ARN}\n  staging_versioning: true` }),
    )
    expect(violations).toEqual([])
    const [bucket] = resources(template, 'AWS::S3::Bucket')
    expect(bucket!.Properties.BucketEncryption).toEqual({
      ServerSideEncryptionConfiguration: [
        {
          BucketKeyEnabled: true,
          ServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: KEY_ARN },
        },
      ],
    })
    expect(bucket!.Properties.VersioningConfiguration).toEqual({ Status: 'Enabled' })
    const rules = (bucket!.Properties.LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules
    expect(rules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          NoncurrentVersionExpiration: { NoncurrentDays: 30 },
          ExpiredObjectDeleteMarker: true,
          Status: 'Enabled',
        }),
      ]),
    )
    const logGroups = resources(template, 'AWS::Logs::LogGroup')
    // Extract and merge, the loader's and the staleness check's state machines, the version pruning.
    expect(logGroups.length).toBe(5)
    for (const group of logGroups) expect(group.Properties.KmsKeyId).toBe(KEY_ARN)

    const extract = kmsStatements(statementsOf(template, 'ExtractMediumRole'))
    expect(extract).toEqual([
      expect.objectContaining({
        Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
        Resource: KEY_ARN,
        Condition: { StringEquals: { 'kms:ViaService': expect.anything() } },
      }),
    ])
    expect(JSON.stringify(extract[0]!.Condition)).toContain('s3.')
    const merge = kmsStatements(statementsOf(template, 'MergeMediumRole'))
    expect(merge).toEqual([expect.objectContaining({ Action: 'kms:Decrypt', Resource: KEY_ARN })])
  })

  it('kms_key: create makes a rotating key whose policy lets CloudWatch Logs use it for these log groups', async () => {
    const { template, violations } = await synthStack(deploymentYaml({ aws: '  kms_key: create' }))
    expect(violations).toEqual([])
    const keys = template.findResources('AWS::KMS::Key') as Record<string, Resource>
    const [id, key] = Object.entries(keys).find(([, k]) =>
      JSON.stringify(k.Properties.KeyPolicy).includes('logs.'),
    )!
    expect(key.Properties.EnableKeyRotation).toBe(true)
    for (const group of resources(template, 'AWS::Logs::LogGroup'))
      expect(group.Properties.KmsKeyId).toEqual({ 'Fn::GetAtt': [id, 'Arn'] })
    const [bucket] = resources(template, 'AWS::S3::Bucket')
    expect(JSON.stringify(bucket!.Properties.BucketEncryption)).toContain(id)
  })

  it('without the options: SSE-S3, no versioning, log groups with the service key', async () => {
    const { template } = await synthStack(deploymentYaml())
    const [bucket] = resources(template, 'AWS::S3::Bucket')
    expect(JSON.stringify(bucket!.Properties.BucketEncryption)).toContain('AES256')
    expect(bucket!.Properties.VersioningConfiguration).toBeUndefined()
    for (const group of resources(template, 'AWS::Logs::LogGroup'))
      expect(group.Properties.KmsKeyId).toBeUndefined()
  })
})
