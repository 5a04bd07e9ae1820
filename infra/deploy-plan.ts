/**
 * What the CDK app deploys for a dimsync.yaml, decided without constructing anything: function size classes and
 * which tables use them, schedules, staleness windows, secrets. Pure, so the rules that only matter on AWS (no
 * local file sources, a secret for every database URL, a BigQuery warehouse) fail with the CLI's ConfigError format.
 */
import { ConfigError } from '../lib/core/errors.ts'
import type { AwsDeploymentSpec, LambdaSizeSpec, ProjectSpec, ScheduleSpec } from '../lib/core/table-spec.ts'
import type { WarehouseType } from '../lib/config/warehouse-configs.ts'
import { warehouseBundle } from '../lib/runtime/warehouse-registry.ts'
import { DEFAULT_STACK_NAME } from './defaults.ts'

/** One pair of functions (extract, merge) with one memory/timeout setting, shared by the tables of that size. */
export interface FunctionClassPlan {
  /** Construct id part: `Medium`, or `Custom1536mb300s`. */
  readonly id: string
  readonly memoryMb: number
  readonly timeoutSeconds: number
  readonly tables: readonly string[]
}

export interface TablePlan {
  readonly name: string
  readonly mode: 'full' | 'incremental'
  readonly functionClass: string
  readonly schedule?: ScheduleSpec
  /** Twice the longest scheduled gap; absent: no staleness alarm (the schedule is disabled or never fires again). */
  readonly stalenessWindowMinutes?: number
  /** Why a scheduled table has no staleness alarm (shown as a synth warning). */
  readonly stalenessSkipped?: string
  /** url_env of a database source and the secret that holds its URL. */
  readonly source?: { readonly urlEnv: string; readonly secret: string }
  /** The s3:// path (or glob) of a file source: the extract function may read there and nowhere else. */
  readonly sourceFiles?: string
  /** A file source that reads only the files not merged yet (`files: new_only`): no full reload. */
  readonly newFilesOnly: boolean
}

export interface DeploymentPlan {
  readonly configPath: string
  readonly stackName: string
  readonly architecture: 'arm64' | 'x86_64'
  readonly classes: readonly FunctionClassPlan[]
  readonly tables: readonly TablePlan[]
  /** The warehouse the functions open (`DIMSYNC_WAREHOUSE`): the config's, whose bundle deploys it. */
  readonly warehouse: WarehouseType
  /** The secret the merge function logs in to the warehouse with (its bundle's `deploySecret`). */
  readonly bigQuerySecret?: string
  /** Customer-managed KMS keys of the secrets (kms:Decrypt through Secrets Manager). */
  readonly secretsKmsKeys: readonly string[]
  readonly vpc?: AwsDeploymentSpec['vpc']
  readonly alarmEmail?: string
  readonly executionLogs: AwsDeploymentSpec['executionLogs']
  readonly reservedConcurrency?: AwsDeploymentSpec['reservedConcurrency']
  readonly logRetentionDays: number
  readonly removalPolicy: 'retain' | 'destroy'
  /** What accounts governed by SCPs ask of the roles and resources (see AwsDeploymentSpec). */
  readonly permissionsBoundary?: string
  readonly roleNamePrefix?: string
  readonly tags?: Readonly<Record<string, string>>
  readonly bootstrapQualifier?: string
  /** Customer-managed KMS key ARN of staging and logs, or `create`. */
  readonly kmsKey?: string
  readonly stagingVersioning: boolean
  /** Published versions kept per function. */
  readonly functionVersionsKept: number
}

/** Published versions kept per function when the config does not say. */
export const DEFAULT_VERSIONS_KEPT = 5

const DEFAULT_SIZE: LambdaSizeSpec = { sizeClass: 'medium', memoryMb: 2048, timeoutSeconds: 900 }

function classId(size: LambdaSizeSpec): string {
  if (size.sizeClass !== 'custom') return size.sizeClass[0]!.toUpperCase() + size.sizeClass.slice(1)
  return `Custom${size.memoryMb}mb${size.timeoutSeconds}s`
}

/**
 * Plans the deployment of a resolved project. Throws ConfigError (file, one line per problem, paths as in the
 * YAML) for what cannot run on AWS.
 */
