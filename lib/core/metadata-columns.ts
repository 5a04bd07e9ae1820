/**
 * The metadata columns dimsync writes into every dimension, described once: their name in each preset, the
 * option that renames them in dimsync.yaml, their type, whether they may be NULL and what they mean. Config
 * (presets, overrides, the JSON schema), the dimension layout and the DDL (types, NOT NULL, descriptions) all
 * read this table.
 *
 * Presets exist so that a dimension migrated from dbt snapshots, Fivetran history mode or Databricks keeps the
 * names its downstream queries already use (docs/configuration.md, presets); the columns those tools do not have are named
 * with the same prefix so the table still reads as one family.
 */

export const PRESET_NAMES = Object.freeze(['dimsync', 'dbt', 'fivetran', 'databricks'] as const)

export type ColumnPreset = (typeof PRESET_NAMES)[number]

interface MetadataColumnContract {
  /** The dimsync.yaml option that renames the column (`columns: { valid_to: ended_at }`). */
  readonly option: string
  /** Warehouse-neutral type (DuckDB logical type name). */
  readonly type: string
  readonly notNull: boolean
  /** What the column holds, for column descriptions and the JSON schema. */
  readonly meaning: string
  readonly names: Readonly<Record<ColumnPreset, string>>
}

/** In dimension order (the surrogate key first; the source columns come right after it). */
export const METADATA_COLUMNS = Object.freeze({
  surrogateKey: {
    option: 'surrogate_key',
    type: 'BIGINT',
    notNull: true,
    meaning: 'surrogate key of the version, never reused',
    // dbt's dbt_scd_id and Fivetran's _fivetran_id are texts (hashes), not integers facts can point at: the
    // integer key gets a name of its own in those presets, so a query using theirs reads what it expects.
    names: { dimsync: 'dimsync_sk', dbt: 'dbt_sk', fivetran: '_fivetran_sk', databricks: '__dimsync_sk' },
  },
  validFrom: {
    option: 'valid_from',
    type: 'TIMESTAMPTZ',
    notNull: true,
    meaning: 'start of the version (inclusive, UTC)',
    names: {
      dimsync: 'valid_from',
      dbt: 'dbt_valid_from',
      fivetran: '_fivetran_start',
      databricks: '__START_AT',
    },
  },
  validTo: {
    option: 'valid_to',
    type: 'TIMESTAMPTZ',
    notNull: false,
    meaning: 'end of the version (exclusive, UTC); open versions hold the open end',
    names: { dimsync: 'valid_to', dbt: 'dbt_valid_to', fivetran: '_fivetran_end', databricks: '__END_AT' },
  },
  isCurrent: {
    option: 'is_current',
    type: 'BOOLEAN',
    notNull: true,
    meaning: 'true for the open version of the key',
    names: {
      dimsync: 'is_current',
      dbt: 'dbt_is_current',
      fivetran: '_fivetran_active',
      databricks: '__IS_CURRENT',
    },
  },
  isDeleted: {
    option: 'is_deleted',
    type: 'BOOLEAN',
    notNull: true,
    meaning: 'true when the version records a deletion of the key',
    // dbt's dbt_is_deleted is the text 'True'/'False' (DBT_ID_COLUMNS.isDeleted), derived from this flag.
    names: {
      dimsync: 'is_deleted',
      dbt: 'dbt_deleted',
      fivetran: '_fivetran_deleted',
      databricks: '__IS_DELETED',
    },
  },
  rowHash: {
    option: 'row_hash',
    type: 'VARCHAR',
    notNull: true,
    meaning: 'MD5 of the tracked columns (canonical text)',
    names: {
      dimsync: 'dimsync_row_hash',
      dbt: 'dbt_row_hash',
      fivetran: '_fivetran_row_hash',
      databricks: '__ROW_HASH',
    },
  },
  batchId: {
    option: 'batch_id',
    type: 'VARCHAR',
    notNull: true,
    meaning: 'batch that wrote the version',
    names: {
      dimsync: 'dimsync_batch_id',
      dbt: 'dbt_batch_id',
      fivetran: '_fivetran_batch_id',
      databricks: '__BATCH_ID',
    },
  },
} as const satisfies Record<string, MetadataColumnContract>)

