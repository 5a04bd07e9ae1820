import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { Tracer } from '@aws-lambda-powertools/tracer'
import { afterEach, describe, expect, it } from 'vitest'

import { tracedAwsDeps } from '../../../functions/shared/container.ts'
import { AWS_ENV } from '../../../lib/runtime/aws-env.ts'

const XRAY_MIDDLEWARE = 'XRaySDKInstrumentation'

async function containerEnv(): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'dimsync-trace-'))
  const config = join(dir, 'dimsync.yaml')
  await writeFile(
    config,
    'version: 1\nwarehouse: { type: duckdb, path: w.duckdb }\ntables:\n' +
      '  - name: items\n    source: { type: file, path: items.csv }\n    key: id\n',
  )
  return {
    [AWS_ENV.configPath]: config,
    [AWS_ENV.stagingBucket]: 'bucket',
    [AWS_ENV.stateTable]: 'state',
    [AWS_ENV.warehouse]: 'duckdb',
    [AWS_ENV.duckdbPath]: join(dir, 'w.duckdb'),
    AWS_REGION: 'eu-west-1',
  }
}

const middlewareOf = (client: { middlewareStack: { identify(): string[] } }) =>
  client.middlewareStack.identify().join('\n')

describe('the functions trace their AWS SDK calls (Powertools Tracer)', () => {
  const executionEnv = process.env.AWS_EXECUTION_ENV
  afterEach(() => {
    if (executionEnv === undefined) delete process.env.AWS_EXECUTION_ENV
    else process.env.AWS_EXECUTION_ENV = executionEnv
  })

  it('in Lambda, every client of the container (S3, DynamoDB) records its calls as X-Ray subsegments', async () => {
    process.env.AWS_EXECUTION_ENV = 'AWS_Lambda_nodejs22.x'
    const tracer = new Tracer({ serviceName: 'dimsync-test' })
    expect(tracer.isTracingEnabled()).toBe(true)
    const deps = await tracedAwsDeps(await containerEnv(), tracer)
    try {
      expect(deps.awsClients.map((c) => c.constructor.name)).toEqual(['S3Client', 'DynamoDBClient'])
      for (const client of deps.awsClients) expect(middlewareOf(client)).toContain(XRAY_MIDDLEWARE)
    } finally {
      await deps.close()
    }
  })

  it('outside Lambda (tests, the CLI) the clients are left as they are', async () => {
    delete process.env.AWS_EXECUTION_ENV
    const deps = await tracedAwsDeps(await containerEnv(), new Tracer({ serviceName: 'dimsync-test' }))
    try {
      expect(deps.awsClients).toHaveLength(2)
      for (const client of deps.awsClients) expect(middlewareOf(client)).not.toContain(XRAY_MIDDLEWARE)
    } finally {
      await deps.close()
    }
  })
})
