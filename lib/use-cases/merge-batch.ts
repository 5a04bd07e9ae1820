import type { BatchManifest } from '../core/batch.ts'
import { MassDeleteRefusedError } from '../core/errors.ts'
import type { MergeCounts } from '../core/run-record.ts'
import {
  presetColumnList,
  planDimensionLayout,
  systemTimeColumnList,
  type DimensionLayout,
} from '../core/dimension-layout.ts'
import { metadataColumnList } from '../core/metadata-columns.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { MemoryRaised, ReadEstimate, Row, Warehouse } from '../ports/warehouse.ts'
import type { CompiledStatement, SqlDialect } from '../sql/dialect.ts'
import { renderMergeWork } from '../sql/render-batch-work.ts'
import { renderFeedPlanQuery } from '../sql/render-feed-plan.ts'
import { renderHistoryQuery } from '../sql/render-history.ts'
import type { MergePlan } from '../sql/render-merge.ts'
import { dimensionObjects } from '../sql/render-ddl.ts'
import type { FenceHolder } from '../sql/render-fence.ts'
import { dialectKeyBuckets } from '../sql/surrogate-keys.ts'
import { findRepeatedSnapshot } from './snapshot-redelivery.ts'
import { assertConfigMatchesContract, decideContract, type ContractDecision } from './contract-check.ts'
import { readLedgerFacts } from './ledger-facts.ts'
import type { ContractChange } from '../core/table-contract.ts'
import { recordedWatermark } from '../core/watermark.ts'

export interface MergeBatchRequest {
  readonly table: TableSpec
  readonly schema: string
  readonly batchId: string
  readonly now: Date
  readonly allowMassDelete?: boolean
  /** Dry run: run every statement, report the counts, roll back. */
  readonly dryRun?: boolean
  /** Called inside the transaction just before COMMIT (a lease check); throwing rolls the merge back. */
  readonly beforeCommit?: () => Promise<void>
  /**
   * The lease holder (its fencing token): a warehouse that runs the merge as one job (BigQuery) advances the
   * table's fence to it before the merge and checks it at COMMIT (render-fence.ts).
   */
  readonly fence?: FenceHolder
  /** Told when the merge ran out of memory and runs again with a higher limit (DuckDB's default limit). */
  readonly onMemoryRaised?: (raised: MemoryRaised) => void
  /** Number new surrogate keys per bucket of this many rows (default: the dialect's rowsPerKeyBucket). */
  readonly rowsPerKeyBucket?: number
  /**
   * Dry run (not as one script): the keys (column, value pairs each) whose versions the result shows before and
   * after the merge (`dimsync plan --keys`).
   */
  readonly inspectKeys?: readonly (readonly (readonly [string, string])[])[]
}

/** A change feed's batch, read by a dry run (`dimsync plan`) beside the merge's counts (render-feed-plan.ts). */
export interface FeedPlanCounts {
  readonly events: number
  readonly keysTouched: number
  readonly deleteEvents: number
  readonly truncateEvents: number
  readonly corrections: number
}

/** The versions of one key before a dry-run merge and after it (rolled back since). */
export interface KeyBeforeAfter {
  readonly key: readonly (readonly [string, string])[]
  readonly before: readonly Row[]
  readonly after: readonly Row[]
}

/** What the batch did to keys (fast path): first seen, changed, deleted. Late keys are counted in `counts`. */
export interface KeyChanges {
  readonly newKeys: number
  readonly changedKeys: number
  readonly deletedKeys: number
  /** A mirror: keys whose row was overwritten in place (their events are among `counts.unchangedEvents`). */
  readonly overwrittenKeys?: number
}

export interface MergeBatchResult {
  readonly status: 'merged' | 'already-applied' | 'dry-run'
  readonly batchId: string
  /** Already applied as another batch: the snapshot merged at the same extraction time, with the same content. */
  readonly sameAs?: string
  readonly counts?: MergeCounts
  readonly keys?: KeyChanges
  readonly statements: readonly CompiledStatement[]
  /** BigQuery: bytes the merge script processed, or (dry run) the bytes BigQuery estimates it would process. */
  readonly bytesProcessed?: number
  /** A BigQuery dry run: the bytes of each read of the merge, priced on its own. */
  readonly reads?: readonly ReadEstimate[]
  /** What a run would refuse or the user should know (BigQuery: a partition expiration deleting history). */
  readonly warnings?: readonly string[]
  /**
   * What changed in the table's config since its dimension's recorded contract, applied by this merge without a
   * version per key (a changed tracked set rehashed the current versions once).
   */
  readonly contractChanges?: readonly ContractChange[]
  /** Dry run of a change feed (not as one script): what its batch holds. */
  readonly feed?: FeedPlanCounts
  /** Dry run with `inspectKeys`: each key's versions before and after. */
  readonly keyHistories?: readonly KeyBeforeAfter[]
}

