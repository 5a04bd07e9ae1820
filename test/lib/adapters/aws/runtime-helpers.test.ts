import { describe, expect, it } from 'vitest'

import { resolveSourceSecrets, secretToUrl } from '../../../../lib/adapters/aws/source-secrets.ts'
import { canonicalJson, compareWatermarks } from '../../../../lib/core/watermark.ts'
import { ConfigError } from '../../../../lib/core/errors.ts'
import type { ProjectSpec } from '../../../../lib/core/table-spec.ts'
import { readAwsSettings } from '../../../../lib/runtime/aws-deps.ts'

describe('readAwsSettings (environment contract)', () => {
  const base = { DIMSYNC_STAGING_BUCKET: 'b', DIMSYNC_STATE_TABLE: 't' }

  it('applies defaults and converts units', () => {
    expect(readAwsSettings(base)).toMatchObject({
      configPath: 'dimsync.yaml',
      stagingPrefix: '',
      warehouse: 'bigquery',
      leaseTtlMs: 120_000,
      runTtlDays: 90,
      abandonedBatchMs: 3_600_000,
    })
  })

  it('names the variable and what was expected', () => {
    expect(() => readAwsSettings({})).toThrow(
      'environment: DIMSYNC_STAGING_BUCKET: is required (the S3 bucket for staged batches)',
    )
    expect(() => readAwsSettings({ ...base, DIMSYNC_WAREHOUSE: 'snowflake' })).toThrow(
      'DIMSYNC_WAREHOUSE: expected one of duckdb, bigquery, got "snowflake"',
    )
    expect(() => readAwsSettings({ ...base, DIMSYNC_WAREHOUSE: 'duckdb' })).toThrow(
      /DIMSYNC_DUCKDB_PATH: is required/,
    )
    expect(() => readAwsSettings({ ...base, DIMSYNC_LEASE_TTL_SECONDS: '2m' })).toThrow(
      'DIMSYNC_LEASE_TTL_SECONDS: expected an integer from 1 to 3600, got "2m"',
    )
    expect(() => readAwsSettings({ ...base, DIMSYNC_S3_ENDPOINT: 'localhost:9000' })).toThrow(ConfigError)
  })
})

describe('source secrets', () => {
  const project = {
    tables: [
      { name: 'a', source: { type: 'postgres', urlEnv: 'PG_URL' } },
      { name: 'b', source: { type: 'postgres', urlEnv: 'PG_URL' } },
      { name: 'c', source: { type: 'mysql', urlEnv: 'MY_URL' } },
      { name: 'd', source: { type: 'file', path: 'x.csv' } },
    ],
  } as unknown as ProjectSpec

  it('resolves ARNs once each and leaves plain URLs alone', async () => {
    const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:pg-AbCdEf'
    const asked: string[] = []
    const env = await resolveSourceSecrets(
      project,
      { PG_URL: arn, MY_URL: 'mysql://u@h/db', OTHER: 'x' },
      async (a) => {
        asked.push(a)
        return JSON.stringify({
          engine: 'postgres',
          host: 'db.internal',
          port: 5432,
          username: 'app',
          password: 'p@ss/w:rd',
          dbname: 'shop',
        })
      },
    )
    expect(asked).toEqual([arn])
    expect(env.PG_URL).toBe('postgres://app:p%40ss%2Fw%3Ard@db.internal:5432/shop')
    expect(env.MY_URL).toBe('mysql://u@h/db')
    expect(env.OTHER).toBe('x')
  })

  it('accepts a plain URL or {"url"} and never shows the secret in errors', () => {
    expect(secretToUrl('V', 'arn', 'postgres', ' postgres://x@y/z ')).toBe('postgres://x@y/z')
    expect(secretToUrl('V', 'arn', 'mysql', '{"url":"mysql://a@b/c"}')).toBe('mysql://a@b/c')
    expect(secretToUrl('V', 'arn', 'mysql', '{"host":"h","username":"u","password":"p"}')).toBe(
      'mysql://u:p@h:3306',
    )
    let message = ''
    try {
      secretToUrl('V', 'arn:x', 'postgres', '{"password":"hunter2"}')
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).toMatch(/^V: secret arn:x must hold a connection URL/)
    expect(message).not.toMatch(/hunter2/)
  })
})

describe('watermark order', () => {
  it('compares cursors as numbers, big integers, instants with microseconds, then keys', () => {
    expect(compareWatermarks({ cursor: 10, key: [] }, { cursor: 9, key: [] })).toBe(1)
    expect(compareWatermarks({ cursor: '10', key: [] }, { cursor: '9', key: [] })).toBe(1)
    expect(
      compareWatermarks({ cursor: '9007199254740993', key: [] }, { cursor: 9007199254740991, key: [] }),
    ).toBe(1)
    expect(
      compareWatermarks(
        { cursor: '2024-01-01T00:00:00.000001Z', key: [] },
        { cursor: '2024-01-01T00:00:00Z', key: [] },
      ),
    ).toBe(1)
    expect(compareWatermarks({ cursor: 'x', key: [1, 'b'] }, { cursor: 'x', key: [1, 'c'] })).toBe(-1)
    expect(compareWatermarks({ cursor: 'x', key: [2] }, { cursor: 'x', key: [10] })).toBe(-1)
  })

  it('canonical JSON ignores key order and undefined members', () => {
    expect(canonicalJson({ key: [1, 'a'], cursor: 'c', extra: undefined })).toBe(
      canonicalJson({ cursor: 'c', key: [1, 'a'] }),
    )
  })
})
