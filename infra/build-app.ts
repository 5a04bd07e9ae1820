/**
 * Builds the CDK app for a dimsync.yaml: the same loadProject as the CLI (so a bad file fails with the same
 * message), the AWS-only rules of planDeployment, then the stack with cdk-nag's AwsSolutions checks registered.
 */
import { App, type AppProps, DefaultStackSynthesizer, Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import { DEFAULT_CONFIG_FILE, loadProject } from '../lib/config/index.ts'
import type { ProjectSpec } from '../lib/core/table-spec.ts'
import { planDeployment, type DeploymentPlan } from './deploy-plan.ts'
import { FACTS_CONTEXT, refuseFactsOnAws } from './facts-on-aws.ts'
import { DimsyncStack, type DimsyncStackProps } from './stacks/dimsync-stack.ts'

export interface BuildAppOptions {
  /** dimsync.yaml to deploy; default the `config` context value (`-c config=...`), then dimsync.yaml. */
  readonly configPath?: string
  readonly appProps?: AppProps
  readonly handlerEntries?: DimsyncStackProps['handlerEntries']
  /** An already resolved project (tests); configPath is then not read. */
  readonly project?: ProjectSpec
}

export interface BuiltApp {
  readonly app: App
  readonly stack: DimsyncStack
  readonly plan: DeploymentPlan
}

/** Throws ConfigError for an invalid dimsync.yaml or one that cannot run on AWS. */
export async function buildApp(options: BuildAppOptions): Promise<BuiltApp> {
  const app = new App(options.appProps)
  const configPath = options.configPath ?? String(app.node.tryGetContext('config') ?? DEFAULT_CONFIG_FILE)
  const project = options.project ?? (await loadProject(configPath))
  refuseFactsOnAws(project, app.node.tryGetContext(FACTS_CONTEXT.key))
  const plan = planDeployment(project)
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app))
  const stack = new DimsyncStack(app, plan.stackName, {
    project,
    description: `dimsync loader for ${plan.tables.map((t) => t.name).join(', ')} (${project.configPath})`,
    ...(plan.bootstrapQualifier !== undefined
      ? { synthesizer: new DefaultStackSynthesizer({ qualifier: plan.bootstrapQualifier }) }
      : {}),
    ...(options.handlerEntries !== undefined ? { handlerEntries: options.handlerEntries } : {}),
  })
  return { app, stack, plan }
}