export interface MergeDeps {
  readonly warehouse: Warehouse<SqlDialect>
  readonly staging: StagingStore
}

/**
 * Merges one committed staged batch into its dimension, in one transaction together with the row that records
 * the batch as applied (docs/invariants.md, the merge). A batch already recorded is skipped, so a retried merge never applies a
 * batch twice.
 */
export async function mergeBatch(deps: MergeDeps, request: MergeBatchRequest): Promise<MergeBatchResult> {
  const { warehouse } = deps
  const objects = dimensionObjects(request.table, request.schema)
  await warehouse.createSchemaIfMissing(request.schema)
  // From the first read of the dimension to COMMIT: a merge planned on versions another installation is changing
  // would close them again and insert its own.
  return await warehouse.whileWriting([objects.dimension], () => mergeOpened(deps, request))
}

async function mergeOpened(deps: MergeDeps, request: MergeBatchRequest): Promise<MergeBatchResult> {
  const { warehouse } = deps
  const { table, batchId } = request
  const objects = dimensionObjects(table, request.schema)
  const d = warehouse.dialect
  const batch = await warehouse.openBatch(deps.staging, { table: table.name, batchId })
  try {
    const facts = await readLedgerFacts(warehouse, {
      batches: objects.batches,
      target: table.target,
      batchIds: [batchId],
      create: true,
    })
    if (facts.applied.has(batchId)) return { status: 'already-applied', batchId, statements: [] }
    assertConfigMatchesContract(table, facts)
    // A warehouse that runs the merge as one job checks the lease at COMMIT against a fence moved up before it.
    const fence = request.fence !== undefined && !request.dryRun ? request.fence : undefined
    const staged = await warehouse.stageBatch(batch, {
      table,
      batchId,
      schema: request.schema,
      ...(fence !== undefined ? { fence: { holder: fence, at: request.now.toISOString() } } : {}),
    })
    const existing = await warehouse.describeTable(objects.dimension)
    assertNotEmptyFirstLoad(request, batch, existing)
    const layout = planDimensionLayout(table, batchId, staged.columns, existing)
    const contract = await decideContract(warehouse, { table, objects, layout, existing, ledger: facts })
    const plan = {
      ...batchMerge(d, request, batch, layout, contract),
      ...(staged.stage !== undefined ? { stage: staged.stage } : {}),
      ...(fence !== undefined ? { fence } : {}),
    }
    const sameAs = await findRepeatedSnapshot(warehouse, plan)
    if (sameAs !== undefined) {
      // The batch was staged to compare the snapshot: no merge runs to drop it.
      await warehouse.dropStaged(staged)
      return { status: 'already-applied', batchId, sameAs, statements: [] }
    }
    const feed =
      request.dryRun && table.changes !== undefined
        ? feedCounts(await warehouse.query(renderFeedPlanQuery(d, plan, existing !== undefined)))
        : undefined
    const inspect = request.dryRun ? (request.inspectKeys ?? []) : []
    const history = (key: readonly (readonly [string, string])[]) =>
      renderHistoryQuery(d, table, objects.dimension, { key: key.map(([c, v]) => [c, v]) })
    const applied = await warehouse.applyWork(renderMergeWork(d, plan), {
      table,
      batchId,
      staged,
      dryRun: request.dryRun ?? false,
      ...(request.beforeCommit !== undefined ? { beforeCommit: request.beforeCommit } : {}),
      ...(request.onMemoryRaised !== undefined ? { onMemoryRaised: request.onMemoryRaised } : {}),
      ...(inspect.length > 0
        ? { around: { queries: inspect.map(history), before: existing !== undefined } }
        : {}),
      columns: [
        ...metadataColumnList(table.columns),
        ...presetColumnList(table),
        ...systemTimeColumnList(table),
        ...layout.stored,
        ...layout.derived,
      ],
    })
    const { row, around } = applied
    return {
      status: request.dryRun ? 'dry-run' : 'merged',
      batchId,
      counts: row === undefined ? undefined : toCounts(row),
      keys: row === undefined ? undefined : toKeyChanges(row),
      ...contractReport(contract),
      ...(feed !== undefined ? { feed } : {}),
      ...(around !== undefined
        ? {
            keyHistories: inspect.map((key, i) => ({
              key,
              before: around.before[i]!,
              after: around.after[i]!,
            })),
          }
        : {}),
      statements: applied.statements,
      ...(applied.bytesProcessed !== undefined ? { bytesProcessed: applied.bytesProcessed } : {}),
      ...(applied.reads !== undefined ? { reads: applied.reads } : {}),
      ...(applied.warnings !== undefined ? { warnings: applied.warnings } : {}),
    }
  } finally {
    await batch.release()
  }
}

