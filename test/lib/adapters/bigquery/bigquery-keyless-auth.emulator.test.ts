import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  openBigQueryWarehouse,
  workloadIdentityCredentialConfig,
} from '../../../../lib/adapters/warehouse/bigquery-credentials.ts'
import { parseProject } from '../../../../lib/config/index.ts'
import { ConfigError } from '../../../../lib/core/errors.ts'
import type { BigQueryWarehouseSpec } from '../../../../lib/core/table-spec.ts'
import { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'

/**
 * Keyless auth from AWS: workload identity federation. The function's AWS credentials (the Lambda role's, from
 * the environment) sign a GetCallerIdentity request; Google's STS exchanges it for a federated token; IAM
 * Credentials exchanges that for the service account's access token, which BigQuery requests carry.
 *
 * FAKE HTTP BOUNDARY: nothing real exists here, so Google's STS (`token_url`) and IAM Credentials
 * (`service_account_impersonation_url`) are one local fake HTTP server that records what it receives and
 * answers fixed tokens; BigQuery is the emulator. No AWS endpoint is called: the AWS request is only signed.
 */
const AUDIENCE =
  '//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/aws-pool/providers/aws-dimsync'
const SERVICE_ACCOUNT = 'dimsync-loader@acme-dw.iam.gserviceaccount.com'
const FEDERATED = 'federated-token-from-fake-sts'
const ACCESS = 'service-account-token-from-fake-iam'

interface Received {
  readonly path: string
  readonly body: string
  readonly authorization?: string
}

let google: Server
let googleUrl: string
const received: Received[] = []
let emulator: BigQueryEmulator
const savedEnv: Record<string, string | undefined> = {}

const text = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ''
    req.on('data', (d: Buffer) => (body += d.toString()))
    req.on('end', () => resolve(body))
  })

beforeAll(async () => {
  google = createServer(async (req, res) => {
    const body = await text(req)
    received.push({ path: req.url ?? '', body, authorization: req.headers.authorization })
    res.setHeader('content-type', 'application/json')
    if (req.url === '/v1/token')
      res.end(
        JSON.stringify({
          access_token: FEDERATED,
          issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          token_type: 'Bearer',
          expires_in: 3600,
        }),
      )
    else if (req.url?.endsWith(':generateAccessToken'))
      res.end(
        JSON.stringify({ accessToken: ACCESS, expireTime: new Date(Date.now() + 3_600_000).toISOString() }),
      )
    else {
      res.statusCode = 404
      res.end('{}')
    }
  })
  await new Promise<void>((resolve) => google.listen(0, '127.0.0.1', resolve))
  googleUrl = `http://127.0.0.1:${(google.address() as AddressInfo).port}`
  emulator = await BigQueryEmulator.start()
  emulator.createDataset('acme-dw', 'history', { location: 'EU' })
  // What Lambda puts in every function's environment: the role's temporary credentials and the region.
  const env = {
    AWS_ACCESS_KEY_ID: 'ASIAFAKEFORTESTS0001',
    AWS_SECRET_ACCESS_KEY: 'fake-secret-access-key-for-tests',
    AWS_SESSION_TOKEN: 'fake-session-token',
    AWS_REGION: 'eu-west-1',
  }
  for (const [name, value] of Object.entries(env)) {
    savedEnv[name] = process.env[name]
    process.env[name] = value
  }
})
afterAll(async () => {
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  await emulator?.stop()
  await new Promise((resolve) => google?.close(resolve))
})

const spec: BigQueryWarehouseSpec = {
  type: 'bigquery',
  project: 'acme-dw',
  dataset: 'history',
  schema: 'history',
  location: 'EU',
  workloadIdentity: { audience: AUDIENCE, serviceAccount: SERVICE_ACCOUNT },
}

