import { mkdtempSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'

import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import type { Context } from 'aws-lambda'
import type { CfnElement } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import jsonata from 'jsonata'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import { createExtractHandler, createMergeHandler } from '../../functions/shared/handlers.ts'
import { buildApp } from '../../infra/build-app.ts'
import { parseProject } from '../../lib/config/index.ts'
import { WarehouseBusyError } from '../../lib/core/errors.ts'
import type { ProjectSpec } from '../../lib/core/table-spec.ts'
import { buildAwsDeps, type AwsDeps } from '../../lib/runtime/aws-deps.ts'
import { AWS_ENV } from '../../lib/runtime/aws-env.ts'
import { PG_URL, postgresReachable } from '../integration/sources/support/db-services.ts'
import { BigQueryEmulator } from '../support/bigquery-emulator/bigquery-emulator.ts'
import { ZetaSqlService } from '../support/bigquery-emulator/zetasql-service.ts'
import { PostgresFunctionEnv } from '../support/aws/postgres-functions.ts'
import {
  captureStdout,
  fakeContext,
  makeSandbox,
  nearTheDeadline,
  stagingExtract,
} from '../support/aws/lambda.ts'
import {
  JsonataStateMachine,
  LIST_OBJECTS,
  PUT_METRIC_DATA,
  SNS_PUBLISH,
  UnsupportedDefinitionError,
  definitionFromTemplate,
  lambdaArnOf,
  lambdaVersionArnOf,
  type ExecutionResult,
  type Json,
  type LambdaInvoker,
  type StateMachineDefinition,
} from '../support/step-functions/jsonata-state-machine.ts'

const available = await postgresReachable()

const FIXTURE = path.join(import.meta.dirname, 'fixtures', 'handler.ts')
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] }

/** What the stack deploys: the state machine only knows the table names and which functions serve them. */
const DEPLOYED_YAML = `
version: 1
tables:
  - name: items
    source: { type: postgres, url_env: DB_URL, table: public.items }
    key: id
  - name: small
    source: { type: postgres, url_env: DB_URL, table: public.small }
    key: id
  - name: broken
    source: { type: postgres, url_env: DB_URL, table: public.items }
    key: id
  - name: orders
    source: { type: postgres, url_env: DB_URL, table: public.orders }
    key: id
    extract: { mode: incremental, cursor: updated_at }
  - name: drops
    source: { type: file, path: 's3://landing/drops/*.csv', files: new_only }
    key: id
aws:
  secrets:
    DB_URL: dimsync/source-db
  bigquery_secret: dimsync/bigquery
`

/** The BigQuery warehouse section belongs to another change; until it lands, tests set the type directly. */
function bigQueryProject(yaml: string): ProjectSpec {
  const project = parseProject(yaml, '/deploy/dimsync.yaml')
  return { ...project, warehouse: { type: 'bigquery' } as unknown as ProjectSpec['warehouse'] }
}

type Role = 'extract' | 'merge'

/**
 * Synthesizes the stack as test/infra/dimsync-stack.test.ts does (bundling skipped, cdk-nag on) and reads the
 * state machine's definition, the version ARN tokens replaced by `lambdaVersionArnOf(<function id>, <version id>)`.
 */
async function synthesize(): Promise<{
  definition: StateMachineDefinition
  roles: Map<string, Role>
  published: Published[]
}> {
  const { app, stack } = await buildApp({
    project: bigQueryProject(DEPLOYED_YAML),
    appProps: { outdir: mkdtempSync(path.join(tmpdir(), 'dimsync-cdk-')), context: NO_BUNDLING },
    handlerEntries: { extract: FIXTURE, merge: FIXTURE },
  })
  app.synth()
  const template = Template.fromStack(stack).toJSON() as Parameters<typeof definitionFromTemplate>[0]
  const roles = new Map<string, Role>()
  const published: Published[] = []
  for (const pair of Object.values(stack.functions)) {
    for (const role of ['extract', 'merge'] as const) {
      const id = stack.getLogicalId(pair[role].function.node.defaultChild as CfnElement)
      // The version's logical id gets its code hash only in the template.
      const versionId = Object.entries(template.Resources).find(
        ([, r]) =>
          r.Type === 'AWS::Lambda::Version' && (r.Properties?.FunctionName as { Ref?: string }).Ref === id,
      )![0]
      roles.set(lambdaVersionArnOf(id, versionId), role)
      published.push({ role, functionArn: lambdaArnOf(id), versionArn: lambdaVersionArnOf(id, versionId) })
    }
  }
  return { definition: definitionFromTemplate(template), roles, published }
}

/** A function of the stack and the version this deploy published of it. */
interface Published {
  readonly role: Role
  readonly functionArn: string
  readonly versionArn: string
}

const metricsOf = (result: ExecutionResult, state: string) =>
  result.calls
    .filter((c) => c.state === state && c.resource === PUT_METRIC_DATA)
    .flatMap((c) => (c.arguments as { MetricData: { MetricName: string; Value: number }[] }).MetricData)

