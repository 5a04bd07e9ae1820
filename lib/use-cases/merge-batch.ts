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
import {
  isScriptWarehouse,
  type MemoryRaised,
  type Row,
  type ScriptWarehouse,
  type Warehouse,
  type ReadEstimate,
} from '../ports/warehouse.ts'
import type { CompiledStatement, SqlDialect } from '../sql/dialect.ts'
import { renderBatchReport } from '../sql/render-batch-queries.ts'
import { renderBatchMerge } from '../sql/render-batch-merge.ts'
import { renderFeedPlanQuery } from '../sql/render-feed-plan.ts'
import { renderHistoryQuery } from '../sql/render-history.ts'
import { foundsDimension } from '../sql/render-first-load.ts'
import type { MergePlan } from '../sql/render-merge.ts'
import { dimensionObjects, renderBatchLedgerDdl } from '../sql/render-ddl.ts'
import { renderMergeScript, stagingTableName } from '../sql/render-merge-script.ts'
import { FENCE_TABLE, renderFenceAdvance, renderFenceDdl, type FenceHolder } from '../sql/render-fence.ts'
import type { BatchOnDemand } from '../ports/staging-store.ts'
import { keyBucketsFor } from '../sql/surrogate-keys.ts'
import { findRepeatedSnapshot } from './snapshot-redelivery.ts'
import { assertConfigMatchesContract, decideContract, type ContractDecision } from './contract-check.ts'
import { readLedgerFacts, runDdl, type LedgerFacts } from './ledger-facts.ts'
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
  const { table, batchId } = request
  const objects = dimensionObjects(table, request.schema)
  const d = warehouse.dialect
  const ledger = renderBatchLedgerDdl(d, objects.batches)
  await warehouse.createSchemaIfMissing(request.schema)
  const readLedger = () =>
    readLedgerFacts(warehouse, {
      batches: objects.batches,
      target: table.target,
      batchIds: [batchId],
      create: true,
    })

  if (isScriptWarehouse(warehouse)) {
    // The load fetches the parts group by group (the function's /tmp is smaller than a large batch).
    const batch = await deps.staging.openBatchOnDemand(table.name, batchId)
    const facts = await readLedger()
    if (facts.applied.has(batchId)) return { status: 'already-applied', batchId, statements: [] }
    assertConfigMatchesContract(table, facts)
    return await mergeAsScript(warehouse, request, batch, facts)
  }
  const batch = await deps.staging.openBatch(table.name, batchId)
  try {
    const facts = await readLedger()
    if (facts.applied.has(batchId)) return { status: 'already-applied', batchId, statements: [] }

    assertConfigMatchesContract(table, facts)
    const staged = await warehouse.loadStaging(batch.partPaths, { table: table.name, batchId })
    const existing = await warehouse.describeTable(objects.dimension)
    assertNotEmptyFirstLoad(request, batch, existing)
    const layout = planDimensionLayout(table, batchId, staged, existing)
    const contract = await decideContract(warehouse, { table, objects, layout, existing, ledger: facts })
    const plan = batchMerge(d, request, batch, layout, contract)
    const sameAs = await findRepeatedSnapshot(warehouse, plan)
    if (sameAs !== undefined) return { status: 'already-applied', batchId, sameAs, statements: [] }
    const feed =
      request.dryRun && table.changes !== undefined
        ? feedCounts(await warehouse.query(renderFeedPlanQuery(d, plan, existing !== undefined)))
        : undefined
    const inspect = request.dryRun ? (request.inspectKeys ?? []) : []
    const history = (
      key: readonly (readonly [string, string])[],
      on: { query(sql: string): Promise<Row[]> },
    ) => on.query(renderHistoryQuery(d, table, objects.dimension, { key: key.map(([c, v]) => [c, v]) }))
    const before =
      existing === undefined
        ? inspect.map(() => [])
        : await Promise.all(inspect.map((k) => history(k, warehouse)))
    const after: Row[][] = []
    const { ddl, merge, views } = renderBatchMerge(d, plan)
    // DDL that cannot roll back with the merge runs before it, on its own (every DDL statement is idempotent).
    const [ddlBefore, inside] = d.capabilities.transactionalDdl
      ? [[], [...ddl, ...merge, ...views]]
      : [[...ddl, ...views], merge]
    for (const statement of ddlBefore) await runDdl(warehouse, statement)
    const report = await warehouse.transaction(
      async (tx) => {
        for (const statement of inside) await tx.execute(statement)
        const [row] = await tx.query(renderBatchReport(d, objects.batches, table.target, batchId, plan))
        for (const key of inspect) after.push(await history(key, tx))
        if (!request.dryRun) await request.beforeCommit?.()
        return row
      },
      { commit: !request.dryRun, onMemoryRaised: request.onMemoryRaised, firstLoad: foundsDimension(plan) },
    )
    return {
      status: request.dryRun ? 'dry-run' : 'merged',
      batchId,
      counts: toCounts(report),
      keys: toKeyChanges(report),
      ...contractReport(contract),
      ...(feed !== undefined ? { feed } : {}),
      ...(inspect.length > 0
        ? { keyHistories: inspect.map((key, i) => ({ key, before: before[i]!, after: after[i]! })) }
        : {}),
      statements: [ledger, ...ddlBefore, ...inside],
    }
  } finally {
    await batch.release()
  }
}

