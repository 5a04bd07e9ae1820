/**
 * One warehouse kind, whole, in the spirit of kysely's `Dialect`: everything the composition roots, `dimsync
 * validate`, the CLI and the CDK app need of it, so none of them asks which warehouse it talks to. Its config part
 * (the keys of its `warehouse:` section and its spec) is lib/config/warehouses/<kind>-config.ts; its dialect comes
 * with the warehouse its opener returns (`warehouse.dialect`). The kinds are listed in warehouse-registry.ts.
 */
import type { BigQueryWarehouseOptions } from '../adapters/warehouse/bigquery-warehouse.ts'
import type { GetSecret } from '../adapters/aws/source-secrets.ts'
import type { CheckpointRecovery } from '../core/checkpoint-recovery.ts'
import type { FileLockHolder } from '../adapters/warehouse/duckdb-file-lock.ts'
import type { CompiledScript } from '../core/compiled-sql.ts'
import type { StagedParquetVersion } from '../core/staged-parquet.ts'
import type { AwsDeploymentSpec, ProjectSpec, TableSpec, WarehouseSpec } from '../core/table-spec.ts'
import type { WarehouseChecks } from '../core/warehouse-checks.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import type { AwsSettings } from './aws-deps.ts'

export interface WarehouseBundle<S extends WarehouseSpec = WarehouseSpec> {
  readonly type: S['type']
  /** The Parquet version its batches are staged in (lib/core/staged-parquet.ts: chosen by who reads the parts). */
  readonly stagedParquetVersion: StagedParquetVersion
  /** What `dimsync validate` checks for it; loaded when validate runs. */
  checks(spec: S): Promise<WarehouseChecks>
  /** Refuses a setting of the spec before anything runs (a DuckDB path that is not a DuckDB file). */
  assertUsable?(spec: S): Promise<void>
  /** Opens it for the CLI (its client library is loaded here, on first use). */
  openLocal(spec: S, opening: LocalOpening): Promise<Warehouse<SqlDialect>>
  /**
   * Whether one opened warehouse serves every table of a command (a remote client); otherwise it is closed when a
   * table's run ends, since a DuckDB file has one writing process at a time and another table's run waits for it.
   */
  readonly sharedAcrossTables: boolean
  /** `plan --dialect <type>`: the script of a first batch, rendered offline from the config and the source's columns. */
  offlinePlan?(
    project: ProjectSpec,
    table: TableSpec,
    env: Readonly<Record<string, string | undefined>>,
    now: string,
  ): Promise<CompiledScript>
  /** How the Lambda functions open it (`DIMSYNC_WAREHOUSE=<type>`); absent: they cannot. */
  readonly lambda?: LambdaWarehouse
  /** The Secrets Manager secret (name or ARN) the deployed merge function logs in with, or undefined. */
  deploySecret?(spec: S, aws: AwsDeploymentSpec | undefined): string | undefined
  /** Why `cdk deploy` refuses a project with this warehouse (one line for the ConfigError), or undefined. */
  deployProblem(spec: S, aws: AwsDeploymentSpec | undefined): string | undefined
}

/** What the CLI's composition root hands an opener. */
export interface LocalOpening {
  readonly access: 'read' | 'write'
  /** BigQuery client settings (an API endpoint and auth client in tests; nothing in normal use). */
  readonly bigQuery?: Partial<BigQueryWarehouseOptions>
  /** How long to wait for a warehouse (file or table) another process writes, and the setting that says so. */
  readonly waitMs: number
  readonly waitSetting: string
  /** Who holds a warehouse file (a run with a local lease), for the message when the wait ends. */
  describeHolder(holder: FileLockHolder): Promise<string | undefined>
  /** A checkpoint of the warehouse file that a dead process left unfinished was undone, or its copy removed. */
  onCheckpointRecovered?(recovery: CheckpointRecovery, path: string): void
}

export interface LambdaWarehouse {
  open(opening: LambdaOpening): Promise<Warehouse<SqlDialect>>
  /** The secret its login reads (reread after a refused login, to tell a rotated secret), or undefined. */
  loginSecret?(settings: AwsSettings, project: ProjectSpec): string | undefined
}

export interface LambdaOpening {
  readonly settings: AwsSettings
  readonly project: ProjectSpec
  readonly getSecret: GetSecret
  /** BigQuery client settings (shorter waits between retries in tests; nothing in the functions). */
  readonly bigQuery?: Partial<BigQueryWarehouseOptions>
}
