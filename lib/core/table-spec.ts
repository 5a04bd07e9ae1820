/**
 * The resolved, validated description of one dimension table. Produced by `lib/config` from dimsync.yaml;
 * consumed by the planner, the adapters and the CLI. Pure data: no I/O, frozen after parsing.
 */

import type { FactSpec } from './fact-spec.ts'
import type { SourceColumnType } from './source-types.ts'
import type {
  DbtIdColumnNames,
  EndStyle,
  MetadataColumnNames,
  SystemTimeColumnNames,
} from './metadata-columns.ts'

export type DeletePolicy = 'ignore' | 'invalidate' | 'new_record'

/**
 * What the target holds: `history` (versions with validity windows), `mirror` (only the source's current state:
 * updates overwrite in place, deletes remove the row) or `append` (every extract's rows appended, each valid
 * from its extraction until the next extract that holds its key).
 */
export type TableMode = 'history' | 'mirror' | 'append'

/** Where a table's rows come from. Database sources are added beside `file` without touching the planner. */
export type SourceSpec = FileSourceSpec | DatabaseSourceSpec

export interface FileSourceSpec {
  readonly type: 'file'
  /**
   * A path or a glob, relative to the config file's folder, or `s3://bucket/key-or-glob`; all matching files form
   * one snapshot (or, with `files: new_only`, the new ones form one delta).
   */
  readonly path: string
  /** json: Debezium change events, JSON lines (extract format debezium only). */
  readonly format: 'csv' | 'parquet' | 'json'
  /** CSV options; ignored for Parquet. */
  readonly csv: { readonly delimiter: string; readonly header: boolean }
  /**
   * `new_only`: each run reads only the files not merged yet (a watermark of processed files, committed after
   * the merge), staged as a delta. Absent or `all`: every run reads every file as one full snapshot.
   */
  readonly files?: 'all' | 'new_only'
  /**
   * `files: new_only` only: the pattern that reads the time in a file's name (lib/core/time-from-name.ts); new
   * files are then ordered by it, and one dated before the last merged file is late (lib/core/dated-files.ts).
   */
  readonly timeFromName?: string
  /** CSV only: columns whose type (and date format) is declared instead of chosen from the first load's values. */
  readonly columns?: readonly SourceColumnType[]
}

export interface DatabaseSourceSpec {
  readonly type: 'postgres' | 'mysql'
  /** Name of the environment variable that holds the connection URL (never the URL itself). */
  readonly urlEnv: string
  /** Either a (schema-qualified) table or a SELECT query. */
  readonly table?: string
  readonly query?: string
  /** Number of key ranges read concurrently (one connection each, all in one snapshot). Default 1: no split. */
  readonly chunks?: number
  /**
   * Rows per key range when an extract may stop before a time limit and continue in a later pass (the AWS
   * extract function). Default 1,000,000.
   */
  readonly sliceRows?: number
  /** Longest time one statement of an extract may run on the source; undefined: no limit. */
  readonly statementTimeoutSeconds?: number
}

/**
 * How the source is read: whole (`full`) or after a watermark (`incremental`). A change feed (`extract: { mode:
 * changes }` in dimsync.yaml) is read one of these two ways too (database sources by a cursor, file sources
 * whole); what its rows mean is `TableSpec.changes`.
 */
export type ExtractSpec =
  | { readonly mode: 'full' }
  | { readonly mode: 'incremental'; readonly cursor: string; readonly lookbackMinutes: number }

/**
 * A change feed: each staged row is an event (an insert, an update or a delete of its key at the change time in
 * `valid_from`), not the state of a snapshot; absence from a batch means nothing. AWS DMS output is the default
 * shape (`Op` = I / U / D).
 */
export interface ChangeFeedSpec {
  /** The column naming the operation, and the values that mean each one (compared as text). */
  readonly operation: {
    readonly column: string
    readonly insert: readonly string[]
    readonly update: readonly string[]
    readonly delete: readonly string[]
    /** Values whose rows the extract skips (before-images, heartbeats); absent: none. */
    readonly ignore?: readonly string[]
    /** Values of a truncate: every key with a state at its change time is closed then (dimensions); absent: none. */
    readonly truncate?: readonly string[]
  }
  /** Orders events of one key that share a change time (the last one is the state at that time). */
  readonly sequence?: string
  /**
   * The layout of the change files, read as the CDC tool writes them: `dms` (AWS DMS's S3 target: full-load files
   * without the operation column are inserts, read before the change files; a text change time is read as times).
   */
  readonly format?: 'dms' | 'debezium'
}

