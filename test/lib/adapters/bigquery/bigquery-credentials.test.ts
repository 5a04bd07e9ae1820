import { generateKeyPairSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  openBigQueryWarehouse,
  parseServiceAccountKey,
} from '../../../../lib/adapters/warehouse/bigquery-credentials.ts'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { ConfigError } from '../../../../lib/core/errors.ts'

const spec = {
  type: 'bigquery' as const,
  project: 'acme-dw',
  dataset: 'history',
  schema: 'history',
  location: 'EU',
}
const privateKey = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
  type: 'pkcs8',
  format: 'pem',
}) as string
const key = JSON.stringify({
  type: 'service_account',
  client_email: 'dimsync@acme-dw.iam.gserviceaccount.com',
  private_key: privateKey,
})

describe('BigQuery credentials from Secrets Manager', () => {
  it('reads the service-account key from the secret only when the warehouse is opened', async () => {
    const read: string[] = []
    const warehouse = await openBigQueryWarehouse(spec, {
      secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:bq',
      getSecret: async (arn) => {
        read.push(arn)
        return key
      },
    })
    expect(warehouse).toBeInstanceOf(BigQueryWarehouse)
    expect(read).toEqual(['arn:aws:secretsmanager:eu-west-1:1:secret:bq'])
  })

  it('falls back to warehouse.credentials_secret, and to Application Default Credentials without any secret', async () => {
    const read: string[] = []
    await openBigQueryWarehouse(
      { ...spec, credentialsSecret: 'dimsync/bq' },
      { getSecret: async (arn) => (read.push(arn), key) },
    )
    expect(read).toEqual(['dimsync/bq'])
    expect(await openBigQueryWarehouse(spec)).toBeInstanceOf(BigQueryWarehouse)
  })

  it('a secret that is not a service-account key is a ConfigError naming the secret, never echoing its value', () => {
    const bad = JSON.stringify({ type: 'service_account', private_key: 'SECRET-MATERIAL' })
    const error = (() => {
      try {
        parseServiceAccountKey(bad, 'dimsync/bq')
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as Error).message).toContain('dimsync/bq')
    expect((error as Error).message).toContain('missing client_email')
    expect((error as Error).message).not.toContain('SECRET-MATERIAL')
    expect(() => parseServiceAccountKey('not json SECRET', 's')).toThrow(/not JSON/)
  })
})