describe('state machine definition run by a JSONata interpreter (simulated Step Functions) against the real functions', () => {
  let machine: JsonataStateMachine
  let roles: Map<string, Role>
  let definition: StateMachineDefinition
  let published: Published[]

  beforeAll(async () => {
    const synthesized = await synthesize()
    roles = synthesized.roles
    published = synthesized.published
    definition = synthesized.definition
    machine = await JsonataStateMachine.load(definition)
  })

  const notInvoked: LambdaInvoker = async (name) => {
    throw new Error(`no function may be invoked, got ${name}`)
  }

  it('refuses an unknown table before invoking anything, naming the deployed tables', async () => {
    const result = await machine.run({ input: { table: 'nope' }, invoke: notInvoked })
    expect(result).toMatchObject({
      status: 'FAILED',
      error: 'UnknownTable',
      cause:
        'table nope is not deployed by this stack (tables: items, small, broken, orders, drops); ' +
        'start an execution with {"table": "items"}',
      visited: ['CheckInput', 'RefuseUnknownTable', 'UnknownTable'],
      invocations: [],
    })
    // Told to the person who started it: counted as a reported failure, nothing else is called.
    expect(result.calls).toEqual([
      {
        state: 'RefuseUnknownTable',
        resource: PUT_METRIC_DATA,
        arguments: {
          Namespace: 'Dimsync',
          MetricData: [{ MetricName: 'FailuresReported', Value: 1, Unit: 'Count' }],
        },
      },
    ])
    const badMode = await machine.run({ input: { table: 'items', mode: 'delta' }, invoke: notInvoked })
    expect(badMode).toMatchObject({
      status: 'FAILED',
      error: 'InvalidInput',
      visited: ['CheckInput', 'RefuseInvalidInput', 'InvalidInput'],
    })
    expect(badMode.cause).toContain('(got "delta")')
  })

  /** A console typo: the execution fails as InvalidInput with `cause` (one line), nothing invoked, no notice. */
  async function refused(input: Json, cause: string | RegExp) {
    const result = await machine.run({ input, invoke: notInvoked })
    expect(result).toMatchObject({
      status: 'FAILED',
      error: 'InvalidInput',
      visited: ['CheckInput', 'RefuseInvalidInput', 'InvalidInput'],
      invocations: [],
    })
    if (typeof cause === 'string') expect(result.cause).toBe(cause)
    else expect(result.cause).toMatch(cause)
    expect(result.cause).not.toContain('\n')
    // Told to who started it (counted as reported), never notified, never counted as a failed load.
    expect(result.calls.map((c) => c.resource)).toEqual([PUT_METRIC_DATA])
    expect(metricsOf(result, 'RefuseInvalidInput').map((m) => m.MetricName)).toEqual(['FailuresReported'])
    return result
  }

  it("refuses a console typo against the table's deployed settings: InvalidInput with a one-line reason, no notice, no LoadFailed", async () => {
    await refused(
      { table: 'items', mode: 'incremental' },
      'mode: table items is configured for full extracts; "incremental" needs extract.cursor in dimsync.yaml (start it without a mode)',
    )
    await refused(
      { table: 'drops', mode: 'full' },
      'mode: table drops reads new files only (source.files: new_only), so "full" would not read the files merged already; start it without a mode',
    )
    await refused({ table: 'items', whenBusy: 'wait' }, 'whenBusy: must be "fail" or "skip" (got "wait")')
    await refused(
      { table: 'items', reason: 'x'.repeat(1000) + 'y' },
      'reason: must be a text of at most 1000 characters (got 1001)',
    )
    await refused(
      { table: 'items', reason: 42 },
      'reason: must be a text of at most 1000 characters (got 42)',
    )
    await refused(
      {},
      'table: is required (tables: items, small, broken, orders, drops); start an execution with {"table": "items"}',
    )
    await refused('items', 'the input must be a JSON object like {"table": "items"} (got "items")')
    await refused(
      { table: 'items', mdoe: 'full', resume: { pass: 1 } },
      'mdoe, resume: unknown keys (the input takes table, mode, reason, whenBusy, batchId)',
    )
    // Every problem of one input, on one line.
    await refused(
      { table: 'items', mode: 'delta', whenBusy: 'never' },
      'mode: must be "full" or "incremental" (got "delta"); whenBusy: must be "fail" or "skip" (got "never")',
    )
    await refused(
      { table: 'items', batchId: 'no such/batch' },
      /^batchId: must be the id of a staged batch, like 20240310T143000\.000Z-3f9a1c \(got "no such\/batch"\)$/,
    )
    await refused(
      { table: 'items', batchId: '20240310T143000.000Z-3f9a1c', mode: 'full' },
      'mode: cannot be given with batchId (a batchId merges a staged batch again, without extracting)',
    )
    // What a schedule sends, and the configured modes, pass.
    const passes: LambdaInvoker = async (name) =>
      roles.get(name) === 'extract'
        ? { table: 'x', batchId: 'b1', rows: 0, bytes: 0, complete: true }
        : { table: 'x', batchId: 'b1', status: 'merged', watermark: 'none' }
    const valid: Json[] = [
      { table: 'items', reason: 'schedule', whenBusy: 'skip' },
      { table: 'orders', mode: 'incremental' },
      { table: 'orders', mode: 'full', reason: 'x'.repeat(1000) },
      { table: 'drops', mode: '', whenBusy: null },
    ]
    for (const input of valid)
      expect((await machine.run({ input, invoke: passes })).status, JSON.stringify(input)).toBe('SUCCEEDED')
  })

  it('a batchId replays that staged batch without extracting; a batch that is not staged is refused as InvalidInput', async () => {
    const batchId = '20240310T143000.000Z-3f9a1c'
    const listed: Json[] = []
    const staged = (keyCount: number) => (call: { resource: string; arguments: Json }) => {
      if (call.resource !== LIST_OBJECTS) return {}
      listed.push(call.arguments)
      return { KeyCount: keyCount, Contents: [] }
    }
    const merged = await machine.run({
      input: { table: 'small', batchId, reason: 'replay after the fix' },
      invoke: async (name, payload) => {
        expect(roles.get(name)).toBe('merge')
        expect(payload).toEqual({ table: 'small', batchId })
        return { table: 'small', batchId, status: 'merged', watermark: 'advanced', counts: {} }
      },
      callService: staged(1),
    })
    expect(merged).toMatchObject({ status: 'SUCCEEDED', output: { table: 'small', batchId, rows: 0 } })
    expect(merged.visited).toEqual([
      'CheckInput',
      'Replay',
      'CheckStaged',
      'BatchStaged',
      'Merge',
      'RecordSuccess',
      'Done',
    ])
    expect(listed).toEqual([
      {
        Bucket: expect.stringMatching(/^StorageStaging/),
        Prefix: `staging/small/${batchId}/_manifest.json`,
        MaxKeys: 1,
      },
    ])

    const missing = await machine.run({
      input: { table: 'small', batchId },
      invoke: notInvoked,
      callService: staged(0),
    })
    expect(missing).toMatchObject({ status: 'FAILED', error: 'InvalidInput', invocations: [] })
    expect(missing.cause).toMatch(
      new RegExp(
        `^batchId: batch ${batchId} of table small is not staged \\(nothing at s3://StorageStaging\\w+/staging/small/${batchId}/_manifest\\.json\\); `,
      ),
    )
    expect(missing.visited.slice(-3)).toEqual(['BatchStaged', 'RefuseUnstagedBatch', 'BatchNotStaged'])
    expect(missing.calls.filter((c) => c.resource === SNS_PUBLISH)).toEqual([])
    expect(metricsOf(missing, 'RefuseUnstagedBatch').map((m) => m.MetricName)).toEqual(['FailuresReported'])
  })

  it('takes "mode": null as no mode, as the functions do', async () => {
    const payloads: Json[] = []
    const stub: LambdaInvoker = async (name, payload) => {
      payloads.push(payload)
      return roles.get(name) === 'extract'
        ? { table: 'items', batchId: 'b1', rows: 0, bytes: 0, complete: true }
        : { table: 'items', batchId: 'b1', status: 'merged', watermark: 'none' }
    }
    const result = await machine.run({ input: { table: 'items', mode: null }, invoke: stub })
    expect(result.status).toBe('SUCCEEDED')
    expect(payloads[0]).toEqual({ table: 'items', reason: expect.stringMatching(/^started by hand/) })
  })

  it('invokes the versions published by its deploy for every pass and the merge, never the unqualified functions', async () => {
    let pass = 0
    const result = await machine.run({
      input: { table: 'items' },
      invoke: async (name) => {
        if (roles.get(name) === 'merge') return { table: 'items', batchId: 'b1', status: 'merged' }
        pass++
        return {
          table: 'items',
          batchId: 'b1',
          rows: pass,
          bytes: pass,
          complete: pass === 3,
          resume: { pass },
        }
      },
    })
    expect(result.status).toBe('SUCCEEDED')
    const names = result.invocations.map((i) => [i.state, i.functionName])
    const extractVersion = names[0]![1]!
    const mergeVersion = names.at(-1)![1]!
    expect(names).toEqual([
      ['Extract', extractVersion],
      ['Extract', extractVersion],
      ['Extract', extractVersion],
      ['Merge', mergeVersion],
    ])
    // Running executions keep the definition they started with: a deploy during this one changes nothing.
    const versions = published.map((p) => p.versionArn)
    expect(versions).toContain(extractVersion)
    expect(versions).toContain(mergeVersion)
    expect(published.find((p) => p.versionArn === extractVersion)!.role).toBe('extract')
    expect(JSON.stringify(definition)).not.toMatch(
      new RegExp(`(${published.map((p) => p.functionArn).join('|')})(?!:)`),
    )
  })

  it('keeps the failure notification subject under the 100 characters SNS accepts, for the longest table name', async () => {
    const subject = (definition.States.Notify as { Arguments: { Subject: string } }).Arguments.Subject
    const text = (await jsonata(subject.replace(/^\{%|%\}$/g, '')).evaluate(
      {},
      { table: 't'.repeat(63), failedStep: 'Extract', error: { Error: 'MassDeleteRefusedError' } },
    )) as string
    expect(text.startsWith(`dimsync: ${'t'.repeat(63)} failed in Extract`)).toBe(true)
    expect(text.length).toBe(99)
  })

  it('an extract still incomplete after 48 passes is reported as ExtractDidNotFinish (stub extract, no merge)', async () => {
    let pass = 0
    const result = await machine.run({
      input: { table: 'small' },
      invoke: async (name, payload) => {
        expect(roles.get(name)).toBe('extract')
        pass++
        const batchId = '20240101T000000.000Z-abcdef'
        if (pass > 1) expect(payload).toMatchObject({ batchId, resume: { pass: pass - 1 } })
        return { table: 'small', batchId, rows: pass, bytes: pass, complete: false, resume: { pass } }
      },
    })
    expect(result).toMatchObject({
      status: 'FAILED',
      error: 'ExtractDidNotFinish',
      cause:
        'table small: the extract was still incomplete after 48 passes (batch 20240101T000000.000Z-abcdef)',
    })
    expect(result.invocations).toHaveLength(48)
    expect(result.visited.slice(-5)).toEqual([
      'ExtractComplete',
      'ExtractDidNotFinish',
      'Notify',
      'RecordFailure',
      'Failed',
    ])
    const published = result.calls.filter((c) => c.resource === SNS_PUBLISH)
    expect(JSON.parse((published[0]!.arguments as { Message: string }).Message)).toMatchObject({
      step: 'Extract',
      error: 'ExtractDidNotFinish',
      batchId: '20240101T000000.000Z-abcdef',
    })
  })

  it('a failure is told once (one notice), then counted as reported; a notice that could not be sent is not', async () => {
    const failing: LambdaInvoker = async () => {
      throw Object.assign(new Error('table small: no such column colour'), { name: 'ConfigError' })
    }
    const told = await machine.run({ input: { table: 'small' }, invoke: failing })
    expect(told).toMatchObject({ status: 'FAILED', error: 'ConfigError' })
    expect(told.calls.map((c) => [c.state, c.resource])).toEqual([
      ['Notify', SNS_PUBLISH],
      ['RecordFailure', PUT_METRIC_DATA],
    ])
    expect(metricsOf(told, 'RecordFailure').map((m) => [m.MetricName, m.Value])).toEqual([
      ['LoadFailed', 1],
      ['FailuresReported', 1],
    ])

    const untold = await machine.run({
      input: { table: 'small' },
      invoke: failing,
      callService: (call) => {
        if (call.resource === SNS_PUBLISH)
          throw Object.assign(new Error('KMS key disabled'), { name: 'SNS.KmsDisabledException' })
        return {}
      },
    })
    expect(untold).toMatchObject({ status: 'FAILED', error: 'ConfigError' })
    expect(untold.visited.slice(-3)).toEqual(['Notify', 'RecordFailure', 'Failed'])
    expect(metricsOf(untold, 'RecordFailure').map((m) => [m.MetricName, m.Value])).toEqual([
      ['LoadFailed', 1],
      ['FailuresReported', 0],
    ])
  })

  it('a failure notice names table, step, batch, error class, run record key and links to the logs, never the cause', async () => {
    const batchId = '20240101T000000.000Z-abcdef'
    const secretish = "customer_id=42 name='Ana Lima' in SELECT * FROM dim_small WHERE name = 'Ana Lima'"
    const result = await machine.run({
      input: { table: 'small', reason: 'nightly' },
      executionName: 'exec-1',
      invoke: async (name) => {
        if (roles.get(name) === 'extract')
          return { table: 'small', batchId, rows: 3, bytes: 9, complete: true }
        throw Object.assign(new Error(`mass delete refused: ${secretish}`), {
          name: 'MassDeleteRefusedError',
        })
      },
    })
    expect(result).toMatchObject({ status: 'FAILED', error: 'MassDeleteRefusedError' })
    const published = result.calls.filter((c) => c.resource === SNS_PUBLISH)
    expect(published).toHaveLength(1)
    const { Subject, Message } = published[0]!.arguments as { Subject: string; Message: string }
    expect(Subject).toBe('dimsync: small failed in Merge (MassDeleteRefusedError)')
    expect(Message).not.toContain('Ana Lima')
    expect(Message).not.toContain('SELECT')
    const execution = 'arn:aws:states:us-east-1:123456789012:execution:simulated:exec-1'
    const notice = JSON.parse(Message) as Record<string, unknown>
    expect(notice).toEqual({
      table: 'small',
      step: 'Merge',
      error: 'MassDeleteRefusedError',
      batchId,
      mode: null,
      reason: 'nightly',
      runRecord: {
        stateTable: expect.stringMatching(/^StorageState/),
        pk: 'RUNS#small',
        sk: `RUNID#run-${batchId}`,
      },
      execution,
      links: {
        execution: `https://us-east-1.console.aws.amazon.com/states/home?region=us-east-1#/v2/executions/details/${execution}`,
        logs: expect.stringMatching(
          /^https:\/\/us-east-1\.console\.aws\.amazon\.com\/cloudwatch\/home\?region=us-east-1#logsV2:log-groups\/log-group\/MergeMedium\w*Logs\w+$/,
        ),
      },
      logGroup: expect.stringMatching(/^MergeMedium\w*Logs/),
      docs: 'docs/errors.md#the-mass-delete-guard',
    })
  })

  it('the interpreter refuses what it does not simulate instead of skipping it', async () => {
    const base = machine.definition
    const variant = (patch: (d: { States: Record<string, Record<string, unknown>> }) => void) => {
      const copy = structuredClone(base) as { States: Record<string, Record<string, unknown>> }
      patch(copy)
      return JsonataStateMachine.load(copy as unknown as StateMachineDefinition)
    }
    await expect(variant((d) => (d.States.Done = { Type: 'Map', End: true }))).rejects.toThrow(
      UnsupportedDefinitionError,
    )
    await expect(variant((d) => (d.States.Extract!.TimeoutSeconds = 60))).rejects.toThrow(
      /state Extract: field TimeoutSeconds/,
    )
    await expect(variant((d) => (d.States.Merge!.Assign = { merge: '{% $uuid() %}' }))).rejects.toThrow(
      /function \$uuid is not simulated/,
    )
    await expect(
      variant(
        (d) =>
          (d.States.Merge!.Arguments = { FunctionName: '{% $functions.merge %}', Payload: '{% $batchID %}' }),
      ),
    ).rejects.toThrow(/variable \$batchID is never assigned/)
    await expect(variant((d) => (d.States.Done!.Output = '{% $states.result %}'))).rejects.toThrow(
      /\$states.result is not available/,
    )
    await expect(
      variant(
        (d) =>
          ((d.States.Extract!.Retry as { ErrorEquals: string[] }[])[0]!.ErrorEquals = ['States.TaskFailed']),
      ),
    ).rejects.toThrow(/States.TaskFailed is not simulated/)
    // No variable is named like a JSONata function the definition calls.
    expect(machine.warnings).toEqual([])
  })

  describe.skipIf(!available)('with the functions on s3rver, dynalite, PostgreSQL and DuckDB', () => {
    let env: PostgresFunctionEnv

    beforeAll(async () => {
      env = await PostgresFunctionEnv.start([
        { name: 'items', rows: 450, prefix: 'n' },
        { name: 'small', rows: 30, prefix: 's' },
      ])
    })
    afterEach(async () => {
      await env?.closeSandboxes()
    })
    afterAll(async () => {
      await env?.stop()
    })

    /** The functions' own dimsync.yaml (DuckDB warehouse, as in the function tests), same table names. */
    const sandbox = () =>
      env.sandbox([
        '  - name: items',
        `    source: { type: postgres, url_env: DB_URL, table: ${env.table('items')}, slice_rows: 100 }`,
        '    target: dim_items',
        '    key: id',
        '    tracked: [name]',
        '    deletes: invalidate',
        '  - name: small',
        `    source: { type: postgres, url_env: DB_URL, table: ${env.table('small')} }`,
        '    target: dim_small',
        '    key: id',
        '    tracked: [name]',
        // A column the source does not have: the extract refuses the table (ConfigError, never retried).
        '  - name: broken',
        `    source: { type: postgres, url_env: DB_URL, table: ${env.table('items')} }`,
        '    target: dim_broken',
        '    key: id',
        '    tracked: [name, colour]',
      ])

    /** Routes the state machine's FunctionName to the real handler (logs captured, not printed). */
    function invoker(deps: AwsDeps, extractContext: () => Context = fakeContext): LambdaInvoker {
      const extract = createExtractHandler({ deps: async () => deps })
      const merge = createMergeHandler({ deps: async () => deps })
      return async (functionName, payload) => {
        const role = roles.get(functionName)
        if (role === undefined) throw new Error(`no function ${functionName} in the stack`)
        const run =
          role === 'extract' ? () => extract(payload, extractContext()) : () => merge(payload, fakeContext())
        return (await captureStdout<unknown>(run)).result
      }
    }

    it('a console reload longer than one invocation loops Extract with batchId and resume, then merges all 450 rows', async () => {
      const { box, deps } = await sandbox()
      const result = await machine.run({
        input: { table: 'items', mode: 'full' },
        executionName: 'reload-items',
        invoke: invoker(deps, nearTheDeadline),
      })

      expect([result.status, result.error, result.cause]).toEqual(['SUCCEEDED', undefined, undefined])
      const loop = ['Extract', 'ExtractComplete', 'ContinueExtract']
      expect(result.visited).toEqual([
        'CheckInput',
        'Start',
        ...loop,
        ...loop,
        ...loop,
        ...loop,
        'Extract',
        'ExtractComplete',
        'Merge',
        'RecordSuccess',
        'Done',
      ])
      const extracts = result.invocations.filter((i) => i.state === 'Extract')
      const batchId = (extracts[0]!.result as { batchId: string }).batchId
      expect(batchId).toMatch(/^\d{8}T\d{6}\.\d{3}Z-/)
      const reason = 'started by hand: reload-items'
      expect(extracts.map((i) => i.payload)).toEqual([
        { table: 'items', reason, mode: 'full' },
        ...[1, 2, 3, 4].map((pass) => ({ table: 'items', reason, mode: 'full', batchId, resume: { pass } })),
      ])
      expect(extracts.map((i) => i.result)).toEqual([
        ...[1, 2, 3, 4].map((pass) =>
          expect.objectContaining({ batchId, rows: pass * 90, complete: false, resume: { pass } }),
        ),
        expect.objectContaining({ batchId, rows: 450, complete: true }),
      ])
      expect(extracts.every((i) => i.attempt === 1 && i.error === undefined)).toBe(true)
      expect(result.invocations.filter((i) => i.state === 'Merge').map((i) => i.payload)).toEqual([
        { table: 'items', batchId },
      ])

      expect(result.output).toEqual({
        table: 'items',
        batchId,
        rows: 450,
        merge: expect.objectContaining({
          status: 'merged',
          counts: expect.objectContaining({ insertedVersions: 450 }),
        }),
      })
      expect(metricsOf(result, 'RecordSuccess')).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ MetricName: 'LoadSucceeded', Value: 1 }),
          expect.objectContaining({ MetricName: 'RowsExtracted', Value: 450 }),
          expect.objectContaining({ MetricName: 'VersionsInserted', Value: 450 }),
          expect.objectContaining({ MetricName: 'VersionsClosed', Value: 0 }),
        ]),
      )
      expect(result.calls.filter((c) => c.resource === SNS_PUBLISH)).toEqual([])
      expect(await env.currentVersions(box, deps, 'dim_items', 'n')).toEqual([
        { versions: 450, keys: 450, lo: 1, hi: 450, wrong: 0 },
      ])
      expect(
        (await env.s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket }))).Contents ?? [],
      ).toEqual([])
    })

    it('a table read in one pass goes straight from Extract to Merge', async () => {
      const { box, deps } = await sandbox()
      const result = await machine.run({
        input: { table: 'small', reason: 'schedule' },
        invoke: invoker(deps),
      })

      expect(result).toMatchObject({ status: 'SUCCEEDED', output: { table: 'small', rows: 30 } })
      expect(result.visited).toEqual([
        'CheckInput',
        'Start',
        'Extract',
        'ExtractComplete',
        'Merge',
        'RecordSuccess',
        'Done',
      ])
      const [extract, merge] = result.invocations
      expect(extract).toMatchObject({ state: 'Extract', payload: { table: 'small', reason: 'schedule' } })
      expect(extract!.result).toMatchObject({ complete: true, rows: 30 })
      const { batchId } = extract!.result as { batchId: string }
      expect(merge).toMatchObject({ state: 'Merge', payload: { table: 'small', batchId } })
      expect(result.invocations).toHaveLength(2)
      expect(metricsOf(result, 'RecordSuccess')).toContainEqual(
        expect.objectContaining({ MetricName: 'RowsExtracted', Value: 30 }),
      )
      expect(await env.currentVersions(box, deps, 'dim_small', 's')).toEqual([
        { versions: 30, keys: 30, lo: 1, hi: 30, wrong: 0 },
      ])
    })

    it('a failing metrics call after the merge does not fail the load (RecordSuccess catches into Done)', async () => {
      const { deps } = await sandbox()
      const result = await machine.run({
        input: { table: 'small' },
        invoke: invoker(deps),
        callService: (call) => {
          if (call.resource === PUT_METRIC_DATA)
            throw Object.assign(new Error('Rate exceeded'), { name: 'CloudWatch.ThrottlingException' })
          return {}
        },
      })
      expect(result).toMatchObject({ status: 'SUCCEEDED', output: { table: 'small', rows: 30 } })
      expect(result.visited.slice(-3)).toEqual(['Merge', 'RecordSuccess', 'Done'])
    })

    it('a refused extract is not retried: Notify (table, step Extract), RecordFailure, then FAILED with its error', async () => {
      const { deps } = await sandbox()
      const result = await machine.run({ input: { table: 'broken' }, invoke: invoker(deps) })

      expect(result.status).toBe('FAILED')
      expect(result.error).toBe('ConfigError')
      expect(result.cause).toMatch(/colour/)
      expect(result.visited).toEqual(['CheckInput', 'Start', 'Extract', 'Notify', 'RecordFailure', 'Failed'])
      expect(result.invocations.map((i) => [i.state, i.attempt, i.error?.Error])).toEqual([
        ['Extract', 1, 'ConfigError'],
      ])
      expect(metricsOf(result, 'RecordFailure')).toEqual([
        expect.objectContaining({ MetricName: 'LoadFailed', Value: 1 }),
        expect.objectContaining({ MetricName: 'FailuresReported', Value: 1 }),
      ])
      const published = result.calls.filter((c) => c.resource === SNS_PUBLISH)
      expect(published).toHaveLength(1)
      const { Subject, Message } = published[0]!.arguments as { Subject: string; Message: string }
      expect(Subject).toBe('dimsync: broken failed in Extract (ConfigError)')
      const notice = JSON.parse(Message) as { batchId: string; runRecord: { pk: string; sk: string } }
      expect(notice).toMatchObject({ table: 'broken', step: 'Extract', error: 'ConfigError' })
      expect(notice).not.toHaveProperty('cause')
      expect(Message).not.toContain('colour')
      // The extract failed on its first pass: the batch and its run record come from the function's error.
      expect(notice.batchId).toMatch(/^\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{6}$/)
      expect(notice.runRecord).toMatchObject({ pk: 'RUNS#broken', sk: `RUNID#run-${notice.batchId}` })
      const runs = await deps.state.listRuns('broken', 10)
      expect(runs.map((r) => [r.runId, r.status])).toEqual([[`run-${notice.batchId}`, 'failed']])
    })

    it('a console replay merges the batch a failed merge left staged, without extracting again', async () => {
      const { box, deps } = await sandbox()
      const staged = await captureStdout(() =>
        stagingExtract({ deps: async () => deps })({ table: 'small' }, fakeContext()),
      )
      const { batchId } = staged.result
      const result = await machine.run({
        input: { table: 'small', batchId },
        invoke: invoker(deps),
        // The state machine's S3 call, answered by the sandbox's bucket on s3rver.
        callService: async (call) => {
          if (call.resource !== LIST_OBJECTS) return {}
          const { Prefix, MaxKeys } = call.arguments as { Prefix: string; MaxKeys: number }
          const listed = await env.s3.client.send(
            new ListObjectsV2Command({ Bucket: box.bucket, Prefix, MaxKeys }),
          )
          return { KeyCount: listed.KeyCount ?? 0 }
        },
      })
      expect([result.status, result.error, result.cause]).toEqual(['SUCCEEDED', undefined, undefined])
      expect(result.invocations.map((i) => [i.state, i.payload])).toEqual([
        ['Merge', { table: 'small', batchId }],
      ])
      expect(await env.currentVersions(box, deps, 'dim_small', 's')).toEqual([
        { versions: 30, keys: 30, lo: 1, hi: 30, wrong: 0 },
      ])
      // Merged and removed: replaying it again is refused, nothing invoked.
      const again = await machine.run({
        input: { table: 'small', batchId },
        invoke: notInvoked,
        callService: async (call) => {
          if (call.resource !== LIST_OBJECTS) return {}
          const { Prefix } = call.arguments as { Prefix: string }
          const listed = await env.s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket, Prefix }))
          return { KeyCount: listed.KeyCount ?? 0 }
        },
      })
      expect(again).toMatchObject({ status: 'FAILED', error: 'InvalidInput' })
    })

    describe('merging into BigQuery (the emulator, its SQL run by ZetaSQL)', () => {
      let zetaSql: ZetaSqlService
      let bigQuery: BigQueryEmulator

      beforeAll(async () => {
        process.env.METADATA_SERVER_DETECTION = 'none'
        zetaSql = await ZetaSqlService.start()
        bigQuery = await BigQueryEmulator.start({ zetaSql })
        bigQuery.createDataset('acme-dw', 'history', { location: 'EU' })
      })
      afterAll(async () => {
        await bigQuery?.stop()
        await zetaSql?.stop()
      })

      it('a run goes PostgreSQL → S3 → BigQuery through the state machine: the merge function takes the BigQuery endpoint', async () => {
        const box = await makeSandbox(env.s3, env.dynamo)
        await writeFile(
          path.join(box.dir, 'dimsync.yaml'),
          [
            'version: 1',
            'warehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }',
            'tables:',
            '  - name: small',
            `    source: { type: postgres, url_env: DB_URL, table: ${env.table('small')} }`,
            '    target: dim_small',
            '    key: id',
            '    tracked: [name]',
            '',
          ].join('\n'),
        )
        const deps = await buildAwsDeps({
          ...box.env,
          DB_URL: PG_URL,
          [AWS_ENV.warehouse]: 'bigquery',
          [AWS_ENV.bigQueryEndpoint]: bigQuery.url,
        })
        try {
          const result = await machine.run({ input: { table: 'small' }, invoke: invoker(deps) })
          expect([result.status, result.error, result.cause]).toEqual(['SUCCEEDED', undefined, undefined])
          expect(result.output).toMatchObject({
            table: 'small',
            rows: 30,
            merge: { status: 'merged', counts: expect.objectContaining({ insertedVersions: 30 }) },
          })
          const current = await bigQuery.query(
            'acme-dw',
            "SELECT COUNT(*) AS n, COUNTIF(name = CONCAT('s', CAST(id AS STRING))) AS right_names " +
              'FROM `acme-dw.history.dim_small` WHERE valid_to IS NULL',
            { location: 'EU' },
          )
          expect(current).toEqual([{ n: '30', right_names: '30' }])
        } finally {
          await deps.close()
        }
      })
    })

    /** An earlier pass that stopped before its time limit keeps the table's lease for its next pass. */
    async function holdTheTable(deps: AwsDeps) {
      const held = await captureStdout(() =>
        stagingExtract({ deps: async () => deps })({ table: 'items' }, nearTheDeadline()),
      )
      expect(held.result.complete).toBe(false)
      return held.result
    }

    it('a scheduled start that finds the table busy ends as skipped: one call, recorded and counted, no notice', async () => {
      const { deps } = await sandbox()
      await holdTheTable(deps)

      const result = await machine.run({
        input: { table: 'items', reason: 'schedule', whenBusy: 'skip' },
        executionName: 'scheduled-items',
        invoke: invoker(deps),
      })

      expect([result.status, result.error, result.cause]).toEqual(['SUCCEEDED', undefined, undefined])
      expect(result.visited).toEqual([
        'CheckInput',
        'Start',
        'Extract',
        'ExtractComplete',
        'RecordSkipped',
        'Skipped',
      ])
      expect(result.invocations.map((i) => [i.state, i.attempt, i.error])).toEqual([
        ['Extract', 1, undefined],
      ])
      expect(result.output).toEqual({
        table: 'items',
        status: 'skipped',
        heldBy: expect.stringMatching(/^run-.+\/extract$/),
        since: expect.stringMatching(/^\d{4}-/),
      })
      expect(result.calls.filter((c) => c.resource === SNS_PUBLISH)).toEqual([])
      expect(metricsOf(result, 'RecordSkipped')).toEqual([
        {
          MetricName: 'LoadSkipped',
          Dimensions: [{ Name: 'Table', Value: 'items' }],
          Value: 1,
          Unit: 'Count',
        },
      ])
      const runs = await deps.state.listRuns('items', 10)
      const skipped = runs.filter((r) => r.status === 'skipped')
      expect(skipped).toHaveLength(1)
      expect(skipped[0]!.error).toMatch(/^skipped: the table was busy \(run run-.+\/extract holds it since /)
      expect(runs.filter((r) => r.status === 'failed')).toEqual([])
    })

    it('a reload started by hand on a busy table fails at once saying so (no retries, no notice, counted as told)', async () => {
      const { deps } = await sandbox()
      await holdTheTable(deps)

      const result = await machine.run({ input: { table: 'items', mode: 'full' }, invoke: invoker(deps) })

      expect(result).toMatchObject({ status: 'FAILED', error: 'TableBusy' })
      expect(result.cause).toMatch(
        /^table items is busy, another run is loading it; start again when it ends .*table items is locked by run run-/,
      )
      expect(result.visited).toEqual(['CheckInput', 'Start', 'Extract', 'RefuseBusyTable', 'TableBusy'])
      expect(result.invocations.map((i) => [i.attempt, i.error?.Error])).toEqual([[1, 'LockHeldError']])
      expect(result.calls.map((c) => [c.state, c.resource])).toEqual([['RefuseBusyTable', PUT_METRIC_DATA]])
      expect(metricsOf(result, 'RefuseBusyTable').map((m) => [m.MetricName, m.Value])).toEqual([
        ['FailuresReported', 1],
      ])
    })

    it("the run holds the table from its extract to its merge: scheduled starts before the merge and during its retry's backoff are skipped, and the merge completes", async () => {
      const { box, deps } = await sandbox()
      const scheduled: ExecutionResult[] = []
      const scheduledStart = async () => {
        const input = { table: 'small', reason: 'schedule', whenBusy: 'skip' }
        scheduled.push(await machine.run({ input, invoke: invoker(deps) }))
      }
      // The merge's first attempt fails after taking the lease, with an error the state machine retries later.
      const busyWarehouse = invoker({
        ...deps,
        warehouse: () =>
          Promise.reject(new WarehouseBusyError('warehouse.duckdb', 'the warehouse file is open elsewhere')),
      })
      const mine = invoker(deps)
      let merges = 0
      const result = await machine.run({
        input: { table: 'small' },
        invoke: async (name, payload) => {
          if (roles.get(name) !== 'merge') return await mine(name, payload)
          // Before the first attempt the extract has ended; before the second the first failed (its backoff).
          await scheduledStart()
          return await (++merges === 1 ? busyWarehouse : mine)(name, payload)
        },
      })

      expect([result.status, result.error, result.cause]).toEqual(['SUCCEEDED', undefined, undefined])
      expect(result.visited).toEqual([
        'CheckInput',
        'Start',
        'Extract',
        'ExtractComplete',
        'Merge',
        'RecordSuccess',
        'Done',
      ])
      const { batchId } = result.output as { batchId: string }
      expect(
        result.invocations.filter((i) => i.state === 'Merge').map((i) => [i.attempt, i.error?.Error]),
      ).toEqual([
        [1, 'RetryableError'],
        [2, undefined],
      ])
      expect(result.output).toMatchObject({ merge: { status: 'merged', counts: { insertedVersions: 30 } } })
      expect(result.calls.filter((c) => c.resource === SNS_PUBLISH)).toEqual([])
      // Both scheduled starts found the table held by the run, between its steps: skipped, no notice.
      expect(scheduled.map((s) => [s.status, s.visited.at(-1), s.invocations.length])).toEqual([
        ['SUCCEEDED', 'Skipped', 1],
        ['SUCCEEDED', 'Skipped', 1],
      ])
      for (const skipped of scheduled) {
        expect(skipped.output).toMatchObject({ status: 'skipped', heldBy: `run-${batchId}` })
        expect(skipped.calls.filter((c) => c.resource === SNS_PUBLISH)).toEqual([])
      }
      const runs = await deps.state.listRuns('small', 10)
      expect(runs.map((r) => r.status).sort()).toEqual(['skipped', 'skipped', 'succeeded'])
      expect(runs.find((r) => r.status === 'succeeded')).toMatchObject({ runId: `run-${batchId}`, batchId })
      // The merge released the table: a start now takes it.
      await scheduledStart()
      expect(scheduled.at(-1)).toMatchObject({ status: 'SUCCEEDED', output: { table: 'small', rows: 30 } })
      expect(await env.currentVersions(box, deps, 'dim_small', 's')).toEqual([
        { versions: 30, keys: 30, lo: 1, hi: 30, wrong: 0 },
      ])
    })

    it('a resumed pass that finds its handed-over lease lost abandons its batch: removed, recorded, reported; the other load stands', async () => {
      const { box, deps } = await sandbox()
      // Three hours later the handed-over lease has expired: another run takes the table, loads it, releases it.
      const later = await env.depsFor(box, { clock: () => new Date(Date.now() + 3 * 3_600_000) })
      const otherRun = invoker(later)
      let extracts = 0
      let firstBatch = ''
      const mine = invoker(deps, nearTheDeadline)
      const result = await machine.run({
        input: { table: 'items', mode: 'full' },
        invoke: async (name, payload) => {
          if (roles.get(name) === 'extract' && ++extracts === 2) {
            firstBatch = (payload as { batchId: string }).batchId
            const other = await machine.run({ input: { table: 'items', mode: 'full' }, invoke: otherRun })
            expect(other.status).toBe('SUCCEEDED')
          }
          return await mine(name, payload)
        },
      })

      expect(result).toMatchObject({ status: 'FAILED', error: 'LeaseLostError' })
      expect(result.cause).toMatch(
        new RegExp(
          `^table items: batch ${firstBatch} was abandoned and removed: the lease its earlier pass handed over was lost`,
        ),
      )
      expect(result.invocations.filter((i) => i.state === 'Extract').map((i) => i.attempt)).toEqual([1, 1])
      expect(result.visited.slice(-3)).toEqual(['Notify', 'RecordFailure', 'Failed'])
      expect(await deps.staging.listUncommitted('items')).toEqual([])
      expect(await deps.staging.listBatches('items')).toEqual([])
      // The other run's load is the one in the dimension, not followed by the older batch.
      expect(await env.currentVersions(box, later, 'dim_items', 'n')).toEqual([
        { versions: 450, keys: 450, lo: 1, hi: 450, wrong: 0 },
      ])
      const runs = await later.state.listRuns('items', 10)
      expect(runs.find((r) => r.batchId === firstBatch)).toMatchObject({
        status: 'failed',
        error: expect.stringMatching(/was abandoned and removed/),
      })
    })
  })
})
