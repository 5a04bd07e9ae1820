import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Match, Template } from 'aws-cdk-lib/assertions'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { beforeAll, describe, expect, it } from 'vitest'
import { parseProject } from '../../lib/config/index.ts'
import { ConfigError } from '../../lib/core/errors.ts'
import { buildApp } from '../../infra/build-app.ts'
import { ALLOCATOR_DEFAULTS } from '../../lib/runtime/allocator-environment.mjs'
import { planDeployment } from '../../infra/deploy-plan.ts'
import { definitionFromTemplate } from '../support/step-functions/jsonata-state-machine.ts'
import {
  bigQueryProject,
  FIXTURE_HANDLER,
  loaderFunctionsOf,
  NO_BUNDLING,
  statementsOf,
} from './support/synth-stack.ts'

const FIXTURE = FIXTURE_HANDLER

const AWS_YAML = `
version: 1
defaults:
  schedule: { timezone: Europe/Paris }
tables:
  - name: customers
    source: { type: postgres, url_env: SHOP_DB_URL, table: public.customers }
    key: customer_id
    schedule: { expression: rate(1 hour), flexible_window_minutes: 15 }
  - name: orders
    source: { type: mysql, url_env: ORDERS_DB_URL, table: orders }
    key: order_id
    extract: { mode: incremental, cursor: updated_at }
    schedule: cron(0 3 * * ? *)
    lambda: large
  - name: products
    source: { type: postgres, url_env: SHOP_DB_URL, table: public.products }
    key: sku
    schedule: { expression: rate(15 minutes), enabled: false }
aws:
  secrets:
    SHOP_DB_URL: dimsync/shop-db
    ORDERS_DB_URL: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:dimsync/orders-AbCdEf'
  bigquery_secret: dimsync/bigquery
  alarm_email: ops@example.com
`

function tempOutdir(): string {
  return mkdtempSync(path.join(tmpdir(), 'dimsync-cdk-'))
}

function definitionOf(template: Template): { States: Record<string, Record<string, unknown>> } {
  return definitionFromTemplate(template.toJSON() as Parameters<typeof definitionFromTemplate>[0])
}

