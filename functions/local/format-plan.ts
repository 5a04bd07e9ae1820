import type { FactSpec } from '../../lib/core/fact-spec.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { RunFactResult } from '../../lib/use-cases/run-fact.ts'
import type { RunTableResult } from '../../lib/use-cases/run-table.ts'
import { describeContractChanges } from './contract-changes.ts'

/** The line `dimsync plan` prints per table. */
export function describePlan(table: TableSpec, result: RunTableResult): string {
  const { keys, counts, bytesProcessed } = result.merge
  if (bytesProcessed !== undefined && counts === undefined) {
    // A BigQuery dry run prices the script without running it: bytes are known, counts are not.
    return (
      `${table.name}: ${result.rows} rows extracted; BigQuery estimates the merge would process ` +
      `${formatBytes(bytesProcessed)} (${bytesProcessed} bytes; a dry run: nothing was written, counts are known after a run)` +
      describeReads(result.merge.reads) +
      (result.merge.warnings ?? []).map((warning) => `\n  warning: ${warning}`).join('')
    )
  }
  // A mirror's rows overwritten in place are not unchanged, although they open no version.
  const overwritten = keys?.overwrittenKeys
  const unchanged = Math.max(0, (counts?.unchangedEvents ?? 0) - (overwritten ?? 0))
  return (
    `${table.name}: ${result.rows} rows extracted; would add ${keys?.newKeys ?? 0} new keys, change ${keys?.changedKeys ?? 0}, ` +
    `${overwritten === undefined ? '' : `overwrite ${overwritten}, `}` +
    `delete ${keys?.deletedKeys ?? 0}, leave ${unchanged} unchanged, recompute ${counts?.lateKeys ?? 0} late keys ` +
    `(${counts?.insertedVersions ?? 0} versions inserted, ${counts?.closedVersions ?? 0} closed)` +
    describeContractChanges(result.merge)
  )
}

/**
 * The reads of a BigQuery merge, each priced by its own dry run, and those BigQuery cannot price alone (the sum
 * above is then a lower bound: those read the batch's own temporary tables, or a dimension not created yet).
 */
function describeReads(reads: RunTableResult['merge']['reads']): string {
  if (reads === undefined || reads.length === 0) return ''
  const lines = reads.map((read) =>
    'bytes' in read
      ? `\n  ${read.label}: ${formatBytes(read.bytes)}`
      : `\n  ${read.label}: not estimated (${read.notEstimable})`,
  )
  const unpriced = reads.some((read) => !('bytes' in read))
  return `${unpriced ? '; at least, per read:' : '; per read:'}${lines.join('')}`
}

/**
 * The line `dimsync plan` prints per fact table. Its references resolve against the dimensions as the warehouse
 * holds them now: a plan of the tables before it changes nothing they would find.
 */
export function describeFactPlan(fact: FactSpec, result: RunFactResult): string {
  const unknown = (result.load.unknown ?? [])
    .map((u) => `${u.facts} to the unknown member of ${u.dimension} (${u.column})`)
    .join(', ')
  return (
    `${fact.name}: ${result.rows} rows extracted; would load ${result.load.facts ?? 0} facts into ${fact.target}` +
    `${unknown === '' ? '' : `, ${unknown}`} (resolved against the dimensions as they are now)`
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
