/**
 * The resolved, validated description of one dimension table. Produced by `lib/config` from dimsync.yaml;
 * consumed by the planner, the adapters and the CLI. Pure data: no I/O, frozen after parsing.
 */

export type DeletePolicy = 'ignore' | 'invalidate' | 'new_record'

/** Where a table's rows come from. Database sources are added beside `file` without touching the planner. */
export type SourceSpec = FileSourceSpec | DatabaseSourceSpec

export interface FileSourceSpec {
  readonly type: 'file'
  /** A path or a glob, relative to the config file's folder; all matching files form one snapshot. */
  readonly path: string
  readonly format: 'csv' | 'parquet'
  /** CSV options; ignored for Parquet. */
  readonly csv: { readonly delimiter: string; readonly header: boolean }
}

export interface DatabaseSourceSpec {
  readonly type: 'postgres' | 'mysql'
  /** Name of the environment variable that holds the connection URL (never the URL itself). */
  readonly urlEnv: string
  /** Either a (schema-qualified) table or a SELECT query. */
  readonly table?: string
  readonly query?: string
}

export type ExtractSpec =
  | { readonly mode: 'full' }
  | { readonly mode: 'incremental'; readonly cursor: string; readonly lookbackMinutes: number }

/**
 * Where an event's business time (`valid_from`) comes from: the extraction time of its batch, or a source
 * column holding the time the row changed. Only change-time tables accept late events (see merge docs).
 */
export type ValidFromSpec =
  { readonly kind: 'extracted_at' } | { readonly kind: 'column'; readonly column: string }

export type TrackedSpec =
  | { readonly kind: 'list'; readonly columns: readonly string[] }
  | { readonly kind: 'all_except'; readonly columns: readonly string[] }

/** Names of the metadata columns dimsync writes into a dimension. */
export interface MetadataColumnNames {
  readonly surrogateKey: string
  readonly validFrom: string
  readonly validTo: string
  readonly isCurrent: string
  readonly isDeleted: string
  readonly rowHash: string
  readonly batchId: string
}

export type ColumnPreset = 'dimsync' | 'dbt' | 'fivetran' | 'databricks'

/** `null`: open versions have `valid_to IS NULL`; otherwise a far-future sentinel instant (ISO, UTC). */
export type OpenEnd = null | string

export interface TableSpec {
  /** Logical name used by the CLI, state and logs (`customers`). */
  readonly name: string
  readonly source: SourceSpec
  /** Dimension table name in the warehouse (`dim_customer`). */
  readonly target: string
  /** Natural key columns, in order. Never empty. */
  readonly key: readonly string[]
  readonly extract: ExtractSpec
  readonly validFrom: ValidFromSpec
  readonly tracked: TrackedSpec
  /** Source columns not stored in the dimension at all. */
  readonly exclude: readonly string[]
  readonly deletes: DeletePolicy
  /** Largest share (0..1] of current keys a single batch may delete by absence. */
  readonly maxDeleteShare: number
  readonly openEnd: OpenEnd
  readonly columns: MetadataColumnNames
  /** Optional source column whose non-NULL (or true) value marks a row as deleted (soft delete). */
  readonly softDeleteColumn?: string
}

export interface WarehouseSpec {
  readonly type: 'duckdb'
  /** DuckDB database file, relative to the config file's folder. */
  readonly path: string
  readonly schema: string
}

export interface ProjectSpec {
  /** Absolute path of the config file it was read from (for messages). */
  readonly configPath: string
  /** Absolute folder every relative path in the config is resolved against. */
  readonly baseDir: string
  readonly warehouse: WarehouseSpec
  readonly staging: { readonly type: 'local'; readonly path: string }
  readonly state: { readonly type: 'local'; readonly path: string }
  readonly tables: readonly TableSpec[]
}