export type MetadataColumn = keyof typeof METADATA_COLUMNS

/** The dimsync.yaml option names (`surrogate_key`, `valid_from`, ...). */
export type MetadataColumnOption = (typeof METADATA_COLUMNS)[MetadataColumn]['option']

/** Names of the metadata columns of one dimension (a preset's, possibly renamed one by one). */
export type MetadataColumnNames = { readonly [K in MetadataColumn]: string }

/** The metadata columns, in dimension order (which is also the order messages list them in). */
export const METADATA_COLUMN_KEYS: readonly MetadataColumn[] = Object.freeze(
  Object.keys(METADATA_COLUMNS) as MetadataColumn[],
)

/** Metadata column names per preset. */
export const COLUMN_PRESETS: Readonly<Record<ColumnPreset, MetadataColumnNames>> = Object.freeze(
  Object.fromEntries(
    PRESET_NAMES.map((preset) => [
      preset,
      Object.freeze(
        Object.fromEntries(METADATA_COLUMN_KEYS.map((k) => [k, METADATA_COLUMNS[k].names[preset]])),
      ),
    ]),
  ) as Record<ColumnPreset, MetadataColumnNames>,
)

/** The dimsync.yaml option of each metadata column. */
export const METADATA_COLUMN_OPTIONS: Readonly<Record<MetadataColumn, MetadataColumnOption>> = Object.freeze(
  Object.fromEntries(METADATA_COLUMN_KEYS.map((k) => [k, METADATA_COLUMNS[k].option])) as Record<
    MetadataColumn,
    MetadataColumnOption
  >,
)

/** The metadata columns of a dimension with these names: name and type, in dimension order. */
export function metadataColumnList(
  names: MetadataColumnNames,
): readonly { readonly name: string; readonly type: string }[] {
  return METADATA_COLUMN_KEYS.map((k) => ({ name: names[k], type: METADATA_COLUMNS[k].type }))
}

/** Which metadata column `column` is in a dimension with these names, if any. */
export function metadataColumnNamed(names: MetadataColumnNames, column: string): MetadataColumn | undefined {
  return METADATA_COLUMN_KEYS.find((k) => names[k] === column)
}

/**
 * How a dimension stores the end of a closed version in valid_to: `exclusive`, the next version's start (the
 * half-open window `[valid_from, valid_to)`); or `last_millisecond`, one millisecond before it, as Fivetran's
 * history mode writes `_fivetran_end` (so `t BETWEEN _fivetran_start AND _fivetran_end` works). Either way dimsync
 * reads windows as half-open: with `last_millisecond` every read adds the millisecond back (lib/sql/version-end.ts).
 */
export type EndStyle = 'exclusive' | 'last_millisecond'

/** dbt's own columns of a snapshot, which dimsync derives from each version's key and start. */
export interface DbtIdColumnNames {
  /** `dbt_scd_id`: MD5 hex of the key and `dbt_updated_at`, as dbt's snapshot_hash_arguments makes it. */
  readonly scdId: string
  /** `dbt_updated_at`: the version's start (what dbt writes for the timestamp and check strategies). */
  readonly updatedAt: string
  /** `dbt_is_deleted`: the text `'True'` on a version recording a deletion, else `'False'` (`hard_deletes: new_record`). */
  readonly isDeleted: string
}

export const DBT_ID_COLUMNS = Object.freeze({
  scdId: {
    name: 'dbt_scd_id',
    type: 'VARCHAR',
    notNull: true,
    meaning: "dbt's id of the version: MD5 hex of the key and dbt_updated_at, separated by '|'",
  },
  updatedAt: {
    name: 'dbt_updated_at',
    type: 'TIMESTAMPTZ',
    notNull: true,
    meaning: 'start of the version, as dbt_updated_at in a dbt snapshot (UTC)',
  },
  isDeleted: {
    name: 'dbt_is_deleted',
    type: 'VARCHAR',
    notNull: true,
    meaning: "'True' when the version records a deletion of the key, else 'False' (as dbt writes it)",
  },
} as const satisfies Record<
  keyof DbtIdColumnNames,
  Omit<MetadataColumnContract, 'option' | 'names'> & { name: string }
>)

