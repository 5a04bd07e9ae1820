/**
 * Resolution of the AWS deployment options of dimsync.yaml: per-table `schedule` and `lambda` (inherited field by
 * field from `defaults`) and the top-level `aws` section. Pure; problems are reported through `add` so they join
 * the one ConfigError of resolve-project.ts. The CLI ignores these options; infra/ deploys them.
 */
import type {
  AwsDeploymentSpec,
  LambdaSizeClass,
  LambdaSizeSpec,
  ScheduleSpec,
  TableSpec,
} from '../core/table-spec.ts'
import type { TableOptionsDocument } from './config-schema.ts'
import { didYouMean } from './did-you-mean.ts'
import { show } from './messages.ts'
import { isKnownTimeZone, maxIntervalMinutes, parseScheduleExpression } from './schedule-expression.ts'

type Path = readonly PropertyKey[]
type AddIssue = (path: Path, message: string) => void
type Options = NonNullable<TableOptionsDocument>
type ScheduleDocument = NonNullable<Options['schedule']>
type LambdaDocument = NonNullable<Options['lambda']>

/** Memory (MB) and timeout (s) of each size class; `medium` is the default. */
export const LAMBDA_SIZE_CLASS_SETTINGS: Readonly<
  Record<LambdaSizeClass, { readonly memoryMb: number; readonly timeoutSeconds: number }>
> = Object.freeze({
  small: { memoryMb: 1024, timeoutSeconds: 300 },
  medium: { memoryMb: 2048, timeoutSeconds: 900 },
  large: { memoryMb: 4096, timeoutSeconds: 900 },
  xlarge: { memoryMb: 10240, timeoutSeconds: 900 },
})
export const DEFAULT_LAMBDA_SIZE_CLASS: LambdaSizeClass = 'medium'
export const DEFAULT_SCHEDULE_TIMEZONE = 'UTC'

function scheduleFields(value: ScheduleDocument | undefined): Exclude<ScheduleDocument, string> {
  return typeof value === 'string' ? { expression: value } : (value ?? {})
}

/** Checks the schedule fields an options block (a table or `defaults`) writes itself. */
export function checkScheduleOptions(base: Path, options: Options, add: AddIssue): void {
  if (options.schedule === undefined) return
  const fields = scheduleFields(options.schedule)
  const expressionPath =
    typeof options.schedule === 'string' ? [...base, 'schedule'] : [...base, 'schedule', 'expression']
  if (fields.expression !== undefined) {
    const parsed = parseScheduleExpression(fields.expression)
    if (typeof parsed === 'string') add(expressionPath, parsed)
  }
  if (fields.timezone !== undefined && !isKnownTimeZone(fields.timezone)) {
    add(
      [...base, 'schedule', 'timezone'],
      `${show(fields.timezone)} is not an IANA time zone (like UTC, Europe/Paris, America/New_York)`,
    )
  }
}

/** A table's schedule: its own fields over the defaults' fields; undefined when neither sets one. */
export function resolveSchedule(
  base: Path,
  own: ScheduleDocument | undefined,
  inherited: ScheduleDocument | undefined,
  add: AddIssue,
): ScheduleSpec | undefined {
  if (own === undefined && inherited === undefined) return undefined
  const merged = { ...scheduleFields(inherited), ...scheduleFields(own) }
  if (merged.expression === undefined) {
    add([...base, 'schedule', 'expression'], 'is required (e.g. rate(1 hour) or cron(0 3 * * ? *))')
    return undefined
  }
  const parsed = parseScheduleExpression(merged.expression)
  // Already reported where it was written (the table or defaults).
  if (typeof parsed === 'string') return undefined
  return {
    expression: merged.expression.trim(),
    timezone: merged.timezone ?? DEFAULT_SCHEDULE_TIMEZONE,
    enabled: merged.enabled ?? true,
    flexibleWindowMinutes: merged.flexible_window_minutes ?? 0,
    maxIntervalMinutes: maxIntervalMinutes(parsed),
  }
}

function lambdaFields(value: LambdaDocument | undefined): Exclude<LambdaDocument, string> {
  return typeof value === 'string' ? { class: value } : (value ?? {})
}

/** A table's function size: its own fields over the defaults' fields over the `medium` class. */
export function resolveLambdaSize(
  own: LambdaDocument | undefined,
  inherited: LambdaDocument | undefined,
): LambdaSizeSpec {
  const merged = { ...lambdaFields(inherited), ...lambdaFields(own) }
  const sizeClass = (merged.class ?? DEFAULT_LAMBDA_SIZE_CLASS) as LambdaSizeClass
  const settings = LAMBDA_SIZE_CLASS_SETTINGS[sizeClass]
  const custom = merged.memory_mb !== undefined || merged.timeout_seconds !== undefined
  return {
    sizeClass: custom ? 'custom' : sizeClass,
    memoryMb: merged.memory_mb ?? settings.memoryMb,
    timeoutSeconds: merged.timeout_seconds ?? settings.timeoutSeconds,
  }
}