describe('BigQuery with workload identity federation from AWS (no service-account key)', () => {
  it('config: warehouse.workload_identity { audience, service_account } is read, and checked', () => {
    const yaml = (wi: string) =>
      `version: 1\nwarehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU, workload_identity: ${wi} }\ntables:\n  - { name: t, source: { type: file, path: t.csv }, key: id }\n`
    const project = parseProject(
      yaml(`{ audience: "${AUDIENCE}", service_account: ${SERVICE_ACCOUNT} }`),
      '/p/dimsync.yaml',
    )
    expect(project.warehouse).toMatchObject({ workloadIdentity: spec.workloadIdentity })
    expect(() => parseProject(yaml('{ audience: aws-pool }'), '/p/dimsync.yaml')).toThrow(ConfigError)
  })

  it('the credential configuration is the one gcloud writes for an AWS provider', () => {
    expect(workloadIdentityCredentialConfig(spec.workloadIdentity!)).toEqual({
      type: 'external_account',
      audience: AUDIENCE,
      subject_token_type: 'urn:ietf:params:aws:token-type:aws4_request',
      token_url: 'https://sts.googleapis.com/v1/token',
      service_account_impersonation_url: `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/${SERVICE_ACCOUNT}:generateAccessToken`,
      credential_source: {
        environment_id: 'aws1',
        region_url: 'http://169.254.169.254/latest/meta-data/placement/availability-zone',
        url: 'http://169.254.169.254/latest/meta-data/iam/security-credentials',
        regional_cred_verification_url:
          'https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15',
      },
    })
  })

  it('takes the external_account path: signed AWS request to STS, impersonation, then BigQuery with that token', async () => {
    received.length = 0
    const warehouse = await openBigQueryWarehouse(spec, {
      // The test seam: Google's endpoints replaced by the fake above (and BigQuery's by the emulator).
      google: {
        tokenUrl: `${googleUrl}/v1/token`,
        impersonationUrl: `${googleUrl}/v1/projects/-/serviceAccounts/${SERVICE_ACCOUNT}:generateAccessToken`,
        apiEndpoint: emulator.url,
      },
      getSecret: async () => {
        throw new Error('no secret is read with workload identity')
      },
    })
    try {
      expect(await warehouse.query('SELECT 1 AS one')).toEqual([{ one: 1 }])
    } finally {
      await warehouse.close()
    }

    const sts = received.find((r) => r.path === '/v1/token')!
    const form = new URLSearchParams(sts.body)
    expect(form.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:token-exchange')
    expect(form.get('audience')).toBe(AUDIENCE)
    expect(form.get('subject_token_type')).toBe('urn:ietf:params:aws:token-type:aws4_request')
    // The subject token is the GetCallerIdentity request signed with the function's AWS credentials.
    const subject = JSON.parse(decodeURIComponent(form.get('subject_token')!)) as {
      url: string
      headers: { key: string; value: string }[]
    }
    expect(subject.url).toBe(
      'https://sts.eu-west-1.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15',
    )
    const header = (key: string) => subject.headers.find((h) => h.key.toLowerCase() === key)?.value
    expect(header('authorization')).toMatch(/^AWS4-HMAC-SHA256 Credential=ASIAFAKEFORTESTS0001\//)
    expect(header('x-amz-security-token')).toBe('fake-session-token')
    expect(header('x-goog-cloud-target-resource')).toBe(AUDIENCE)

    const iam = received.find((r) => r.path.endsWith(':generateAccessToken'))!
    expect(iam.authorization).toBe(`Bearer ${FEDERATED}`)
    const calls = emulator.requests.filter((r) => r.path.startsWith('/bigquery/v2/'))
    expect(calls.length).toBeGreaterThan(0)
    for (const call of calls) expect(call.authorization).toBe(`Bearer ${ACCESS}`)
  })

  it('a service-account key in Secrets Manager stays supported, and is refused together with workload_identity', async () => {
    await expect(
      openBigQueryWarehouse({ ...spec, credentialsSecret: 'dimsync/bq' }, { getSecret: async () => '{}' }),
    ).rejects.toThrow(/either credentials_secret \(a service-account key\) or workload_identity/)
  })
})