/**
 * An empty full extract refused before the dimension exists, the way the mass-delete guard refuses one that
 * would empty a dimension: a source that was truncated or an export that failed must not found a dimension.
 */
function assertNotEmptyFirstLoad(
  request: MergeBatchRequest,
  batch: { readonly manifest: BatchManifest },
  existing: readonly unknown[] | undefined,
): void {
  const { table, batchId } = request
  // A delta or a change feed may find nothing new: only an empty snapshot is suspect.
  if (table.changes !== undefined || batch.manifest.mode !== 'full') return
  if (existing !== undefined || batch.manifest.rowCount > 0) return
  if (request.allowMassDelete) return
  throw new MassDeleteRefusedError(
    table.name,
    batchId,
    `table ${table.name}: batch ${batchId} is an empty full extract and ${table.target} does not exist yet; ` +
      'nothing was written. If the source really is empty, rerun with --allow-mass-delete',
  )
}

function batchMerge(
  d: SqlDialect,
  request: MergeBatchRequest,
  batch: { readonly manifest: BatchManifest },
  layout: DimensionLayout,
  contract: ContractDecision,
): MergePlan {
  const watermark = recordedWatermark(request.table, batch.manifest.watermarkCandidate)
  return {
    ledgerRecord: {
      ...(contract.record !== undefined ? { contract: contract.record } : {}),
      ...(watermark !== undefined ? { watermark } : {}),
    },
    rehashCurrent: contract.rehashCurrent,
    ...(contract.policyRewrite !== undefined ? { policyRewrite: contract.policyRewrite } : {}),
    keyBuckets: dialectKeyBuckets(d, batch.manifest.rowCount, request.rowsPerKeyBucket),
    table: request.table,
    layout,
    objects: dimensionObjects(request.table, request.schema),
    batchId: request.batchId,
    extractedAt: batch.manifest.extractedAt,
    appliedAt: request.now.toISOString(),
    mode: batch.manifest.mode,
    allowMassDelete: request.allowMassDelete ?? false,
  }
}

/** The safe contract changes a merge applied, for its report. */
function contractReport(contract: ContractDecision): Pick<MergeBatchResult, 'contractChanges'> {
  return contract.changes.length === 0 ? {} : { contractChanges: contract.changes }
}

function toCounts(row: Row | undefined): MergeCounts {
  const n = (v: unknown) => Number(v ?? 0)
  return {
    events: n(row?.events),
    insertedVersions: n(row?.inserted_versions),
    closedVersions: n(row?.closed_versions),
    deletedKeys: n(row?.deleted_keys),
    unchangedEvents: n(row?.unchanged_events),
    lateKeys: n(row?.late_keys),
  }
}

/** The key changes of a batch report (renderBatchReport). */
function toKeyChanges(row: Row | undefined): KeyChanges {
  const n = (v: unknown) => Number(v ?? 0)
  return {
    newKeys: n(row?.new_keys),
    changedKeys: n(row?.changed_keys),
    deletedKeys: n(row?.deleted_key_changes),
    ...(row?.overwritten_keys !== undefined ? { overwrittenKeys: n(row.overwritten_keys) } : {}),
  }
}

function feedCounts(rows: readonly Row[]): FeedPlanCounts {
  const row = rows[0] ?? {}
  const n = (name: string) => Number(row[name] ?? 0)
  return {
    events: n('events'),
    keysTouched: n('keys_touched'),
    deleteEvents: n('delete_events'),
    truncateEvents: n('truncate_events'),
    corrections: n('corrections'),
  }
}