/** A literal of a delete condition (`deletes: { when }`), parsed and validated: rendered, never pasted. */
export type DeleteLiteral =
  | { readonly kind: 'text'; readonly value: string }
  | { readonly kind: 'number'; readonly value: string }
  | { readonly kind: 'boolean'; readonly value: boolean }

/**
 * Where an event's business time (`valid_from`) comes from: the extraction time of its batch, or a source
 * column holding the time the row changed. Only change-time tables accept late events (see merge docs).
 */
export type ValidFromSpec =
  { readonly kind: 'extracted_at' } | { readonly kind: 'column'; readonly column: string }

export type TrackedSpec =
  | { readonly kind: 'list'; readonly columns: readonly string[] }
  | { readonly kind: 'all_except'; readonly columns: readonly string[] }

/**
 * Per-column policies beside tracked (type 2) and untracked (type 1) columns. A column has at most one of
 * keep-first and the others; previous and current values are extra columns derived from a tracked column.
 */
export interface ColumnPolicies {
  /** Type 0: every version holds the value of the key's first version; later changes open nothing. */
  readonly keepFirst: readonly string[]
  /** Type 3: `previous_<col>` holds, on every version, the value the column had before its last change. */
  readonly previousValue: readonly string[]
  /** Type 6: `current_<col>` holds, on every version, the value of the key's newest version. */
  readonly currentValue: readonly string[]
}

/** A set of stored non-key columns: all of them, these, or all but these. */
export type ColumnSelection =
  | { readonly kind: 'all' }
  | { readonly kind: 'list'; readonly columns: readonly string[] }
  | { readonly kind: 'all_except'; readonly columns: readonly string[] }

/**
 * Partial updates: rows of a delta or change feed whose unchanged fields arrive as NULL (or not at all). Each
 * row is folded, in time order, into the key's state: an ignored NULL and a column not to update keep the value
 * the key had (a new key takes its first row's values).
 */
export interface PartialUpdateSpec {
  /** Columns where a NULL means "unchanged" rather than "set to NULL". */
  readonly ignoreNulls?: ColumnSelection
  /** The only columns a row of an existing key updates; the others keep their values. */
  readonly columnsToUpdate?: readonly string[]
}

/** `null`: open versions have `valid_to IS NULL`; otherwise a far-future sentinel instant (ISO, UTC). */
export type OpenEnd = null | string

/**
 * `change_detection: { version_column }` (dbt's timestamp strategy): a row opens a new version only when its
 * version column grows; one whose content changed at the same value is refused or, by choice, overwritten into
 * that version in place; a value smaller than the one before it (going backwards) is always refused.
 */
export interface ChangeDetectionSpec {
  readonly versionColumn: string
  readonly onSameVersion: 'refuse' | 'overwrite'
}

/** A source column renamed from `from` to `to` (`renamed:` in dimsync.yaml). */
export interface ColumnRename {
  readonly from: string
  readonly to: string
}

