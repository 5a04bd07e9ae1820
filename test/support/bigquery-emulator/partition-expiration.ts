import type { Dataset, Row, StoredTable, TableMetadata } from './table-store.ts'
import { isNull, scalarText, timestampMicros, type Value } from './values.ts'

const DAY_MS = 86_400_000

/**
 * A time-partitioned table's partition expiration as BigQuery keeps it (`timePartitioning.expirationMs`): the
 * DDL option `partition_expiration_days`, else the dataset's `defaultPartitionExpirationMs`, copied when the table
 * is created (a later change of the dataset's default does not reach existing tables).
 */
export function withPartitionExpiration(
  metadata: TableMetadata,
  dataset: Dataset | undefined,
): TableMetadata {
  const partitioning = metadata.timePartitioning
  if (partitioning === undefined) return metadata
  const days = Number(metadata.ddlOptions?.partition_expiration_days ?? Number.NaN)
  const expirationMs = Number.isFinite(days)
    ? Math.round(days * DAY_MS)
    : partitioning.expirationMs !== undefined
      ? Number(partitioning.expirationMs)
      : dataset?.defaultPartitionExpirationMs
  if (expirationMs === undefined) return metadata
  return { ...metadata, timePartitioning: { ...partitioning, expirationMs: String(expirationMs) } }
}

/**
 * `ALTER TABLE … SET OPTIONS (partition_expiration_days = …)`: sets the table's partition expiration, or with NULL
 * removes it (partitions then never expire).
 */
export function partitionExpirationSet(
  metadata: TableMetadata,
  options: readonly { readonly name: string; readonly value: Value }[],
): TableMetadata {
  const option = options.find((o) => o.name.toLowerCase() === 'partition_expiration_days')
  const partitioning = metadata.timePartitioning
  if (option === undefined || partitioning === undefined) return metadata
  if (!isNull(option.value)) return withPartitionExpiration(metadata, undefined)
  const timePartitioning = { ...partitioning }
  delete timePartitioning.expirationMs
  const ddlOptions = { ...metadata.ddlOptions }
  delete ddlOptions.partition_expiration_days
  return { ...metadata, timePartitioning, ddlOptions }
}

/**
 * The rows of a time-partitioned table whose partition has not expired at `now`: a partition is deleted once its
 * start (the partitioning column truncated to the partition's unit, UTC) plus the expiration has passed. Rows with
 * a NULL partitioning value sit in the __NULL__ partition, which never expires.
 */
export function unexpiredRows(table: StoredTable, now: number): readonly Row[] {
  const partitioning = table.metadata.timePartitioning
  if (partitioning?.expirationMs === undefined || partitioning.field === undefined) return table.rows
  const index = table.columns.findIndex((c) => c.field.name === partitioning.field)
  if (index < 0) return table.rows
  const type = table.columns[index]!.type
  const expiration = Number(partitioning.expirationMs)
  return table.rows.filter((row) => {
    const cell = row.cells[index]!
    if (isNull(cell)) return true
    const start = partitionStart(instantOf(type.typeKind, type, cell), partitioning.type)
    return start + expiration > now
  })
}

function instantOf(kind: string, type: Parameters<typeof scalarText>[0], cell: Row['cells'][number]): number {
  if (kind === 'TYPE_TIMESTAMP') return Number(timestampMicros(cell) / 1000n)
  if (kind === 'TYPE_DATE') return Number((cell as { dateValue: number }).dateValue) * DAY_MS
  return Date.parse(`${scalarText(type, cell).replace(' ', 'T')}Z`)
}

function partitionStart(ms: number, unit: string): number {
  const t = new Date(ms)
  switch (unit) {
    case 'HOUR':
      return Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours())
    case 'MONTH':
      return Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), 1)
    case 'YEAR':
      return Date.UTC(t.getUTCFullYear(), 0, 1)
    default:
      return Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate())
  }
}
