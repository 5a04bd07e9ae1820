import type { DimensionColumn, DimensionLayout } from '../core/dimension-layout.ts'
import { ContractChangedError } from '../core/errors.ts'
import { metadataColumnList } from '../core/metadata-columns.ts'
import {
  configContract,
  configContractChanges,
  contractChanges,
  contractText,
  describeChange,
  parseContract,
  tableContract,
  trackedConfigChanged,
  unsafeChangeError,
  type ContractChange,
  type TableContract,
} from '../core/table-contract.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import type { DimensionObjects } from '../sql/render-ddl.ts'
import { presetColumnList, systemTimeColumnList } from '../core/dimension-layout.ts'
import type { LedgerFacts } from './ledger-facts.ts'

/** What a merge does about the table's contract (table-contract.ts). */
export interface ContractDecision {
  /** The contract to record with the batch; undefined when the recorded one still holds. */
  readonly record?: string
  /** Hash the current versions again over the tracked columns before the diff (the tracked set changed). */
  readonly rehashCurrent: boolean
  /** The changes since the recorded contract that this merge applies (none are unsafe). */
  readonly changes: readonly ContractChange[]
  /** Columns whose policy changed: every version of every key takes its values first (render-policy-rewrite.ts). */
  readonly policyRewrite?: { readonly type1: readonly string[]; readonly policies: boolean }
}

/**
 * Compares the contract `table` and `layout` give with the one recorded with the dimension, before anything is
 * written: an unsafe change throws ContractChangedError; safe ones are applied (a changed tracked set rehashes
 * the current versions once) and recorded. A dimension written before contracts were recorded gets its first
 * one, after the checks its columns allow (its key columns, its capture log), and its current versions are
 * rehashed once (a no-op unless what is tracked changed).
 */
export async function decideContract(
  warehouse: Warehouse<SqlDialect>,
  request: {
    readonly table: TableSpec
    readonly objects: DimensionObjects
    readonly layout: DimensionLayout
    /** The dimension's columns, undefined when it does not exist yet. */
    readonly existing: readonly DimensionColumn[] | undefined
    readonly ledger: LedgerFacts
  },
): Promise<ContractDecision> {
  const { table, layout, existing, ledger } = request
  const now = tableContract(table, layout)
  const text = contractText(now)
  if (existing === undefined) return { record: text, rehashCurrent: false, changes: [] }
  assertKeyColumnsExist(table, layout)
  if (ledger.contract === undefined) {
    await assertBuiltAlike(warehouse, table, request.objects, existing)
    return { record: text, rehashCurrent: true, changes: [] }
  }
  const recorded = parseContract(table, ledger.contract.text, ledger.contract.batchId)
  const changes = contractChanges(recorded, now)
  if (changes.some((c) => c.unsafe)) throw unsafeChangeError(table, changes, ledger.contract.batchId)
  const tracked = changes.find((c) => c.part === 'tracked')
  if (tracked !== undefined && request.objects.captures !== undefined && trackedConfigChanged(recorded, now))
    throw new ContractChangedError(
      table.name,
      `table ${table.name}: ${describeChange(tracked)} since ${table.target} was built (recorded by batch ` +
        `${ledger.contract.batchId}), but its valid_from is a source column: the states of its capture log, which ` +
        'late events are compared with, were hashed over the old tracked columns; nothing was written. Put the ' +
        `tracked columns back to ${tracked.from} in the config, or load table ${table.name} into a new target ` +
        `(target: ${table.target}_v2) to start its history over`,
    )
  const policyRewrite = rewrittenPolicies(recorded, layout, changes)
  return {
    ...(text === ledger.contract.text ? {} : { record: text }),
    rehashCurrent: tracked !== undefined,
    changes,
    ...(policyRewrite !== undefined ? { policyRewrite } : {}),
  }
}

/**
 * What the policies of existing versions must be brought to: columns that were tracked or kept first and are now
 * type 1, and whether a keep_first, previous_value or current_value changed (or one's column changed type).
 */
