import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../lib/core/errors.ts'
import { buildApp } from '../../infra/build-app.ts'
import { bigQueryProject, deploymentYaml, FIXTURE_HANDLER, NO_BUNDLING } from './support/synth-stack.ts'

const WITH_FACTS = `${deploymentYaml()}
facts:
  - name: orders
    source: { type: postgres, url_env: SHOP_DB_URL, table: public.orders }
    grain: order_id
    event_time: ordered_at
    references: [{ dimension: customers, key: customer_id }]
  - name: refunds
    source: { type: postgres, url_env: SHOP_DB_URL, table: public.refunds }
    grain: refund_id
    event_time: refunded_at
`

async function build(context: Record<string, unknown>) {
  return buildApp({
    project: bigQueryProject(WITH_FACTS),
    appProps: {
      outdir: mkdtempSync(path.join(tmpdir(), 'dimsync-facts-')),
      context: { ...NO_BUNDLING, ...context },
    },
    handlerEntries: { extract: FIXTURE_HANDLER, merge: FIXTURE_HANDLER },
  })
}

describe('fact tables and the AWS deployment', () => {
  it('refuses at synth a config with facts, naming them and saying they run in the CLI', async () => {
    const error = await build({}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).issues).toEqual([
      'facts: fact tables orders, refunds cannot be loaded on AWS yet: the deployed functions and state machine ' +
        'extract and merge the tables only; facts are loaded by `dimsync run` (the CLI, against the same ' +
        'warehouse). Deploy the tables alone with -c facts=cli-only and run the facts with dimsync run --table ' +
        '<fact>, or remove facts: from the config you deploy',
    ])
  })

  it('deploys the tables alone with -c facts=cli-only: nothing schedules or runs a fact table', async () => {
    const { app, stack, plan } = await build({ facts: 'cli-only' })
    app.synth()
    expect(plan.tables.map((t) => t.name)).toEqual(['customers'])
    const text = JSON.stringify(Template.fromStack(stack).toJSON())
    expect(text).toContain('customers')
    expect(text).not.toMatch(/orders|refunds/)
  })
})
