/**
 * Synthesizes the dimsync stack for a dimsync.yaml the way `cdk synth` does (cdk-nag registered, so an
 * unacknowledged finding fails the synth), with bundling skipped and a stand-in handler.
 */
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Template } from 'aws-cdk-lib/assertions'
import { parseProject } from '../../../lib/config/index.ts'
import type { ProjectSpec } from '../../../lib/core/table-spec.ts'
import { buildApp, type BuiltApp } from '../../../infra/build-app.ts'

export const FIXTURE_HANDLER = path.join(import.meta.dirname, '..', 'fixtures', 'handler.ts')
export const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] }

/** The BigQuery warehouse section belongs to another change; until it lands, tests set the type directly. */
export function bigQueryProject(yaml: string, file = '/deploy/dimsync.yaml'): ProjectSpec {
  const project = parseProject(yaml, file)
  return { ...project, warehouse: { type: 'bigquery' } as unknown as ProjectSpec['warehouse'] }
}

export interface DeploymentYamlOptions {
  /** More entries of `tables:` (YAML lines indented by 2). */
  readonly tables?: string
  /** url_env → secret; default SHOP_DB_URL: dimsync/shop-db. */
  readonly secrets?: Readonly<Record<string, string>>
  readonly bigQuerySecret?: string
  /** More lines of the `aws:` section (indented by 2). */
  readonly aws?: string
}

/** A dimsync.yaml deploying table customers (PostgreSQL, hourly), and what the options add. */
export function deploymentYaml(options: DeploymentYamlOptions = {}): string {
  const secrets = options.secrets ?? { SHOP_DB_URL: 'dimsync/shop-db' }
  return [
    'version: 1',
    'tables:',
    '  - name: customers',
    '    source: { type: postgres, url_env: SHOP_DB_URL, table: public.customers }',
    '    key: customer_id',
    '    schedule: rate(1 hour)',
    ...(options.tables !== undefined ? [options.tables] : []),
    'aws:',
    '  secrets:',
    ...Object.entries(secrets).map(([name, secret]) => `    ${name}: '${secret}'`),
    `  bigquery_secret: '${options.bigQuerySecret ?? 'dimsync/bigquery'}'`,
    ...(options.aws !== undefined ? [options.aws] : []),
    '',
  ].join('\n')
}

export interface SynthesizedStack extends BuiltApp {
  readonly template: Template
  /** cdk-nag findings left after acknowledgements (empty: the synth would have thrown otherwise). */
  readonly violations: readonly unknown[]
}

/** Builds the app and synthesizes it; `prepare` may add to the stack before synth (a test's extra resource). */
export async function synthStack(
  yaml: string,
  prepare?: (built: BuiltApp) => void,
): Promise<SynthesizedStack> {
  const outdir = mkdtempSync(path.join(tmpdir(), 'dimsync-cdk-'))
  const built = await buildApp({
    project: bigQueryProject(yaml),
    appProps: { outdir, context: NO_BUNDLING },
    handlerEntries: { extract: FIXTURE_HANDLER, merge: FIXTURE_HANDLER },
  })
  prepare?.(built)
  built.app.synth()
  const report = JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8')) as {
    pluginReports: { violations: unknown[] }[]
  }
  return {
    ...built,
    template: Template.fromStack(built.stack),
    violations: report.pluginReports.flatMap((r) => r.violations),
  }
}

export type Statement = {
  Action: string | string[]
  Resource: unknown
  Condition?: unknown
  Effect?: string
  Principal?: unknown
}

/** The statements of every IAM policy attached to the role whose logical id starts with `rolePrefix`. */
export function statementsOf(template: Template, rolePrefix: string): Statement[] {
  type Policy = { Properties: { Roles: { Ref?: string }[]; PolicyDocument: { Statement: Statement[] } } }
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as Policy[]
  return policies
    .filter((p) => p.Properties.Roles.some((r) => r.Ref?.startsWith(rolePrefix)))
    .flatMap((p) => p.Properties.PolicyDocument.Statement)
}

/** Actions of a statement as a list. */
export function actionsOf(statement: Statement): string[] {
  return typeof statement.Action === 'string' ? [statement.Action] : statement.Action
}

export type FunctionResource = {
  Properties: { Environment?: { Variables: Record<string, unknown> } } & Record<string, unknown>
  DependsOn?: string[]
}

/**
 * The loader's extract and merge functions (they have the state table in their environment), by logical id:
 * not the stack's housekeeping function (infra/constructs/version-pruning.ts).
 */
export function loaderFunctionsOf(template: {
  findResources(type: string): Record<string, unknown>
}): Record<string, FunctionResource> {
  return Object.fromEntries(
    Object.entries(
      template.findResources('AWS::Lambda::Function') as Record<string, FunctionResource>,
    ).filter(([, f]) => f.Properties.Environment?.Variables.DIMSYNC_STATE_TABLE !== undefined),
  )
}