function rewrittenPolicies(
  recorded: TableContract,
  layout: DimensionLayout,
  changes: readonly ContractChange[],
): ContractDecision['policyRewrite'] {
  const before = new Set([...recorded.tracked, ...(recorded.keepFirst ?? [])])
  const type1 = layout.type1.map((c) => c.name).filter((c) => before.has(c))
  const policyParts = new Set(['keep_first', 'previous_value', 'current_value'])
  const policies = type1.length > 0 || changes.some((c) => policyParts.has(c.part))
  if (!policies) return undefined
  return { type1, policies }
}

/**
 * Before a run extracts anything: the changes the config alone shows (key, mode, valid_from, system time,
 * metadata columns) against the recorded contract, refused as unsafe. Nothing to check before a contract is
 * recorded.
 */
export function assertConfigMatchesContract(table: TableSpec, ledger: LedgerFacts): void {
  if (ledger.contract === undefined) return
  const recorded = parseContract(table, ledger.contract.text, ledger.contract.batchId)
  const changes = configContractChanges(recorded, configContract(table))
  if (changes.length > 0) throw unsafeChangeError(table, changes, ledger.contract.batchId)
}

/** A key column the dimension lacks would be added empty on every version written so far. */
function assertKeyColumnsExist(table: TableSpec, layout: DimensionLayout): void {
  const added = layout.addColumns.filter((c) => table.key.includes(c.name))
  if (added.length === 0) return
  throw new ContractChangedError(
    table.name,
    `table ${table.name}: key (${table.key.join(', ')}) names ${added.map((c) => c.name).join(', ')}, which ` +
      `${table.target} does not have: the dimension was built with another key, and its versions cannot be read ` +
      `by this one; nothing was written. Put key back in the config, or load table ${table.name} into a new ` +
      `target (target: ${table.target}_v2) to start its history over`,
  )
}

/**
 * A dimension an earlier dimsync wrote has no recorded contract: what its tables show is checked instead. Its key
 * columns are its NOT NULL source columns (a key the config dropped), and it has a capture log exactly when its
 * valid_from was a source column.
 */
async function assertBuiltAlike(
  warehouse: Warehouse<SqlDialect>,
  table: TableSpec,
  objects: DimensionObjects,
  existing: readonly DimensionColumn[],
): Promise<void> {
  const metadata = new Set(
    [...metadataColumnList(table.columns), ...presetColumnList(table), ...systemTimeColumnList(table)].map(
      (c) => c.name,
    ),
  )
  const formerKeys = existing.filter((c) => c.notNull && !metadata.has(c.name) && !table.key.includes(c.name))
  if (formerKeys.length > 0)
    throw new ContractChangedError(
      table.name,
      `table ${table.name}: key (${table.key.join(', ')}) leaves out ${formerKeys.map((c) => c.name).join(', ')}, ` +
        `a key column of ${table.target} (NOT NULL): the dimension was built with another key, and its versions ` +
        `cannot be read by this one; nothing was written. Put key back in the config, or load table ` +
        `${table.name} into a new target (target: ${table.target}_v2) to start its history over`,
    )
  const log = objects.captures ?? {
    schema: objects.dimension.schema,
    name: `${table.target}_dimsync_captures`,
  }
  const hasLog = (await warehouse.describeTable(log)) !== undefined
  const wantsLog = table.validFrom.kind === 'column'
  if (hasLog === wantsLog) return
  const built = hasLog ? 'a source column' : 'extracted_at'
  const now = wantsLog ? 'a source column' : 'extracted_at'
  throw new ContractChangedError(
    table.name,
    `table ${table.name}: valid_from ${built} → ${now} since ${table.target} was built (it ${hasLog ? 'has' : 'has no'} ` +
      `capture log ${log.name}); the versions already written cannot be read that way, so nothing was written. ` +
      `Put valid_from back to ${built} in the config, or load table ${table.name} into a new target ` +
      `(target: ${table.target}_v2) to start its history over`,
  )
}