describe('DimsyncStack (bundling skipped)', () => {
  let template: Template
  let report: { pluginReports: { pluginName: string; conclusion: string; violations: unknown[] }[] }

  beforeAll(async () => {
    const outdir = tempOutdir()
    const { app, stack } = await buildApp({
      project: bigQueryProject(AWS_YAML),
      appProps: { outdir, context: NO_BUNDLING },
      handlerEntries: { extract: FIXTURE, merge: FIXTURE },
    })
    // synth runs the cdk-nag plugin; it throws when a finding is not acknowledged.
    app.synth()
    template = Template.fromStack(stack)
    report = JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8'))
  })

  it('passes cdk-nag AwsSolutions with no unacknowledged finding', () => {
    expect(report.pluginReports.flatMap((r) => r.violations)).toEqual([])
  })

  it('runs cdk-nag during synth: an unacknowledged finding fails it', async () => {
    const { app, stack } = await buildApp({
      project: bigQueryProject(AWS_YAML),
      appProps: { outdir: tempOutdir(), context: NO_BUNDLING },
      handlerEntries: { extract: FIXTURE, merge: FIXTURE },
    })
    new s3.Bucket(stack, 'UnloggedBucket', { enforceSSL: true })
    expect(() => app.synth()).toThrow(/Dimsync\/UnloggedBucket\/Resource[\s\S]*AwsSolutions-S1\b/)
  })

  it('creates one schedule per scheduled table, with its expression, zone, window, state and input', () => {
    // One per scheduled table, and the staleness check's.
    template.resourceCountIs('AWS::Scheduler::Schedule', 4)
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 hour)',
      ScheduleExpressionTimezone: 'Europe/Paris',
      FlexibleTimeWindow: { Mode: 'FLEXIBLE', MaximumWindowInMinutes: 15 },
      State: 'ENABLED',
      Target: Match.objectLike({
        Input: JSON.stringify({ table: 'customers', reason: 'schedule', whenBusy: 'skip' }),
      }),
    })
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'cron(0 3 * * ? *)',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: Match.objectLike({
        Input: JSON.stringify({ table: 'orders', reason: 'schedule', whenBusy: 'skip' }),
      }),
    })
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(15 minutes)',
      State: 'DISABLED',
    })
    // Start the loader and the staleness check, write to each schedule's dead-letter queue, nothing else.
    const scheduleStatements = statementsOf(template, 'SchedulesRole')
    const starts = (machine: RegExp) => ({
      Action: 'states:StartExecution',
      Effect: 'Allow',
      Resource: { Ref: expect.stringMatching(machine) },
    })
    const deadLetters = {
      Action: 'sqs:SendMessage',
      Effect: 'Allow',
      Resource: { 'Fn::GetAtt': [expect.stringMatching(/^SchedulesDeadLetters/), 'Arn'] },
    }
    expect(scheduleStatements).toEqual([
      starts(/^OrchestrationStateMachine/),
      deadLetters,
      deadLetters,
      deadLetters,
      starts(/^MonitoringStalenessCheckStateMachine/),
      deadLetters,
    ])
  })

  it('retries transient errors with backoff, never validation errors, and catches everything', () => {
    const { States } = definitionOf(template)
    type Retrier = { ErrorEquals: string[]; MaxAttempts: number; BackoffRate?: number }
    const shared = (States.Merge!.Retry as Retrier[]).slice()
    // A first extract pass meeting another run is not retried: a schedule skips, a person is told at once.
    expect(States.Extract!.Retry).toEqual([{ ErrorEquals: ['LockHeldError'], MaxAttempts: 0 }, ...shared])
    expect(shared[0]).toEqual({
      ErrorEquals: ['ConfigError', 'BatchRejectedError', 'MassDeleteRefusedError', 'LeaseLostError'],
      MaxAttempts: 0,
    })
    expect(shared[1]).toMatchObject({ ErrorEquals: ['LockHeldError', 'RetryableError'], BackoffRate: 2 })
    expect(shared[2]!.ErrorEquals).toContain('Lambda.TooManyRequestsException')
    expect(shared.flatMap((r) => r.ErrorEquals)).not.toContain('States.ALL')
    const catchAll = (step: string) => ({
      ErrorEquals: ['States.ALL'],
      Next: 'Notify',
      Assign: { error: '{% $states.errorOutput %}', failedStep: step },
    })
    expect(States.Merge!.Catch).toEqual([catchAll('Merge')])
    expect(States.Extract!.Catch).toEqual([
      {
        ErrorEquals: ['LockHeldError'],
        Next: 'RefuseBusyTable',
        Assign: { error: '{% $states.errorOutput %}' },
      },
      catchAll('Extract'),
    ])
    expect(States.Notify!.Next).toBe('RecordFailure')
    expect(States.Notify!.Resource).toBe('arn:aws:states:::sns:publish')
    expect(States.RecordFailure!.Next).toBe('Failed')
    expect(States.Failed).toMatchObject({ Type: 'Fail', Error: '{% $error.Error %}' })
  })

  it('hands the lease from one extract pass to the next for longer than the retries can make the next one wait', () => {
    type Retrier = {
      ErrorEquals: string[]
      IntervalSeconds?: number
      MaxAttempts?: number
      BackoffRate?: number
      MaxDelaySeconds?: number
    }
    const retriers = definitionOf(template).States.Extract!.Retry as Retrier[]
    const waits = (r: Retrier) =>
      Array.from({ length: r.MaxAttempts ?? 3 }, (_, n) =>
        Math.min((r.IntervalSeconds ?? 1) * (r.BackoffRate ?? 2) ** n, r.MaxDelaySeconds ?? Infinity),
      )
    // Throttles and Lambda service errors: the pass never runs, so their waits add up with no renewal.
    const beforeRunning = retriers.filter((r) => r.ErrorEquals.some((e) => e.startsWith('Lambda.')))
    const others = retriers.filter((r) => !beforeRunning.includes(r))
    const longest =
      beforeRunning.flatMap(waits).reduce((a, b) => a + b, 0) + Math.max(...others.flatMap(waits))
    expect(longest).toBeGreaterThan(40 * 60)
    const extracts = Object.values(template.findResources('AWS::Lambda::Function')).filter((f) =>
      JSON.stringify(f).includes('SHOP_DB_URL'),
    ) as { Properties: { Environment: { Variables: Record<string, string> } } }[]
    expect(extracts.length).toBeGreaterThan(0)
    for (const fn of extracts)
      expect(Number(fn.Properties.Environment.Variables.DIMSYNC_HANDOVER_TTL_SECONDS)).toBeGreaterThanOrEqual(
        longest,
      )
  })

  it('loops the extract while it reports complete: false, and refuses unknown tables up front', () => {
    const { States } = definitionOf(template)
    expect(States.ContinueExtract!.Next).toBe('Extract')
    const choice = States.ExtractComplete as {
      Choices: { Condition: string; Next: string }[]
      Default: string
    }
    expect(choice.Choices.slice(0, 2)).toEqual([
      { Condition: '{% $extract.skipped = true %}', Next: 'RecordSkipped' },
      { Condition: '{% $extract.complete = false and $passes < 48 %}', Next: 'ContinueExtract' },
    ])
    expect(choice.Default).toBe('Merge')
    const check = States.CheckInput as { Choices: { Next: string }[]; Default: string }
    expect(check.Choices.map((c) => c.Next)).toEqual(['RefuseUnknownTable', 'RefuseInvalidInput', 'Replay'])
    expect(check.Default).toBe('Start')
    expect(States.UnknownTable!.Cause).toBe(
      '{% "table " & $string($states.input.table) & " is not deployed by this stack (tables: customers, orders, products); ' +
        'start an execution with {\\"table\\": \\"customers\\"}" %}',
    )
  })

  it('lets each function touch only its tables’ prefixes, the state table and its own secrets', () => {
    const extract = statementsOf(template, 'ExtractMediumRole')
    const objects = extract.find((s) => (s.Action as string[]).includes('s3:PutObject'))!
    expect(JSON.stringify(objects.Resource)).toContain('/staging/customers/*')
    expect(JSON.stringify(objects.Resource)).toContain('/staging/products/*')
    expect(JSON.stringify(objects.Resource)).not.toContain('orders')
    expect(extract.find((s) => s.Action === 's3:ListBucket')!.Condition).toEqual({
      StringLike: { 's3:prefix': ['staging/customers/*', 'staging/products/*'] },
    })
    const secrets = extract.filter((s) => (s.Action as string[]).includes('secretsmanager:GetSecretValue'))
    expect(JSON.stringify(secrets)).toContain('secret:dimsync/shop-db-??????')
    expect(JSON.stringify(secrets)).not.toContain('bigquery')
    expect(JSON.stringify(secrets)).not.toContain('orders')

    const largeExtract = JSON.stringify(statementsOf(template, 'ExtractLargeRole'))
    expect(largeExtract).toContain(
      'arn:aws:secretsmanager:eu-west-1:123456789012:secret:dimsync/orders-AbCdEf',
    )
    expect(largeExtract).not.toContain('shop-db')

    const merge = JSON.stringify(statementsOf(template, 'MergeMediumRole'))
    expect(merge).toContain('secret:dimsync/bigquery-??????')
    expect(merge).not.toContain('shop-db')
    expect(merge).not.toContain('s3:PutObject')
    for (const role of ['ExtractMediumRole', 'MergeMediumRole', 'ExtractLargeRole', 'MergeLargeRole']) {
      const wildcard = statementsOf(template, role).filter((s) => s.Resource === '*')
      expect(wildcard.map((s) => s.Action)).toEqual([['xray:PutTraceSegments', 'xray:PutTelemetryRecords']])
    }
    template.resourcePropertiesCountIs('AWS::IAM::Role', { ManagedPolicyArns: Match.anyValue() }, 0)

    // State items: only the partitions of the function's own tables.
    const state = (role: string) =>
      statementsOf(template, role).find((s) => (s.Action as string[]).includes('dynamodb:UpdateItem'))!
    for (const role of ['ExtractMediumRole', 'MergeMediumRole']) {
      expect(state(role).Condition).toEqual({
        'ForAllValues:StringEquals': {
          'dynamodb:LeadingKeys': ['TABLE#customers', 'RUNS#customers', 'TABLE#products', 'RUNS#products'],
        },
      })
    }
    expect(state('MergeLargeRole').Condition).toEqual({
      'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['TABLE#orders', 'RUNS#orders'] },
    })
  })

  it('deploys pinned nodejs22.x functions sized per class, with the env contract', () => {
    expect(Object.keys(loaderFunctionsOf(template))).toHaveLength(4)
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      MemorySize: 4096,
      Timeout: 900,
      EphemeralStorage: { Size: 4096 },
      Environment: {
        Variables: Match.objectLike({
          DIMSYNC_CONFIG_PATH: '/var/task/dimsync.yaml',
          DIMSYNC_STAGING_PREFIX: 'staging',
          DIMSYNC_WAREHOUSE: 'bigquery',
          ORDERS_DB_URL: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:dimsync/orders-AbCdEf',
        }),
      },
    })
    template.hasResourceProperties('AWS::Lambda::Function', {
      MemorySize: 2048,
      Environment: { Variables: Match.objectLike({ DIMSYNC_BIGQUERY_SECRET_ARN: Match.anyValue() }) },
    })
    template.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 })
  })

  it('starts every function with the allocator settings the CLI starts with', () => {
    const functions = Object.values(loaderFunctionsOf(template)) as {
      Properties: { Environment: { Variables: Record<string, string> } }
    }[]
    expect(functions).toHaveLength(4)
    const { NODE_OPTIONS: youngGeneration, ...variables } = ALLOCATOR_DEFAULTS
    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables).toMatchObject(variables)
      // Source maps for the stack traces in the logs, beside the V8 heap setting.
      expect(fn.Properties.Environment.Variables.NODE_OPTIONS!.split(' ').sort()).toEqual(
        ['--enable-source-maps', youngGeneration].sort(),
      )
    }
  })

  it('keeps staging private, encrypted, TLS-only, and never expires a batch (one may wait for an operator)', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      LifecycleConfiguration: {
        // Merged and discarded batches are deleted by dimsync; a refused or unmerged batch waits until a rerun
        // or `dimsync discard`, so no rule deletes staged objects by age (only unfinished multipart uploads).
        Rules: [
          {
            Id: 'abort-incomplete-uploads',
            AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
            Status: 'Enabled',
          },
        ],
      },
    })
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    })
    template.hasResource('AWS::S3::Bucket', { DeletionPolicy: 'Retain' })
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
    })
  })

  it('alarms on failed runs per table and on staleness of enabled schedules', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'LoadFailed',
      Namespace: 'Dimsync',
      Dimensions: [{ Name: 'Table', Value: 'orders' }],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    })
    // Staleness of the enabled schedules (customers, orders) through the staleness check's Stale metric.
    for (const table of ['customers', 'orders'])
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'Stale',
        Dimensions: [{ Name: 'Table', Value: table }],
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      })
    // products is disabled: no staleness alarm. 3 failure + 2 staleness + the staleness check's own + 4
    // execution alarms (failed untold, timed out, throttled, aborted) + 3 per function (throttles, near
    // timeout, errors) × 4 functions + one per dead-letter queue (3 tables, the staleness check) + starts
    // dropped + target errors.
    template.resourceCountIs('AWS::CloudWatch::Alarm', 28)
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    })
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() })
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1)
  })
})

