import type { MergeCounts } from '../core/run-record.ts'
import { planDimensionLayout } from '../core/dimension-layout.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { Row, Warehouse } from '../ports/warehouse.ts'
import type { CompiledStatement } from '../sql/dialect.ts'
import { dimensionObjects, renderBatchLedgerDdl, renderDimensionDdl } from '../sql/render-ddl.ts'
import { renderMerge, TEMP } from '../sql/render-merge.ts'
import { renderDuckDbViews } from '../sql/duckdb/duckdb-views.ts'
import { renderBigQueryMergeScript, stagingTableName } from '../sql/bigquery/bigquery-script.ts'
import { isScriptWarehouse, type ScriptWarehouse } from '../sql/bigquery/script-warehouse.ts'
import type { OpenedBatch } from '../ports/staging-store.ts'

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
}

/** What the batch did to keys (fast path): first seen, changed, deleted. Late keys are counted in `counts`. */
export interface KeyChanges {
  readonly newKeys: number
  readonly changedKeys: number
  readonly deletedKeys: number
}

export interface MergeBatchResult {
  readonly status: 'merged' | 'already-applied' | 'dry-run'
  readonly batchId: string
  readonly counts?: MergeCounts
  readonly keys?: KeyChanges
  readonly statements: readonly CompiledStatement[]
  /** BigQuery: bytes the merge script processed, or (dry run) the bytes BigQuery estimates it would process. */
  readonly bytesProcessed?: number
}

export interface MergeDeps {
  readonly warehouse: Warehouse
  readonly staging: StagingStore
}

/**
 * Merges one committed staged batch into its dimension, in one transaction together with the row that records
 * the batch as applied (DESIGN.md §4). A batch already recorded is skipped, so a retried merge never applies a
 * batch twice.
 */
export async function mergeBatch(deps: MergeDeps, request: MergeBatchRequest): Promise<MergeBatchResult> {
  const { warehouse } = deps
  const { table, batchId } = request
  const objects = dimensionObjects(table, request.schema)
  const d = warehouse.dialect
  const ledger = renderBatchLedgerDdl(d, objects.batches)

  const batch = await deps.staging.openBatch(table.name, batchId)
  try {
    const applied = await isApplied(warehouse, ledger, objects.batches, table.target, batchId)
    if (applied) return { status: 'already-applied', batchId, statements: [] }
    if (isScriptWarehouse(warehouse)) return await mergeAsScript(warehouse, request, batch)

    const staged = await warehouse.loadStaging(batch.partPaths)
    const existing = await warehouse.describeTable(objects.dimension)
    const layout = planDimensionLayout(table, batchId, staged, existing)
    const statements = [
      ...renderDimensionDdl(d, table, layout, objects),
      ...renderMerge(d, {
        table,
        layout,
        dimension: objects.dimension,
        captures: objects.captures,
        batches: objects.batches,
        batchId,
        extractedAt: batch.manifest.extractedAt,
        appliedAt: request.now.toISOString(),
        mode: batch.manifest.mode,
        allowMassDelete: request.allowMassDelete ?? false,
      }),
      ...(d.name === 'duckdb' ? renderDuckDbViews(table, objects) : []),
    ]
    const { counts, keys } = await warehouse.transaction(
      async (tx) => {
        for (const statement of statements) await tx.execute(statement)
        const rows = await tx.query(
          `SELECT * FROM ${d.table(objects.batches)} WHERE target = ${d.stringLiteral(table.target)} AND batch_id = ${d.stringLiteral(batchId)}`,
        )
        const keyRows = await tx.query(KEY_CHANGES_SQL(d.table({ name: TEMP.changes })))
        if (!request.dryRun) await request.beforeCommit?.()
        return { counts: toCounts(rows[0]), keys: toKeyChanges(keyRows[0]) }
      },
      { commit: !request.dryRun },
    )
    return {
      status: request.dryRun ? 'dry-run' : 'merged',
      batchId,
      counts,
      keys,
      statements: [ledger, ...statements],
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
  warehouse: ScriptWarehouse,
  request: MergeBatchRequest,
  batch: OpenedBatch,
): Promise<MergeBatchResult> {
  const { table, batchId } = request
  const objects = dimensionObjects(table, request.schema)
  const stage = { schema: request.schema, name: stagingTableName(table.target, batchId) }
  const columns = batch.manifest.columns
  await warehouse.loadBatch({ table, batchId, stage, partPaths: batch.partPaths, columns })
  const existing = await warehouse.describeTable(objects.dimension)
  const layout = planDimensionLayout(table, batchId, columns, existing)
  const script = renderBigQueryMergeScript(warehouse.dialect, {
    table,
    layout,
    objects,
    stage,
    batchId,
    extractedAt: batch.manifest.extractedAt,
    appliedAt: request.now.toISOString(),
    mode: batch.manifest.mode,
    allowMassDelete: request.allowMassDelete ?? false,
  })
  const statements = [...script.ddl, ...script.merge, ...script.after]
  if (!request.dryRun) await request.beforeCommit?.()
  const result = await warehouse.runMergeScript({ table, batchId, script, dryRun: request.dryRun ?? false })
  const row = result.row
  return {
    status: request.dryRun ? 'dry-run' : 'merged',
    batchId,
    counts: row === undefined ? undefined : toCounts(row),
    keys:
      row === undefined
        ? undefined
        : toKeyChanges({
            new_keys: row.new_keys ?? null,
            changed_keys: row.changed_keys ?? null,
            deleted_keys: row.deleted_key_changes ?? null,
          }),
    statements,
    bytesProcessed: result.bytesProcessed,
  }
}

async function isApplied(
  warehouse: Warehouse,
  ledger: CompiledStatement,
  batches: { schema?: string; name: string },
  target: string,
  batchId: string,
): Promise<boolean> {
  const d = warehouse.dialect
  // BigQuery refuses DDL on permanent tables inside a transaction: there the ledger DDL is a job of its own.
  if (isScriptWarehouse(warehouse)) await warehouse.query(ledger.sql)
  else await warehouse.transaction((tx) => tx.execute(ledger), { commit: true })
  const rows = await warehouse.query(
    `SELECT 1 AS applied FROM ${d.table(batches)} WHERE target = ${d.stringLiteral(target)} AND batch_id = ${d.stringLiteral(batchId)}`,
  )
  return rows.length > 0
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

const KEY_CHANGES_SQL = (changes: string) =>
  `SELECT SUM(CASE WHEN __dimsync_change_no = 1 AND NOT __dimsync_had_current AND NOT __dimsync_del THEN 1 ELSE 0 END) AS new_keys,
  SUM(CASE WHEN __dimsync_change_no = 1 AND __dimsync_had_current AND NOT __dimsync_del THEN 1 ELSE 0 END) AS changed_keys,
  SUM(CASE WHEN __dimsync_del THEN 1 ELSE 0 END) AS deleted_keys
FROM ${changes}`

function toKeyChanges(row: Row | undefined): KeyChanges {
  const n = (v: unknown) => Number(v ?? 0)
  return { newKeys: n(row?.new_keys), changedKeys: n(row?.changed_keys), deletedKeys: n(row?.deleted_keys) }
}