/** Fivetran's _fivetran_synced: when the merge that wrote the version loaded its batch. */
export const SYNCED_COLUMN = Object.freeze({
  name: '_fivetran_synced',
  type: 'TIMESTAMPTZ',
  notNull: true,
  meaning: 'when dimsync loaded the batch that wrote the version (UTC), as Fivetran writes _fivetran_synced',
})

/**
 * What a preset's tool writes besides the columns every dimension has, so a query written against a dbt snapshot
 * or a Fivetran history table runs unchanged on the dimension.
 */
export interface PresetConventions {
  readonly endStyle: EndStyle
  /** The open end when `open_end` is not configured (ISO instant, or null: valid_to IS NULL). */
  readonly openEnd: string | null
  /** dbt: dbt_scd_id and dbt_updated_at. */
  readonly dbtIds?: DbtIdColumnNames
  /** fivetran: _fivetran_synced, the load time of the batch that wrote each version. */
  readonly syncedColumn?: string
  /**
   * The surrogate key's name in dimensions created by dimsync before these conventions (their valid_to or
   * surrogate key meant something else): such a dimension is refused rather than misread.
   */
  readonly formerSurrogateKey?: string
}

/** Fivetran's open end: `_fivetran_end` of active rows. */
export const FIVETRAN_OPEN_END = '9999-12-31T23:59:59.999Z'

export const PRESET_CONVENTIONS: Readonly<Record<ColumnPreset, PresetConventions>> = Object.freeze({
  dimsync: { endStyle: 'exclusive', openEnd: null },
  dbt: {
    endStyle: 'exclusive',
    openEnd: null,
    dbtIds: {
      scdId: DBT_ID_COLUMNS.scdId.name,
      updatedAt: DBT_ID_COLUMNS.updatedAt.name,
      isDeleted: DBT_ID_COLUMNS.isDeleted.name,
    },
    formerSurrogateKey: 'dbt_scd_id',
  },
  fivetran: {
    endStyle: 'last_millisecond',
    openEnd: FIVETRAN_OPEN_END,
    syncedColumn: SYNCED_COLUMN.name,
    formerSurrogateKey: '_fivetran_id',
  },
  databricks: { endStyle: 'exclusive', openEnd: null },
})

/**
 * The system-time columns of a bitemporal table (`system_time: true`): when dimsync learned a row and when a
 * later merge superseded it. Only bitemporal tables have them, so they are not in METADATA_COLUMNS (every
 * dimension has those). Named after the preset whose valid_from name the table uses, with the preset's prefix
 * (none of the tools the presets come from has a system-time column); other names get the dimsync names.
 */
export const SYSTEM_TIME_COLUMNS = Object.freeze({
  systemFrom: {
    type: 'TIMESTAMPTZ',
    notNull: true,
    meaning: 'when dimsync learned this row: the applied time of the merge that wrote it (inclusive, UTC)',
    names: {
      dimsync: 'system_from',
      dbt: 'dbt_system_from',
      fivetran: '_fivetran_system_start',
      databricks: '__SYSTEM_START_AT',
    },
  },
  systemTo: {
    type: 'TIMESTAMPTZ',
    notNull: false,
    meaning:
      'when a later merge superseded this row (exclusive, UTC); rows still known hold the open end, like valid_to',
    names: {
      dimsync: 'system_to',
      dbt: 'dbt_system_to',
      fivetran: '_fivetran_system_end',
      databricks: '__SYSTEM_END_AT',
    },
  },
} as const satisfies Record<string, Omit<MetadataColumnContract, 'option'>>)

export interface SystemTimeColumnNames {
  readonly systemFrom: string
  readonly systemTo: string
}

/** The system-time column names that go with a dimension's metadata names (see SYSTEM_TIME_COLUMNS). */
export function systemTimeColumnNames(names: MetadataColumnNames): SystemTimeColumnNames {
  const preset = PRESET_NAMES.find((p) => COLUMN_PRESETS[p].validFrom === names.validFrom) ?? 'dimsync'
  return Object.freeze({
    systemFrom: SYSTEM_TIME_COLUMNS.systemFrom.names[preset],
    systemTo: SYSTEM_TIME_COLUMNS.systemTo.names[preset],
  })
}
