/**
 * A partition expiration that reaches one of dimsync's partitioned tables. The dimension is partitioned by the
 * month of valid_to (its capture log by the month of captured_at): BigQuery deletes a partition once its start
 * plus the expiration has passed, so an expiration deletes closed versions, history lost without any error.
 */
export interface PartitionExpiration {
  /**
   * `table`: the table's own setting (`timePartitioning.expirationMs`, DDL `partition_expiration_days`);
   * `dataset`: the dataset's default, which BigQuery copies to a partitioned table when it is created.
   */
  readonly kind: 'table' | 'dataset'
  /** What the table is to the user: `dimension`, `capture log`. */
  readonly role: string
  readonly project: string
  readonly dataset: string
  readonly name: string
  readonly days: number
}

/** What the user can set to accept the loss: the way out when removing the expiration is not wanted. */
export const ALLOW_PARTITION_EXPIRATION = 'warehouse.allow_partition_expiration: true'

const ACCEPT = `or set ${ALLOW_PARTITION_EXPIRATION} to accept that BigQuery deletes old versions`

/**
 * Why merging `table` would lose closed history to a partition expiration, naming the setting and how to remove
 * it (the first one found: removing it shows the next); undefined when nothing expires.
 */
export function partitionExpirationProblem(
  table: string,
  expirations: readonly PartitionExpiration[],
): string | undefined {
  const [first] = expirations
  if (first === undefined) return undefined
  const days = `${formatDays(first.days)} days`
  const loss =
    `BigQuery would ${first.kind === 'dataset' ? 'then ' : ''}delete the closed versions of each month ${days} ` +
    'after it began, silently losing history; nothing was merged'
  const { project, dataset, name, role } = first
  if (first.kind === 'dataset')
    return (
      `table ${table}: dataset ${project}.${dataset} has a default partition expiration of ${days} ` +
      `(defaultPartitionExpirationMs), which BigQuery gives ${role} ${project}.${dataset}.${name} when dimsync ` +
      `creates it: ${loss}. Remove the default (ALTER SCHEMA ${quoted(project)}.${quoted(dataset)} SET OPTIONS ` +
      `(default_partition_expiration_days = NULL)), ${ACCEPT}`
    )
  return (
    `table ${table}: ${role} ${project}.${dataset}.${name} has a partition expiration of ${days} ` +
    `(partition_expiration_days): ${loss}. Remove it (ALTER TABLE ${[project, dataset, name].map(quoted).join('.')} ` +
    `SET OPTIONS (partition_expiration_days = NULL)), ${ACCEPT}`
  )
}

/** Days of an expiration in milliseconds, as BigQuery's option states it (fractions kept). */
export function daysOfMs(ms: number): number {
  return ms / 86_400_000
}

const formatDays = (days: number) => (Number.isInteger(days) ? String(days) : days.toFixed(2))
const quoted = (name: string) => `\`${name.replaceAll('\\', '\\\\').replaceAll('`', '\\`')}\``