export function planDeployment(project: ProjectSpec): DeploymentPlan {
  const issues: string[] = []
  const aws = project.aws
  const warehouse = warehouseBundle(project.warehouse)
  const bigQuerySecret = warehouse.deploySecret?.(project.warehouse, aws)
  const warehouseProblem = warehouse.deployProblem(project.warehouse, aws)
  if (warehouseProblem !== undefined) issues.push(warehouseProblem)

  const classes = new Map<string, { memoryMb: number; timeoutSeconds: number; tables: string[] }>()
  const tables: TablePlan[] = project.tables.map((table, index) => {
    const size = table.lambda ?? DEFAULT_SIZE
    const id = classId(size)
    const entry = classes.get(id) ?? {
      memoryMb: size.memoryMb,
      timeoutSeconds: size.timeoutSeconds,
      tables: [],
    }
    entry.tables.push(table.name)
    classes.set(id, entry)

    let source: TablePlan['source']
    let sourceFiles: string | undefined
    if (table.source.type === 'file') {
      if (table.source.path.startsWith('s3://')) sourceFiles = table.source.path
      else
        issues.push(
          `tables[${index}].source.path: ${table.source.path} is a local path, which the functions cannot read; ` +
            `put the files on S3 (path: s3://bucket/prefix/*.csv) or load table ${table.name} with dimsync run`,
        )
    } else {
      const secret = aws?.secrets[table.source.urlEnv]
      if (secret === undefined) {
        issues.push(
          `tables[${index}].source.url_env: ${table.source.urlEnv} has no secret; add ` +
            `aws: { secrets: { ${table.source.urlEnv}: <secret name or ARN> } } (the secret's value is the connection URL)`,
        )
      } else source = { urlEnv: table.source.urlEnv, secret }
    }

    const schedule = table.schedule
    let stalenessWindowMinutes: number | undefined
    let stalenessSkipped: string | undefined
    if (schedule !== undefined && schedule.enabled) {
      if (schedule.maxIntervalMinutes === 0) stalenessSkipped = `${schedule.expression} never runs again`
      else stalenessWindowMinutes = 2 * schedule.maxIntervalMinutes
    }
    return {
      name: table.name,
      mode: table.extract.mode,
      newFilesOnly: table.source.type === 'file' && table.source.files === 'new_only',
      functionClass: id,
      ...(schedule !== undefined ? { schedule } : {}),
      ...(stalenessWindowMinutes !== undefined ? { stalenessWindowMinutes } : {}),
      ...(stalenessSkipped !== undefined ? { stalenessSkipped } : {}),
      ...(source !== undefined ? { source } : {}),
      ...(sourceFiles !== undefined ? { sourceFiles } : {}),
    }
  })
  if (issues.length > 0) throw new ConfigError(project.configPath, issues)

  return {
    configPath: project.configPath,
    stackName: aws?.stackName ?? DEFAULT_STACK_NAME,
    architecture: aws?.architecture ?? 'arm64',
    classes: [...classes].map(([id, c]) => ({ id, ...c })),
    tables,
    warehouse: project.warehouse.type,
    ...(bigQuerySecret !== undefined ? { bigQuerySecret } : {}),
    secretsKmsKeys: aws?.secretsKmsKeys ?? [],
    ...(aws?.vpc !== undefined ? { vpc: aws.vpc } : {}),
    ...(aws?.alarmEmail !== undefined ? { alarmEmail: aws.alarmEmail } : {}),
    executionLogs: aws?.executionLogs ?? { level: 'error', includeData: false },
    ...(aws?.reservedConcurrency !== undefined ? { reservedConcurrency: aws.reservedConcurrency } : {}),
    logRetentionDays: aws?.logRetentionDays ?? 30,
    removalPolicy: aws?.removalPolicy ?? 'retain',
    ...(aws?.permissionsBoundary !== undefined ? { permissionsBoundary: aws.permissionsBoundary } : {}),
    ...(aws?.roleNamePrefix !== undefined ? { roleNamePrefix: aws.roleNamePrefix } : {}),
    ...(aws?.tags !== undefined ? { tags: aws.tags } : {}),
    ...(aws?.bootstrapQualifier !== undefined ? { bootstrapQualifier: aws.bootstrapQualifier } : {}),
    ...(aws?.kmsKey !== undefined ? { kmsKey: aws.kmsKey } : {}),
    stagingVersioning: aws?.stagingVersioning ?? false,
    functionVersionsKept: aws?.functionVersionsKept ?? DEFAULT_VERSIONS_KEPT,
  }
}
