/**
 * The state machine a dimsync.yaml deploys, ready for the JSONata interpreter: the stack is synthesized (bundling
 * skipped, a stand-in handler) and each published function version is mapped to its role, so that an invoker can
 * route `FunctionName` to the real extract or merge handler.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { CfnElement } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { buildApp } from '../../../infra/build-app.ts'
import {
  JsonataStateMachine,
  definitionFromTemplate,
  lambdaVersionArnOf,
} from '../../support/step-functions/jsonata-state-machine.ts'
import { FIXTURE_HANDLER, NO_BUNDLING, bigQueryProject } from './synth-stack.ts'

export type FunctionRole = 'extract' | 'merge'

export interface DeployedMachine {
  readonly machine: JsonataStateMachine
  /** Version ARN (as the definition names it) → the function's role. */
  readonly roles: ReadonlyMap<string, FunctionRole>
}

export async function deployedMachine(yaml: string): Promise<DeployedMachine> {
  const { app, stack } = await buildApp({
    project: bigQueryProject(yaml),
    appProps: { outdir: mkdtempSync(path.join(tmpdir(), 'dimsync-cdk-')), context: NO_BUNDLING },
    handlerEntries: { extract: FIXTURE_HANDLER, merge: FIXTURE_HANDLER },
  })
  app.synth()
  const template = Template.fromStack(stack).toJSON() as Parameters<typeof definitionFromTemplate>[0]
  const roles = new Map<string, FunctionRole>()
  for (const pair of Object.values(stack.functions)) {
    for (const role of ['extract', 'merge'] as const) {
      const id = stack.getLogicalId(pair[role].function.node.defaultChild as CfnElement)
      // The version's logical id gets its code hash only in the template.
      const versionId = Object.entries(template.Resources).find(
        ([, r]) =>
          r.Type === 'AWS::Lambda::Version' && (r.Properties?.FunctionName as { Ref?: string }).Ref === id,
      )![0]
      roles.set(lambdaVersionArnOf(id, versionId), role)
    }
  }
  return { machine: await JsonataStateMachine.load(definitionFromTemplate(template)), roles }
}