describe('deployment rules and bad configs', () => {
  it('fails synth on an invalid dimsync.yaml with the CLI message (loadProject)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dimsync-bad-'))
    const file = path.join(dir, 'dimsync.yaml')
    writeFileSync(file, AWS_YAML.replace('rate(1 hour)', 'rate(1 hours)'))
    const error = await buildApp({
      configPath: file,
      appProps: { outdir: tempOutdir(), context: NO_BUNDLING },
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as Error).message).toBe(
      `${file}: tables[0].schedule.expression: must be rate(1 hour) (got "rate(1 hours)")`,
    )
  })

  it('refuses what cannot run on AWS: a DuckDB warehouse, file sources, a url_env without a secret', () => {
    const project = parseProject(
      [
        'version: 1',
        'tables:',
        '  - { name: seeds, source: { type: file, path: seeds.csv }, key: id }',
        '  - { name: shops, source: { type: postgres, url_env: SHOPS_URL, table: shops }, key: id }',
      ].join('\n'),
      '/deploy/dimsync.yaml',
    )
    expect(() => planDeployment(project)).toThrow(ConfigError)
    try {
      planDeployment(project)
    } catch (error) {
      expect((error as ConfigError).issues).toEqual([
        'warehouse.type: "duckdb" cannot be deployed to AWS: a function\'s disk lasts one invocation; set warehouse: { type: bigquery, ... } (DuckDB is for dimsync run on one machine)',
        'tables[0].source.path: seeds.csv is a local path, which the functions cannot read; put the files on S3 (path: s3://bucket/prefix/*.csv) or load table seeds with dimsync run',
        "tables[1].source.url_env: SHOPS_URL has no secret; add aws: { secrets: { SHOPS_URL: <secret name or ARN> } } (the secret's value is the connection URL)",
      ])
    }
  })

  it('refuses a PostgreSQL warehouse, which the functions do not merge into yet, saying where it runs', () => {
    const project = parseProject(
      [
        'version: 1',
        'warehouse: { type: postgres, url_env: DW_URL }',
        'tables:',
        '  - { name: shops, source: { type: postgres, url_env: SHOPS_URL, table: shops }, key: id }',
        'aws: { secrets: { SHOPS_URL: shops-db } }',
      ].join('\n'),
      '/deploy/dimsync.yaml',
    )
    expect(() => planDeployment(project)).toThrow(ConfigError)
    try {
      planDeployment(project)
    } catch (error) {
      expect((error as ConfigError).issues).toEqual([
        'warehouse.type: "postgres" cannot be deployed to AWS yet: the functions merge into BigQuery only; run a PostgreSQL warehouse with dimsync run (the CLI), or set warehouse: { type: bigquery, ... }',
      ])
    }
  })

  it('a BigQuery warehouse needs a service-account key secret, or workload_identity (keyless, no secret)', () => {
    const yaml = (warehouse: string) =>
      [
        'version: 1',
        `warehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU${warehouse} }`,
        'tables:',
        '  - { name: shops, source: { type: postgres, url_env: SHOPS_URL, table: shops }, key: id }',
        'aws: { secrets: { SHOPS_URL: dimsync/shops } }',
      ].join('\n')
    const keyless = planDeployment(
      parseProject(
        yaml(
          ', workload_identity: { audience: "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/aws/providers/dimsync" }',
        ),
        '/deploy/dimsync.yaml',
      ),
    )
    expect(keyless.bigQuerySecret).toBeUndefined()
    const error = (() => {
      try {
        planDeployment(parseProject(yaml(''), '/deploy/dimsync.yaml'))
      } catch (e) {
        return e
      }
    })()
    expect((error as ConfigError).issues).toEqual([
      'warehouse.credentials_secret: is required to deploy a BigQuery warehouse (the name or ARN of a Secrets ' +
        'Manager secret holding the service-account JSON), unless warehouse.workload_identity gives keyless ' +
        "access from the functions' AWS role",
    ])
  })

  it('watches staleness over twice the interval, however rare the schedule; never for one that fires no more', () => {
    const weekly = planDeployment(
      bigQueryProject(AWS_YAML.replace('cron(0 3 * * ? *)', 'cron(0 3 ? * MON *)')),
    )
    expect(weekly.tables.find((t) => t.name === 'orders')!.stalenessWindowMinutes).toBe(2 * 7 * 24 * 60)
    expect(weekly.tables.find((t) => t.name === 'customers')!.stalenessWindowMinutes).toBe(120)
    const once = planDeployment(
      bigQueryProject(AWS_YAML.replace('cron(0 3 * * ? *)', 'cron(0 3 1 1 ? 2020)')),
    )
    const orders = once.tables.find((t) => t.name === 'orders')!
    expect(orders.stalenessWindowMinutes).toBeUndefined()
    expect(orders.stalenessSkipped).toBe('cron(0 3 1 1 ? 2020) never runs again')
  })

  it('places functions in the VPC subnets with their own outbound-only security group', async () => {
    const yaml = AWS_YAML.replace(
      '  alarm_email: ops@example.com',
      '  vpc: { vpc_id: vpc-0123456789abcdef0, subnet_ids: [subnet-0123456789abcdef0, subnet-0fedcba9876543210] }',
    )
    const { app, stack } = await buildApp({
      project: bigQueryProject(yaml),
      appProps: { outdir: tempOutdir(), context: NO_BUNDLING },
      handlerEntries: { extract: FIXTURE, merge: FIXTURE },
    })
    app.synth()
    const template = Template.fromStack(stack)
    const functions = Object.values(loaderFunctionsOf(template))
    expect(functions).toHaveLength(4)
    for (const fn of functions)
      expect(fn.Properties.VpcConfig).toEqual({
        SubnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
        SecurityGroupIds: [{ 'Fn::GetAtt': [expect.stringMatching(/^FunctionsSecurityGroup/), 'GroupId'] }],
      })
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      VpcId: 'vpc-0123456789abcdef0',
      SecurityGroupEgress: [{ CidrIp: '0.0.0.0/0', IpProtocol: '-1' }],
    })
  })
})