export interface TableSpec {
  /** Logical name used by the CLI, state and logs (`customers`). */
  readonly name: string
  readonly source: SourceSpec
  /** Dimension table name in the warehouse (`dim_customer`). */
  readonly target: string
  /** Natural key columns, in order. Never empty. */
  readonly key: readonly string[]
  readonly mode: TableMode
  readonly extract: ExtractSpec
  /** Present when the source is a change feed (then `validFrom` is a column). */
  readonly changes?: ChangeFeedSpec
  readonly validFrom: ValidFromSpec
  readonly tracked: TrackedSpec
  /** Types 0, 3 and 6 (absent: none). */
  readonly policies?: ColumnPolicies
  /** Absent: every row holds the full state of its key. */
  readonly partialUpdates?: PartialUpdateSpec
  /**
   * Columns the source renamed (`renamed: { old: new }`): the dimension's column is renamed before the merge and
   * the current versions rehashed, so the rename opens no version. Absent: none.
   */
  readonly renamed?: readonly ColumnRename[]
  /** Absent: any change of a tracked column opens a version (the row hash). */
  readonly changeDetection?: ChangeDetectionSpec
  /**
   * What new versions hold in a column the source stopped sending: NULL (absent) or the key's last value
   * (`keep_last`).
   */
  readonly removedColumns?: 'keep_last'
  /**
   * Bitemporal history (`system_time: true`): besides business validity, every row records when dimsync learned
   * it and when a later merge superseded it; rows are never updated except to close them in system time.
   */
  readonly systemTime?: SystemTimeColumnNames
  /** Source columns not stored in the dimension at all. */
  readonly exclude: readonly string[]
  readonly deletes: DeletePolicy
  /** Largest share (0..1] of current keys a single batch may delete by absence. */
  readonly maxDeleteShare: number
  readonly openEnd: OpenEnd
  readonly columns: MetadataColumnNames
  /** How valid_to holds a closed version's end (absent: `exclusive`); see EndStyle. */
  readonly endStyle?: EndStyle
  /** The dbt preset: dbt_scd_id, dbt_updated_at and dbt_is_deleted, derived from each version's key and start. */
  readonly dbtIds?: DbtIdColumnNames
  /** The fivetran preset: _fivetran_synced, the load time of the batch that wrote each version. */
  readonly syncedColumn?: string
  /** Optional source column whose non-NULL (or true) value marks a row as deleted (soft delete). */
  readonly softDeleteColumn?: string
  /**
   * `deletes: { when: "<softDeleteColumn> = <value>" }`: a row is a delete when its soft delete column equals this
   * value (absent: when it is true, or not NULL).
   */
  readonly softDeleteEquals?: DeleteLiteral
  /** AWS deployment: when the table runs (absent: only when started by hand). See ScheduleSpec. */
  readonly schedule?: ScheduleSpec
  /** AWS deployment: memory and timeout of the table's extract and merge functions. */
  readonly lambda?: LambdaSizeSpec
}

export type WarehouseSpec = DuckDbWarehouseSpec | BigQueryWarehouseSpec | PostgresWarehouseSpec

/** `warehouse: { type: postgres, url_env, schema }`. */
export interface PostgresWarehouseSpec {
  readonly type: 'postgres'
  /** The environment variable holding the connection URL (credentials never go in the config file). */
  readonly urlEnv: string
  readonly schema: string
}

export interface DuckDbWarehouseSpec {
  readonly type: 'duckdb'
  /** DuckDB database file, relative to the config file's folder. */
  readonly path: string
  readonly schema: string
}

// ---- BigQuery warehouse (BigQuery issue) ----

/** `warehouse: { type: bigquery, project, dataset, location, credentials_secret }`. */
export interface BigQueryWarehouseSpec {
  readonly type: 'bigquery'
  /** Google Cloud project that holds the dataset (and runs the jobs). */
  readonly project: string
  readonly dataset: string
  /** The dataset, under the name every warehouse uses for where dimensions live. */
  readonly schema: string
  /** Location of the dataset (`EU`, `US`, `europe-west1`), sent with every job. */
  readonly location: string
  /**
   * ARN (or name) of a Secrets Manager secret whose value is a service-account key JSON (Lambda). Absent:
   * Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud login, workload identity).
   */
  readonly credentialsSecret?: string
  /** Keyless auth from AWS: workload identity federation (instead of `credentialsSecret`). */
  readonly workloadIdentity?: WorkloadIdentitySpec
  /** Merge even where a partition expiration deletes closed versions (default: refused). */
  readonly allowPartitionExpiration?: boolean
}

/** A workload identity pool provider trusting the AWS account, and the service account to impersonate. */
export interface WorkloadIdentitySpec {
  /** `//iam.googleapis.com/projects/NUMBER/locations/global/workloadIdentityPools/POOL/providers/PROVIDER`. */
  readonly audience: string
  readonly serviceAccount?: string
}

