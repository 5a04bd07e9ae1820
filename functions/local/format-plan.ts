import type { FactSpec } from '../../lib/core/fact-spec.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { RunFactResult } from '../../lib/use-cases/run-fact.ts'
import type { KeyBeforeAfter } from '../../lib/use-cases/merge-batch.ts'
import { parseKey } from '../../lib/use-cases/read-history.ts'
import type { RunTableResult } from '../../lib/use-cases/run-table.ts'
import { describeContractChanges } from './contract-changes.ts'
import { formatHistory } from './format-history.ts'

/** The line `dimsync plan` prints per table. */
export function describePlan(table: TableSpec, result: RunTableResult): string {
  return (
    describeMergePlan(table, result) +
    (result.leftStaged ?? [])
      .map(
        (batchId) =>
          `\n  warning: batch ${batchId} was staged by an earlier run and not merged: dimsync run merges it (or is ` +
          'refused by it) before this extract; these figures leave it out',
      )
      .join('')
  )
}

function describeMergePlan(table: TableSpec, result: RunTableResult): string {
  const { keys, counts, bytesProcessed } = result.merge
  if (bytesProcessed !== undefined && counts === undefined) {
    // A BigQuery dry run prices the script without running it: bytes are known, counts are not.
    const feed = result.merge.feed
    const holds =
      feed === undefined
        ? ''
        : `; the batch holds ${feed.events} events of ${feed.keysTouched} keys (${feed.corrections} corrections ` +
          `in place, ${feed.deleteEvents} delete events, ${feed.truncateEvents} truncates)`
    return (
      `${table.name}: ${result.rows} rows extracted; BigQuery estimates the merge would process ` +
      `${formatBytes(bytesProcessed)} (${bytesProcessed} bytes; a dry run: nothing was written, counts are known after a run)` +
      holds +
      describeReads(result.merge.reads) +
      (result.merge.warnings ?? []).map((warning) => `\n  warning: ${warning}`).join('')
    )
  }
  if (result.merge.feed !== undefined) return describeFeedPlan(table, result)
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
 * A change feed's plan, in the words of what its events do: `cust_feed: 7 events read, 3 keys touched; would open
 * 4 versions and close 2, re-fold 1 late key, correct 1 event in place, delete 1 key (1 delete event), apply 1
 * truncate; 1 event changes nothing`.
 */
function describeFeedPlan(table: TableSpec, result: RunTableResult): string {
  const feed = result.merge.feed!
  const counts = result.merge.counts
  const n = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`
  return (
    `${table.name}: ${n(feed.events, 'event')} read, ${n(feed.keysTouched, 'key')} touched; would open ` +
    `${n(counts?.insertedVersions ?? 0, 'version')} and close ${counts?.closedVersions ?? 0}, ` +
    `re-fold ${n(counts?.lateKeys ?? 0, 'late key')}, correct ${n(feed.corrections, 'event')} in place, ` +
    `delete ${n(counts?.deletedKeys ?? 0, 'key')} (${n(feed.deleteEvents, 'delete event')}), ` +
    `apply ${n(feed.truncateEvents, 'truncate')}; ${n(counts?.unchangedEvents ?? 0, 'event')} ` +
    `${(counts?.unchangedEvents ?? 0) === 1 ? 'changes' : 'change'} nothing` +
    describeContractChanges(result.merge)
  )
}

/** `--keys 101,102`, or for a composite key `col=value,col=value;col=value,col=value`. */
export function parsePlanKeys(table: TableSpec, text: string): (readonly [string, string])[][] {
  const keys = table.key.length === 1 && !text.includes('=') ? text.split(',') : text.split(';')
  return keys
    .map((key) => key.trim())
    .filter((key) => key !== '')
    .map((key) => parseKey(table, key))
}

/** Each key's versions before the planned merge and after it, as `dimsync history` shows them. */
export function describeKeysBeforeAfter(table: TableSpec, keys: readonly KeyBeforeAfter[]): string {
  const indent = (text: string) =>
    text
      .trimEnd()
      .split('\n')
      .map((line) => `  ${line}`)
      .join('\n')
  const versions = (rows: KeyBeforeAfter['before']) =>
    rows.length === 0
      ? '    (no versions)'
      : indent(formatHistory(table, rows, 'table').split('\n').slice(2).join('\n'))
  return keys
    .map(
      ({ key, before, after }) =>
        `key ${key.map(([c, v]) => `${c}=${v}`).join(', ')}\n  before:\n${versions(before)}\n  after:\n${versions(after)}\n`,
    )
    .join('')
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