/**
 * BigQuery: load the parts into the batch's staging table, then run DDL, the merge (one transaction with the
 * ledger row) and the counts as one script job. A dry run loads the staging table (load jobs are free) and asks
 * BigQuery for the bytes the script would process, without running it.
 */
async function mergeAsScript(
  warehouse: ScriptWarehouse<SqlDialect>,
  request: MergeBatchRequest,
  batch: BatchOnDemand,
  facts: LedgerFacts,
): Promise<MergeBatchResult> {
  const { table, batchId } = request
  const objects = dimensionObjects(table, request.schema)
  const stage = { schema: request.schema, name: stagingTableName(table.target, batchId) }
  const columns = batch.manifest.columns
  if (request.fence !== undefined && !request.dryRun) await advanceFence(warehouse, request, request.fence)
  await warehouse.loadBatch({
    table,
    batchId,
    stage,
    parts: batch.parts,
    columns,
    rowCount: batch.manifest.rowCount,
  })
  const existing = await warehouse.describeTable(objects.dimension)
  assertNotEmptyFirstLoad(request, batch, existing)
  const layout = planDimensionLayout(table, batchId, columns, existing)
  const contract = await decideContract(warehouse, { table, objects, layout, existing, ledger: facts })
  const plan = {
    ...batchMerge(warehouse.dialect, request, batch, layout, contract),
    stage,
    ...(request.fence !== undefined && !request.dryRun ? { fence: request.fence } : {}),
  }
  const sameAs = await findRepeatedSnapshot(warehouse, plan)
  if (sameAs !== undefined) {
    // The staging table was loaded to compare the snapshot: no script runs to drop it.
    await warehouse.query(warehouse.dialect.dropTableIfExists(stage))
    return { status: 'already-applied', batchId, sameAs, statements: [] }
  }
  // A dry run does not run the script (its counts are unknown), but what a feed's batch holds is read.
  const feed =
    request.dryRun && table.changes !== undefined
      ? feedCounts(
          await warehouse.query(renderFeedPlanQuery(warehouse.dialect, plan, existing !== undefined)),
        )
      : undefined
  const script = renderMergeScript(warehouse.dialect, plan)
  const statements = [...script.ddl, ...script.merge, ...script.after]
  if (!request.dryRun) await request.beforeCommit?.()
  const result = await warehouse.runMergeScript({
    table,
    batchId,
    script,
    stage,
    dryRun: request.dryRun ?? false,
    columns: [
      ...metadataColumnList(table.columns),
      ...presetColumnList(table),
      ...systemTimeColumnList(table),
      ...layout.stored,
      ...layout.derived,
    ],
  })
  const row = result.row
  return {
    status: request.dryRun ? 'dry-run' : 'merged',
    batchId,
    counts: row === undefined ? undefined : toCounts(row),
    keys: row === undefined ? undefined : toKeyChanges(row),
    ...contractReport(contract),
    ...(feed !== undefined ? { feed } : {}),
    statements,
    bytesProcessed: result.bytesProcessed,
    ...(result.reads === undefined ? {} : { reads: result.reads }),
    ...(result.warnings === undefined ? {} : { warnings: result.warnings }),
  }
}

/**
 * Moves the table's lease fence up to this holder's token before its merge (one transaction; never down), so a
 * holder whose lease lapsed finds the fence past its token at COMMIT.
 */
async function advanceFence(
  warehouse: ScriptWarehouse<SqlDialect>,
  request: MergeBatchRequest,
  holder: FenceHolder,
): Promise<void> {
  const d = warehouse.dialect
  const fences = { schema: request.schema, name: FENCE_TABLE }
  await runDdl(warehouse, renderFenceDdl(d, fences))
  const statements = renderFenceAdvance(d, fences, request.table.target, holder, request.now.toISOString())
  await warehouse.transaction(
    async (tx) => {
      for (const statement of statements) await tx.execute(statement)
    },
    { commit: true },
  )
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
    keyBuckets: keyBucketsFor(
      batch.manifest.rowCount,
      request.rowsPerKeyBucket ?? d.capabilities.rowsPerKeyBucket,
    ),
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
