import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { markdownBlocks } from '../support/markdown-blocks.ts'
import { deploymentYaml, loaderFunctionsOf, NO_BUNDLING, synthStack } from './support/synth-stack.ts'

const ROOT = path.join(import.meta.dirname, '..', '..')
const EXAMPLE = path.join(ROOT, 'examples', 'aws', 'cdk-app.ts')

type Resource = { Type: string; Properties?: Record<string, unknown> }
type TemplateJson = {
  Resources: Record<string, Resource>
  Parameters?: Record<string, { Default?: unknown }>
}

const ofType = (template: TemplateJson, type: string) =>
  Object.entries(template.Resources).filter(([, r]) => r.Type === type)

describe('DimsyncLoader in a CDK app of its own', () => {
  it('the example app of docs/aws.md synthesizes cdk-nag clean with the bucket, state table, topic and key the team has', () => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'dimsync-loader-app-'))
    const run = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'tsx'), [EXAMPLE], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify(NO_BUNDLING) },
      timeout: 120_000,
    })
    // What a reader copies from the docs is this file.
    const docs = markdownBlocks('docs/aws.md', readFileSync(path.join(ROOT, 'docs', 'aws.md'), 'utf8'))
    expect(docs.filter((b) => b.lang === 'ts').map((b) => `${b.text}\n`)).toContain(
      readFileSync(EXAMPLE, 'utf8'),
    )
    expect(run.stderr + run.stdout, 'the app ran').not.toMatch(/Error/)
    expect(run.status).toBe(0)
    const report = JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: { violations: unknown[] }[]
    }
    expect(report.pluginReports.flatMap((r) => r.violations)).toEqual([])
    const template = JSON.parse(
      readFileSync(path.join(outdir, 'DataPlatform.template.json'), 'utf8'),
    ) as TemplateJson

    // Nothing of its own where the team gave one: no bucket, state table, topic or notification key.
    for (const type of ['AWS::S3::Bucket', 'AWS::DynamoDB::Table', 'AWS::SNS::Topic', 'AWS::KMS::Key'])
      expect(ofType(template, type), type).toEqual([])
    const functions = Object.values(
      loaderFunctionsOf({ findResources: (t) => Object.fromEntries(ofType(template, t)) }),
    ).map((f) => f.Properties.Environment!.Variables)
    expect(functions).toHaveLength(2)
    for (const env of functions)
      expect(env).toMatchObject({
        DIMSYNC_STAGING_BUCKET: 'data-platform-staging',
        DIMSYNC_STATE_TABLE: 'data-platform-dimsync-state',
      })
    const text = JSON.stringify(template)
    expect(text).toContain('arn:aws:sns:eu-west-1:123456789012:data-oncall')
    expect(text).toContain(':table/data-platform-dimsync-state')
    // Publishing to the encrypted topic: the team's key, exactly.
    expect(text).toContain(
      '"Action":["kms:Decrypt","kms:GenerateDataKey"],"Effect":"Allow","Resource":"arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"',
    )

    // The governance options: a boundary and the prefix on every role, the tags on what takes tags.
    const roles = ofType(template, 'AWS::IAM::Role')
    expect(roles.length).toBeGreaterThanOrEqual(5)
    for (const [id, role] of roles) {
      expect(JSON.stringify(role.Properties!.PermissionsBoundary), id).toContain(
        ':policy/data-platform-boundary',
      )
      expect(role.Properties!.RoleName, id).toMatch(/^data-.{1,59}$/)
    }
    for (const type of ['AWS::Lambda::Function', 'AWS::StepFunctions::StateMachine', 'AWS::IAM::Role'])
      for (const [id, r] of ofType(template, type))
        expect(r.Properties!.Tags, id).toEqual(
          expect.arrayContaining([expect.objectContaining({ Key: 'team', Value: 'data-platform' })]),
        )
  })
})

describe('governance options of dimsync.yaml (aws: ...)', () => {
  it('a permissions boundary on every role, role names with the prefix, tags on every resource, the bootstrap qualifier', async () => {
    const { template, violations } = await synthStack(
      deploymentYaml({
        aws: [
          '  permissions_boundary: arn:aws:iam::123456789012:policy/governance/dimsync-boundary',
          '  role_name_prefix: app-dimsync-',
          '  tags: { cost-center: "4711", owner: data-team }',
          '  bootstrap_qualifier: dataplat',
        ].join('\n'),
      }),
    )
    expect(violations).toEqual([])
    const json = template.toJSON() as TemplateJson
    const roles = ofType(json, 'AWS::IAM::Role')
    expect(roles.length).toBeGreaterThanOrEqual(5)
    const names = roles.map(([, r]) => r.Properties!.RoleName as string)
    for (const [id, role] of roles)
      expect(role.Properties!.PermissionsBoundary, id).toBe(
        'arn:aws:iam::123456789012:policy/governance/dimsync-boundary',
      )
    for (const name of names) expect(name).toMatch(/^app-dimsync-[\w+=,.@-]{1,52}$/)
    expect(new Set(names).size).toBe(names.length)
    const tagged = ['AWS::Lambda::Function', 'AWS::S3::Bucket', 'AWS::DynamoDB::Table', 'AWS::SNS::Topic']
    for (const type of tagged)
      for (const [id, r] of ofType(json, type))
        expect(r.Properties!.Tags, id).toEqual(
          expect.arrayContaining([
            { Key: 'cost-center', Value: '4711' },
            { Key: 'owner', Value: 'data-team' },
          ]),
        )
    // The stack deploys with the roles and bucket of the bootstrap stack of that qualifier.
    expect(json.Parameters?.BootstrapVersion?.Default).toBe('/cdk-bootstrap/dataplat/version')
    Template.fromJSON(json as unknown as Record<string, unknown>)
  })

  it('refuses a role name prefix or tag that AWS would refuse, at synth, naming the option', async () => {
    await expect(synthStack(deploymentYaml({ aws: '  role_name_prefix: "data platform/"' }))).rejects.toThrow(
      /aws\.role_name_prefix: must be a role name prefix/,
    )
    await expect(synthStack(deploymentYaml({ aws: '  tags: { "aws:owner": me }' }))).rejects.toThrow(
      /aws\.tags\.aws:owner: must be a tag key/,
    )
  })
})
