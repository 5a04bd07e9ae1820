import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { RunTableResult } from '../../lib/use-cases/run-table.ts'
import { describeContractChanges } from './contract-changes.ts'

/** The line `dimsync plan` prints per table. */
export function describePlan(table: TableSpec, result: RunTableResult): string {
  const { keys, counts, bytesProcessed } = result.merge
  if (bytesProcessed !== undefined && counts === undefined) {
    // A BigQuery dry run prices the script without running it: bytes are known, counts are not.
    return (
      `${table.name}: ${result.rows} rows extracted; BigQuery estimates the merge would process ` +
      `${formatBytes(bytesProcessed)} (${bytesProcessed} bytes; a dry run: nothing was written, counts are known after a run)`
    )
  }
  return (
    `${table.name}: ${result.rows} rows extracted; would add ${keys?.newKeys ?? 0} new keys, change ${keys?.changedKeys ?? 0}, ` +
    `delete ${keys?.deletedKeys ?? 0}, leave ${counts?.unchangedEvents ?? 0} unchanged, recompute ${counts?.lateKeys ?? 0} late keys ` +
    `(${counts?.insertedVersions ?? 0} versions inserted, ${counts?.closedVersions ?? 0} closed)` +
    describeContractChanges(result.merge)
  )
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`
}
