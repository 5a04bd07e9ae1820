import { describe, expect, it } from 'vitest'

import {
  isSecretArn,
  isSecretReference,
  resolveSourceSecrets,
  secretIdOf,
} from '../../../../lib/adapters/aws/source-secrets.ts'
import type { ProjectSpec } from '../../../../lib/core/table-spec.ts'

const project = {
  tables: [
    { name: 'a', source: { type: 'postgres', urlEnv: 'CN_URL' } },
    { name: 'b', source: { type: 'postgres', urlEnv: 'GOV_URL' } },
    { name: 'c', source: { type: 'mysql', urlEnv: 'PLAIN_URL' } },
  ],
} as unknown as ProjectSpec

describe('secret ARNs in every partition', () => {
  it('resolves aws-cn and aws-us-gov secret ARNs instead of taking them for URLs', async () => {
    const cn = 'arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:pg-AbCdEf'
    const gov = 'arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:pg-AbCdEf'
    const asked: string[] = []
    const env = await resolveSourceSecrets(
      project,
      { CN_URL: cn, GOV_URL: gov, PLAIN_URL: 'mysql://u@h/db' },
      async (arn) => {
        asked.push(arn)
        return `postgres://app@${arn.split(':')[1]}/shop`
      },
    )
    expect(asked).toEqual([cn, gov])
    expect(env).toMatchObject({
      CN_URL: 'postgres://app@aws-cn/shop',
      GOV_URL: 'postgres://app@aws-us-gov/shop',
      PLAIN_URL: 'mysql://u@h/db',
    })
  })

  it('knows a secret ARN from a URL or an ARN of another service', () => {
    for (const partition of ['aws', 'aws-cn', 'aws-us-gov', 'aws-iso', 'aws-iso-b', 'aws-iso-e', 'aws-eusc'])
      expect(isSecretArn(`arn:${partition}:secretsmanager:r-1:123456789012:secret:x`)).toBe(true)
    expect(isSecretArn('postgres://arn:aws:secretsmanager@host/db')).toBe(false)
    expect(isSecretArn('arn:aws:ssm:eu-west-1:123456789012:parameter/db')).toBe(false)
    expect(isSecretArn('arn:awsx:secretsmanager:eu-west-1:123456789012:secret:x')).toBe(false)
  })

  it('takes secretsmanager:<name> for a secret named in the same account, and asks for it by its name', () => {
    expect(isSecretReference('secretsmanager:prod/db-reader')).toBe(true)
    expect(secretIdOf('secretsmanager:prod/db-reader')).toBe('prod/db-reader')
    const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-reader-AbCdEf'
    expect(isSecretReference(arn)).toBe(true)
    expect(secretIdOf(arn)).toBe(arn)
    expect(isSecretReference('secretsmanager:')).toBe(false)
    expect(isSecretReference('postgres://u@h/db')).toBe(false)
  })
})
