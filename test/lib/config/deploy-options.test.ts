import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../../lib/core/errors.ts'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { maxIntervalMinutes, parseScheduleExpression } from '../../../lib/config/schedule-expression.ts'

const CONFIG = '/projects/shop/dimsync.yaml'

function config(tableExtra: string, top = ''): string {
  return [
    'version: 1',
    top,
    'tables:',
    '  - name: customers',
    '    source: { type: postgres, url_env: SHOP_DB_URL, table: public.customers }',
    '    key: customer_id',
    ...tableExtra.split('\n').map((line) => `    ${line}`),
  ].join('\n')
}

function issuesOf(text: string): readonly string[] {
  try {
    parseProject(text, CONFIG)
  } catch (error) {
    if (error instanceof ConfigError) return error.issues
    throw error
  }
  throw new Error('expected a ConfigError')
}

describe('parseScheduleExpression', () => {
  it('accepts rates and gives their interval', () => {
    expect(parseScheduleExpression('rate(1 hour)')).toEqual({ kind: 'rate', minutes: 60 })
    expect(parseScheduleExpression('rate(15 minutes)')).toEqual({ kind: 'rate', minutes: 15 })
    expect(parseScheduleExpression('rate(2 days)')).toEqual({ kind: 'rate', minutes: 2880 })
  })

  it('says which singular or plural form AWS wants', () => {
    expect(parseScheduleExpression('rate(1 hours)')).toBe('must be rate(1 hour) (got "rate(1 hours)")')
    expect(parseScheduleExpression('rate(5 minute)')).toBe('must be rate(5 minutes) (got "rate(5 minute)")')
    expect(parseScheduleExpression('rate(0 hours)')).toMatch(/at least 1 hour/)
  })

  it('rejects crons with the wrong field count, bad values or two day fields', () => {
    expect(parseScheduleExpression('cron(0 3 * * *)')).toMatch(/cron needs 6 fields .* got 5/)
    expect(parseScheduleExpression('cron(0 25 * * ? *)')).toBe(
      'cron hours field "25": "25" is not between 0 and 23',
    )
    expect(parseScheduleExpression('cron(0 3 * * MON *)')).toMatch(
      /exactly one of day-of-month and day-of-week/,
    )
    expect(parseScheduleExpression('hourly')).toMatch(/must be rate\(\.\.\.\) or cron\(\.\.\.\)/)
  })

  it('computes the longest gap of common crons', () => {
    const gap = (text: string) => maxIntervalMinutes(parseScheduleExpression(text) as never)
    expect(gap('cron(0 3 * * ? *)')).toBe(1440)
    expect(gap('cron(*/15 * * * ? *)')).toBe(15)
    expect(gap('cron(0 8,18 * * ? *)')).toBe(14 * 60)
    // Friday 06:00 to Monday 06:00.
    expect(gap('cron(0 6 ? * MON-FRI *)')).toBe(3 * 1440)
    expect(gap('cron(0 2 1 * ? *)')).toBe(31 * 1440)
    expect(gap('cron(0 2 L * ? *)')).toBe(35 * 1440)
  })
})