/** One BigQuery credential source: said by validate and again when the warehouse opens (the Lambda's secret may come from its environment). */
export const BOTH_BIGQUERY_CREDENTIALS =
  'set either credentials_secret (a service-account key) or workload_identity (keyless auth from ' +
  "the functions' AWS role), not both"

export interface ProjectSpec {
  /** Absolute path of the config file it was read from (for messages). */
  readonly configPath: string
  /** Absolute folder every relative path in the config is resolved against. */
  readonly baseDir: string
  readonly warehouse: WarehouseSpec
  readonly staging: { readonly type: 'local'; readonly path: string }
  readonly state: { readonly type: 'local'; readonly path: string }
  readonly tables: readonly TableSpec[]
  /** Fact tables (`facts:` in dimsync.yaml); absent when the file has none. */
  readonly facts?: readonly FactSpec[]
  /** AWS deployment options (`aws:` in dimsync.yaml); absent when the file has none. */
  readonly aws?: AwsDeploymentSpec
}

// ---- AWS deployment options (read by infra/; ignored by the CLI) ----

/** One EventBridge Scheduler schedule of a table. */
export interface ScheduleSpec {
  /** `rate(1 hour)` or `cron(0 3 * * ? *)`, validated. */
  readonly expression: string
  /** IANA zone the cron is read in (rates ignore it). Default UTC. */
  readonly timezone: string
  readonly enabled: boolean
  /** 0: run at the exact time; otherwise EventBridge may start up to this many minutes late. */
  readonly flexibleWindowMinutes: number
  /** Longest gap between two scheduled runs, in minutes (0 when the expression never fires again). */
  readonly maxIntervalMinutes: number
}

export type LambdaSizeClass = 'small' | 'medium' | 'large' | 'xlarge'

export interface LambdaSizeSpec {
  /** The named class, or `custom` when memory or timeout were given explicitly. */
  readonly sizeClass: LambdaSizeClass | 'custom'
  readonly memoryMb: number
  readonly timeoutSeconds: number
}

export interface AwsDeploymentSpec {
  readonly stackName?: string
  readonly architecture: 'arm64' | 'x86_64'
  /** A source's url_env name → Secrets Manager secret name or ARN holding its connection URL. */
  readonly secrets: Readonly<Record<string, string>>
  /** Secret name or ARN holding the BigQuery service-account JSON. */
  readonly bigQuerySecret?: string
  /** Customer-managed KMS key ARNs of the secrets (kms:Decrypt through Secrets Manager); empty: none. */
  readonly secretsKmsKeys: readonly string[]
  readonly vpc?: {
    readonly vpcId: string
    readonly subnetIds: readonly string[]
    readonly securityGroupIds: readonly string[]
    /** Route tables that get S3 and DynamoDB gateway endpoints from the stack; absent: none are added. */
    readonly gatewayEndpointRouteTableIds?: readonly string[]
  }
  readonly alarmEmail?: string
  /** Reserved concurrency of each extract and merge function; absent: unreserved. */
  readonly reservedConcurrency?: { readonly extract?: number; readonly merge?: number }
  /** State machine logging; include_data logs inputs, outputs and causes (key values, SQL). */
  readonly executionLogs: { readonly level: 'off' | 'fatal' | 'error' | 'all'; readonly includeData: boolean }
  readonly logRetentionDays: number
  /** `retain` keeps the bucket and state table when the stack is deleted. */
  readonly removalPolicy: 'retain' | 'destroy'
  /** Managed policy name or ARN set as the permissions boundary of every role the stack creates. */
  readonly permissionsBoundary?: string
  /** Every role the stack creates is named with this prefix. */
  readonly roleNamePrefix?: string
  /** Tags of every resource of the stack. */
  readonly tags?: Readonly<Record<string, string>>
  /** Qualifier of the CDK bootstrap stack the deployment uses. */
  readonly bootstrapQualifier?: string
  /** Customer-managed KMS key (ARN, or `create`) of the staging bucket and the log groups. */
  readonly kmsKey?: string
  /** S3 versioning of the staging bucket. */
  readonly stagingVersioning?: boolean
  /** Published versions kept per function (older ones are deleted on deploy). */
  readonly functionVersionsKept?: number
}