export interface AwsDocument {
  readonly stack_name?: string | undefined
  readonly architecture?: 'arm64' | 'x86_64' | undefined
  readonly secrets?: Readonly<Record<string, string>> | undefined
  readonly bigquery_secret?: string | undefined
  readonly secrets_kms_keys?: readonly string[] | undefined
  readonly vpc?:
    | {
        readonly vpc_id: string
        readonly subnet_ids: readonly string[]
        readonly security_group_ids?: readonly string[] | undefined
        readonly gateway_endpoints?: { readonly route_table_ids: readonly string[] } | undefined
      }
    | undefined
  readonly reserved_concurrency?:
    { readonly extract?: number | undefined; readonly merge?: number | undefined } | undefined
  readonly execution_logs?:
    | {
        readonly level?: 'off' | 'fatal' | 'error' | 'all' | undefined
        readonly include_data?: boolean | undefined
      }
    | undefined
  readonly alarm_email?: string | undefined
  readonly log_retention_days?: number | undefined
  readonly staging_expiry_days?: unknown
  readonly removal_policy?: 'retain' | 'destroy' | undefined
  readonly permissions_boundary?: string | undefined
  readonly role_name_prefix?: string | undefined
  readonly tags?: Readonly<Record<string, string>> | undefined
  readonly bootstrap_qualifier?: string | undefined
  readonly kms_key?: string | undefined
  readonly staging_versioning?: boolean | undefined
  readonly function_versions_kept?: number | undefined
}

/**
 * Resolves the `aws` section. A secret keyed by a url_env no database source uses is an error (most often a
 * typo that would leave the real variable unset at run time).
 */
export function resolveAws(aws: AwsDocument, tables: readonly TableSpec[], add: AddIssue): AwsDeploymentSpec {
  const used = tables.flatMap((t) => (t.source.type === 'file' ? [] : [t.source.urlEnv]))
  for (const name of Object.keys(aws.secrets ?? {})) {
    if (!used.includes(name))
      add(
        ['aws', 'secrets', name],
        `no table's source has url_env: ${name}${didYouMean(name, used)}` +
          (used.length > 0 ? ` (url_env names in use: ${[...new Set(used)].join(', ')})` : ''),
      )
  }
  if (aws.staging_expiry_days !== undefined)
    add(
      ['aws', 'staging_expiry_days'],
      'is no longer supported: merged and discarded batches are deleted by dimsync, and a batch that waits for ' +
        'a rerun or for dimsync discard must not expire under it; remove the line',
    )
  return {
    ...(aws.stack_name !== undefined ? { stackName: aws.stack_name } : {}),
    architecture: aws.architecture ?? 'arm64',
    secrets: { ...(aws.secrets ?? {}) },
    ...(aws.bigquery_secret !== undefined ? { bigQuerySecret: aws.bigquery_secret } : {}),
    secretsKmsKeys: [...(aws.secrets_kms_keys ?? [])],
    ...(aws.vpc !== undefined
      ? {
          vpc: {
            vpcId: aws.vpc.vpc_id,
            subnetIds: [...aws.vpc.subnet_ids],
            securityGroupIds: [...(aws.vpc.security_group_ids ?? [])],
            ...(aws.vpc.gateway_endpoints !== undefined
              ? { gatewayEndpointRouteTableIds: [...aws.vpc.gateway_endpoints.route_table_ids] }
              : {}),
          },
        }
      : {}),
    ...(aws.reserved_concurrency !== undefined
      ? {
          reservedConcurrency: {
            ...(aws.reserved_concurrency.extract !== undefined
              ? { extract: aws.reserved_concurrency.extract }
              : {}),
            ...(aws.reserved_concurrency.merge !== undefined
              ? { merge: aws.reserved_concurrency.merge }
              : {}),
          },
        }
      : {}),
    executionLogs: {
      level: aws.execution_logs?.level ?? 'error',
      includeData: aws.execution_logs?.include_data ?? false,
    },
    ...(aws.alarm_email !== undefined ? { alarmEmail: aws.alarm_email } : {}),
    logRetentionDays: aws.log_retention_days ?? 30,
    removalPolicy: aws.removal_policy ?? 'retain',
    ...(aws.permissions_boundary !== undefined ? { permissionsBoundary: aws.permissions_boundary } : {}),
    ...(aws.role_name_prefix !== undefined ? { roleNamePrefix: aws.role_name_prefix } : {}),
    ...(aws.tags !== undefined ? { tags: { ...aws.tags } } : {}),
    ...(aws.bootstrap_qualifier !== undefined ? { bootstrapQualifier: aws.bootstrap_qualifier } : {}),
    ...(aws.kms_key !== undefined ? { kmsKey: aws.kms_key } : {}),
    ...(aws.staging_versioning !== undefined ? { stagingVersioning: aws.staging_versioning } : {}),
    ...(aws.function_versions_kept !== undefined ? { functionVersionsKept: aws.function_versions_kept } : {}),
  }
}
