import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { makeSecretsManagerClient } from '../../lib/adapters/aws/aws-clients.ts'
import { resolveSourceSecrets, secretsManagerGetter } from '../../lib/adapters/aws/source-secrets.ts'
import { parseProject } from '../../lib/config/index.ts'
import { AWS_ENV } from '../../lib/runtime/aws-env.ts'
import {
  startSecretsManagerStandIn,
  type SecretsManagerStandIn,
} from '../support/aws/secrets-manager-stand-in.ts'
import { deploymentYaml, synthStack } from './support/synth-stack.ts'

/**
 * The secrets as dimsync.yaml names them reach the functions' environment in a form Secrets Manager finds: the
 * template's environment values (pseudo parameters resolved as CloudFormation would) are read by the functions'
 * own code, through the SDK client, from a stand-in that finds secrets as AWS documents it.
 */
const REGION = 'eu-west-1'
const ACCOUNT = '123456789012'

type Json = unknown

/** A template value as CloudFormation resolves it in REGION/ACCOUNT (Ref of pseudo parameters, Fn::Join). */
function resolve(value: Json): string {
  if (typeof value === 'string') return value
  const token = value as { Ref?: string; 'Fn::Join'?: [string, Json[]] }
  if (token.Ref === 'AWS::Partition') return 'aws'
  if (token.Ref === 'AWS::Region') return REGION
  if (token.Ref === 'AWS::AccountId') return ACCOUNT
  if (token['Fn::Join'] !== undefined) return token['Fn::Join'][1].map(resolve).join(token['Fn::Join'][0])
  // The stack's own resources (bucket, table): a stand-in name; only the secrets are looked up here.
  if (token.Ref !== undefined) return `<${token.Ref}>`
  throw new Error(`cannot resolve ${JSON.stringify(value)}`)
}

type FunctionResource = { Properties: { Environment: { Variables: Record<string, Json> } } }

describe('secrets named in dimsync.yaml, as the deployed functions look them up', () => {
  let secretsManager: SecretsManagerStandIn

  beforeAll(async () => {
    secretsManager = await startSecretsManagerStandIn(
      [
        // Names ending in a hyphen and six characters: AWS takes `arn:...:secret:<name>` for a complete ARN.
        { name: 'prod/db-reader', value: 'postgres://reader@db.internal/shop' },
        { name: 'prod/bq-signer', value: '{"type": "service_account", "project_id": "p"}' },
        { name: 'dimsync/orders', value: 'mysql://app@orders.internal/orders' },
        { name: 'plain', value: 'postgres://plain@db.internal/plain' },
      ],
      { region: REGION, account: ACCOUNT },
    )
  })
  afterAll(async () => {
    await secretsManager?.stop()
  })

  it('finds a source secret and the BigQuery secret by a name ending in -xxxxxx, by a plain name and by a complete ARN', async () => {
    const yaml = deploymentYaml({
      secrets: {
        SHOP_DB_URL: 'prod/db-reader',
        ORDERS_DB_URL: secretsManager.arns['dimsync/orders']!,
        PLAIN_DB_URL: 'plain',
      },
      bigQuerySecret: 'prod/bq-signer',
      tables: [
        '  - name: orders',
        '    source: { type: mysql, url_env: ORDERS_DB_URL, table: orders }',
        '    key: order_id',
        '  - name: plain',
        '    source: { type: postgres, url_env: PLAIN_DB_URL, table: public.plain }',
        '    key: id',
      ].join('\n'),
    })
    const { template, violations } = await synthStack(yaml)
    expect(violations).toEqual([])
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as FunctionResource[]
    const envOf = (variable: string) => {
      const fn = functions.find((f) => f.Properties.Environment.Variables[variable] !== undefined)
      expect(fn, `a function with ${variable}`).toBeDefined()
      return Object.fromEntries(
        Object.entries(fn!.Properties.Environment.Variables).map(([k, v]) => [k, resolve(v)]),
      )
    }

    const client = makeSecretsManagerClient({
      endpoint: secretsManager.endpoint,
      region: REGION,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    })
    try {
      const getSecret = secretsManagerGetter(client)
      const project = parseProject(yaml, '/deploy/dimsync.yaml')
      const extractEnv = envOf('SHOP_DB_URL')
      const resolved = await resolveSourceSecrets(project, extractEnv, getSecret)
      expect(resolved).toMatchObject({
        SHOP_DB_URL: 'postgres://reader@db.internal/shop',
        ORDERS_DB_URL: 'mysql://app@orders.internal/orders',
        PLAIN_DB_URL: 'postgres://plain@db.internal/plain',
      })
      const mergeEnv = envOf(AWS_ENV.bigQuerySecretArn)
      expect(await getSecret(mergeEnv[AWS_ENV.bigQuerySecretArn]!)).toContain('service_account')
    } finally {
      client.destroy()
    }
  })
})
