/**
 * Fact tables on AWS: the deployed functions and state machine extract and merge dimensions only; fact tables
 * (`facts:` in dimsync.yaml) are loaded by `dimsync run` (docs/facts.md). Deploying a config that has facts is
 * refused at synth, naming them, unless the deployer says the facts stay with the CLI (`-c facts=cli-only`):
 * a deployment that silently left them unloaded would look like a loader that loads them.
 */
import { ConfigError } from '../lib/core/errors.ts'
import type { ProjectSpec } from '../lib/core/table-spec.ts'

/** The CDK context key and value that deploy the tables of a config with facts, the facts staying with the CLI. */
export const FACTS_CONTEXT = Object.freeze({ key: 'facts', cliOnly: 'cli-only' })

/** Throws ConfigError naming the fact tables when the project has some and `cliOnly` was not given. */
export function refuseFactsOnAws(project: ProjectSpec, contextValue: unknown): void {
  const facts = project.facts ?? []
  if (facts.length === 0 || contextValue === FACTS_CONTEXT.cliOnly) return
  const names = facts.map((f) => f.name).join(', ')
  throw new ConfigError(project.configPath, [
    `facts: fact table${facts.length === 1 ? '' : 's'} ${names} cannot be loaded on AWS yet: the deployed ` +
      'functions and state machine extract and merge the tables only; facts are loaded by `dimsync run` (the CLI, ' +
      `against the same warehouse). Deploy the tables alone with -c ${FACTS_CONTEXT.key}=${FACTS_CONTEXT.cliOnly} and ` +
      `run the facts with dimsync run --table <fact>, or remove facts: from the config you deploy`,
  ])
}
