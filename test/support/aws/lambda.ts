import { randomUUID } from 'node:crypto'
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import type { Context } from 'aws-lambda'

import type { StagedExtractOutput } from '../../../functions/shared/events.ts'
import { createExtractHandler, type HandlerOptions } from '../../../functions/shared/handlers.ts'
import { AWS_ENV } from '../../../lib/runtime/aws-env.ts'
import type { DynaliteHandle } from './dynalite.ts'
import type { S3rverHandle } from './s3rver.ts'
import { S3RVER_CREDENTIALS } from './s3rver.ts'

/** A fake Lambda context, as the Lambda runtime passes it (the handlers only read the request id and names). */
export function fakeContext(functionName = 'dimsync-test'): Context {
  const deadline = Date.now() + 900_000
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: '2024/01/01/[$LATEST]test',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  }
}

/**
 * A Lambda context 30 s from its deadline, less than the extract's reserve: an extract pass reads one round of
 * key ranges and stops, as a pass near the 15-minute limit would (middy itself gives up at the deadline, so the
 * deadline must lie ahead).
 */
export function nearTheDeadline(functionName = 'dimsync-test'): Context {
  const deadline = Date.now() + 30_000
  return { ...fakeContext(functionName), getRemainingTimeInMillis: () => deadline - Date.now() }
}

/**
 * Makes the SDK's default credential chain pick the only credentials s3rver accepts (dynalite accepts any),
 * as the Lambda runtime's environment would provide real ones.
 */
export function useEmulatorCredentials(): void {
  process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId
  process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey
  process.env.AWS_REGION = 'us-east-1'
  delete process.env.AWS_PROFILE
  delete process.env.AWS_SESSION_TOKEN
}

export interface FunctionSandbox {
  readonly dir: string
  readonly bucket: string
  readonly stateTable: string
  readonly duckdbPath: string
  /** The environment the CDK stack would give the functions, pointed at the emulators. */
  readonly env: Record<string, string>
  /** Overwrites the `customers` source CSV. */
  writeCustomers(rows: readonly string[]): Promise<void>
}

/**
 * A fresh project for function tests: a dimsync.yaml with a `customers` table read from a CSV file, a new
 * bucket and state table on the emulators, and a DuckDB file as the warehouse.
 */
export async function makeSandbox(s3: S3rverHandle, dynamo: DynaliteHandle): Promise<FunctionSandbox> {
  const dir = await mkdtemp(join(tmpdir(), 'dimsync-fn-'))
  await mkdir(join(dir, 'data'))
  const config = [
    'version: 1',
    'warehouse: { type: duckdb, path: unused.duckdb }',
    'tables:',
    '  - name: customers',
    '    source: { type: file, path: data/customers.csv }',
    '    target: dim_customer',
    '    key: customer_id',
    '    tracked: [name, region]',
    '    deletes: invalidate',
    '',
  ].join('\n')
  await writeFile(join(dir, 'dimsync.yaml'), config)
  const bucket = await s3.createBucket('fn')
  const stateTable = await dynamo.createTable('fn-state')
  const duckdbPath = join(dir, 'warehouse.duckdb')
  const writeCustomers = (rows: readonly string[]) =>
    writeFile(join(dir, 'data', 'customers.csv'), ['customer_id,name,region', ...rows, ''].join('\n'))
  await writeCustomers(['1,Ada,north', '2,Bob,south', '3,Cy,east'])
  return {
    dir,
    bucket,
    stateTable,
    duckdbPath,
    writeCustomers,
    env: {
      [AWS_ENV.configPath]: join(dir, 'dimsync.yaml'),
      [AWS_ENV.stagingBucket]: bucket,
      [AWS_ENV.stagingPrefix]: 'staging',
      [AWS_ENV.stateTable]: stateTable,
      [AWS_ENV.warehouse]: 'duckdb',
      [AWS_ENV.duckdbPath]: duckdbPath,
      [AWS_ENV.s3Endpoint]: s3.endpoint,
      [AWS_ENV.dynamoDbEndpoint]: dynamo.endpoint,
      [AWS_ENV.scratchDir]: dir,
    },
  }
}

/**
 * Collects what is written to stdout and stderr while `work` runs (Powertools writes JSON log lines and EMF
 * there; warnings and errors go to stderr). Both reach CloudWatch in Lambda.
 */
export async function captureStdout<T>(work: () => Promise<T>): Promise<{ result: T; lines: unknown[] }> {
  const chunks: string[] = []
  const originals = [process.stdout.write, process.stderr.write] as const
  const collect = ((chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString())
    return true
  }) as typeof process.stdout.write
  process.stdout.write = collect
  process.stderr.write = collect
  try {
    const result = await work()
    return { result, lines: parseLines(chunks.join('')) }
  } catch (error) {
    ;(error as { lines?: unknown[] }).lines = parseLines(chunks.join(''))
    throw error
  } finally {
    process.stdout.write = originals[0]
    process.stderr.write = originals[1]
  }
}

function parseLines(text: string): unknown[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{') && line.endsWith('}'))
    .map((line) => JSON.parse(line) as unknown)
}

/**
 * The extract function for tests of passes that stage a batch: the same handler, its output narrowed to a
 * staged pass (a skipped start fails the test, naming who held the table).
 */
export function stagingExtract(options: HandlerOptions) {
  const handler = createExtractHandler(options)
  return async (event: unknown, context: Context): Promise<StagedExtractOutput> => {
    const output = await handler(event, context)
    if ('skipped' in output) throw new Error(`the extract was skipped: ${JSON.stringify(output)}`)
    return output
  }
}