describe('dimsync.yaml deployment options', () => {
  it('resolves a table schedule, merging fields from defaults', () => {
    const text = config(
      'schedule: { expression: rate(1 hour), flexible_window_minutes: 15 }',
      'defaults:\n  schedule: { timezone: Europe/Paris, enabled: false }',
    )
    const table = parseProject(text, CONFIG).tables[0]!
    expect(table.schedule).toEqual({
      expression: 'rate(1 hour)',
      timezone: 'Europe/Paris',
      enabled: false,
      flexibleWindowMinutes: 15,
      maxIntervalMinutes: 60,
    })
  })

  it('accepts a bare expression and leaves tables without a schedule unscheduled', () => {
    const scheduled = parseProject(config('schedule: cron(0 3 * * ? *)'), CONFIG).tables[0]!
    expect(scheduled.schedule).toMatchObject({
      expression: 'cron(0 3 * * ? *)',
      timezone: 'UTC',
      enabled: true,
    })
    expect(parseProject(config(''), CONFIG).tables[0]!.schedule).toBeUndefined()
  })

  it('resolves lambda size classes and explicit memory and timeout', () => {
    expect(parseProject(config('lambda: large'), CONFIG).tables[0]!.lambda).toEqual({
      sizeClass: 'large',
      memoryMb: 4096,
      timeoutSeconds: 900,
    })
    const custom = parseProject(config('lambda: { class: small, memory_mb: 1536 }'), CONFIG).tables[0]!
    expect(custom.lambda).toEqual({ sizeClass: 'custom', memoryMb: 1536, timeoutSeconds: 300 })
  })

  it('reports bad schedule and lambda options at their path', () => {
    expect(
      issuesOf(
        config(
          'schedule: { expression: rate(1 hours), timezone: Europe/Pariss }\nlambda: { memory_mb: 64, timeout_seconds: 901 }',
        ),
      ),
    ).toEqual([
      'tables[0].lambda.memory_mb: must be megabytes: a whole number from 128 to 10240 (got 64)',
      'tables[0].lambda.timeout_seconds: must be seconds: a whole number from 1 to 900 (got 901)',
    ])
    expect(issuesOf(config('schedule: { expression: rate(1 hours), timezone: Europe/Pariss }'))).toEqual([
      'tables[0].schedule.expression: must be rate(1 hour) (got "rate(1 hours)")',
      'tables[0].schedule.timezone: "Europe/Pariss" is not an IANA time zone (like UTC, Europe/Paris, America/New_York)',
    ])
    expect(issuesOf(config('schedule: { timezone: UTC }'))).toEqual([
      'tables[0].schedule.expression: is required (e.g. rate(1 hour) or cron(0 3 * * ? *))',
    ])
    expect(issuesOf(config('lambda: huge'))).toEqual([
      'tables[0].lambda: must be one of small, medium, large, xlarge, or a mapping { class, memory_mb, timeout_seconds } (got "huge")',
    ])
  })

  it('reports a bad schedule in defaults once, not once per table', () => {
    expect(issuesOf(config('', 'defaults:\n  schedule: cron(0 3 * * *)'))).toEqual([
      'defaults.schedule: cron needs 6 fields (minutes hours day-of-month month day-of-week year), got 5 in "cron(0 3 * * *)"; e.g. cron(0 3 * * ? *) for 03:00 every day',
    ])
  })

  it('resolves the aws section with its defaults', () => {
    const text = config(
      '',
      [
        'aws:',
        '  secrets: { SHOP_DB_URL: dimsync/shop-db }',
        '  bigquery_secret: dimsync/bigquery',
        '  vpc: { vpc_id: vpc-0123456789abcdef0, subnet_ids: [subnet-0123456789abcdef0] }',
        '  alarm_email: ops@example.com',
      ].join('\n'),
    )
    expect(parseProject(text, CONFIG).aws).toEqual({
      architecture: 'arm64',
      secrets: { SHOP_DB_URL: 'dimsync/shop-db' },
      bigQuerySecret: 'dimsync/bigquery',
      secretsKmsKeys: [],
      vpc: { vpcId: 'vpc-0123456789abcdef0', subnetIds: ['subnet-0123456789abcdef0'], securityGroupIds: [] },
      executionLogs: { level: 'error', includeData: false },
      alarmEmail: 'ops@example.com',
      logRetentionDays: 30,
      removalPolicy: 'retain',
    })
    expect(parseProject(config(''), CONFIG).aws).toBeUndefined()
  })

  it('rejects a secret for a url_env no source uses, suggesting the close one', () => {
    const text = config('', 'aws:\n  secrets: { SHOP_DB_ULR: dimsync/shop-db }\n  log_retention_days: 10')
    expect(issuesOf(text)).toEqual([
      'aws.log_retention_days: must be one of 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653 (got 10)',
    ])
    expect(issuesOf(config('', 'aws:\n  secrets: { SHOP_DB_ULR: dimsync/shop-db }'))).toEqual([
      'aws.secrets.SHOP_DB_ULR: no table\'s source has url_env: SHOP_DB_ULR; did you mean "SHOP_DB_URL"? (url_env names in use: SHOP_DB_URL)',
    ])
  })

  it('refuses staging_expiry_days, saying why staged batches no longer expire', () => {
    expect(issuesOf(config('', 'aws:\n  staging_expiry_days: 7'))).toEqual([
      'aws.staging_expiry_days: is no longer supported: merged and discarded batches are deleted by dimsync, and a ' +
        'batch that waits for a rerun or for dimsync discard must not expire under it; remove the line',
    ])
  })

  it('rejects unknown keys in the aws section', () => {
    expect(issuesOf(config('', 'aws:\n  alarm_mail: ops@example.com'))).toEqual([
      'aws: unknown key "alarm_mail"; did you mean "alarm_email"?',
    ])
  })
})
