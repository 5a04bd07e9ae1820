/**
 * A stand-in for the Secrets Manager HTTP API (JSON 1.1 protocol, `X-Amz-Target: secretsmanager.GetSecretValue`)
 * that finds a secret from a `SecretId` the way AWS documents it (GetSecretValue, "Finding a secret from a
 * partial ARN"):
 *
 * - a name is matched exactly against the secrets' names;
 * - an ARN whose last part ends with a hyphen and six characters is taken as a complete ARN and matched exactly,
 *   even when it was meant as a partial one (a secret named `prod/db-reader` looked up by
 *   `arn:...:secret:prod/db-reader`): ResourceNotFoundException;
 * - any other ARN is a partial ARN: it matches the secret whose ARN is it plus `-` and six characters.
 *
 * No Secrets Manager emulator is installable here; the real SDK client talks to this server over HTTP.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface StoredSecret {
  readonly name: string
  readonly value: string
}

export interface SecretsManagerStandIn {
  readonly endpoint: string
  readonly region: string
  readonly account: string
  /** The complete ARN of each stored secret, by name (with the random suffix AWS appends). */
  readonly arns: Readonly<Record<string, string>>
  /** Every SecretId asked for, in order. */
  readonly asked: readonly string[]
  stop(): Promise<void>
}

const COMPLETE_ARN_SUFFIX = /-[A-Za-z0-9]{6}$/
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

function randomSuffix(): string {
  return [...randomBytes(6)].map((b) => ALPHANUMERIC[b % ALPHANUMERIC.length]).join('')
}

export async function startSecretsManagerStandIn(
  secrets: readonly StoredSecret[],
  options: { region?: string; account?: string } = {},
): Promise<SecretsManagerStandIn> {
  const region = options.region ?? 'eu-west-1'
  const account = options.account ?? '123456789012'
  const arns = Object.fromEntries(
    secrets.map((s) => [
      s.name,
      `arn:aws:secretsmanager:${region}:${account}:secret:${s.name}-${randomSuffix()}`,
    ]),
  )
  const asked: string[] = []
  const find = (id: string): StoredSecret | undefined => {
    if (!id.startsWith('arn:')) return secrets.find((s) => s.name === id)
    if (COMPLETE_ARN_SUFFIX.test(id)) return secrets.find((s) => arns[s.name] === id)
    const candidates = secrets.filter((s) => {
      const arn = arns[s.name]!
      return arn.startsWith(`${id}-`) && arn.length === id.length + 7
    })
    return candidates.length === 1 ? candidates[0] : undefined
  }
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const reply = (status: number, body: object) => {
        response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' })
        response.end(JSON.stringify(body))
      }
      if (request.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue')
        return reply(400, { __type: 'InvalidRequestException', message: 'only GetSecretValue is served' })
      const { SecretId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { SecretId: string }
      asked.push(SecretId)
      const secret = find(SecretId)
      if (secret === undefined)
        return reply(400, {
          __type: 'ResourceNotFoundException',
          message: "Secrets Manager can't find the specified secret.",
        })
      reply(200, {
        ARN: arns[secret.name],
        Name: secret.name,
        SecretString: secret.value,
        VersionId: '00000000-0000-0000-0000-000000000001',
        VersionStages: ['AWSCURRENT'],
        CreatedDate: 1_700_000_000,
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    region,
    account,
    arns,
    asked,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
