import type { CompiledStatement } from '../core/compiled-sql.ts'
import { planFactLayout, type FactLayout } from '../core/fact-layout.ts'
import { factStagingTable, type FactSpec } from '../core/fact-spec.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { BatchOnDemand, OpenedBatch, StagingStore } from '../ports/staging-store.ts'
import {
  isScriptWarehouse,
  type MemoryRaised,
  type Row,
  type ScriptWarehouse,
  type Warehouse,
} from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { renderAppliedBatchQuery } from '../sql/render-batch-queries.ts'
import { dimensionObjects, renderBatchLedgerDdl } from '../sql/render-ddl.ts'
import { factObjects } from '../sql/render-fact-ddl.ts'
import { renderFactDdl, renderFactScript } from '../sql/render-fact-script.ts'
import {
  renderFactLoad,
  renderFactReport,
  FEED_REPORT,
  inferredCountColumn,
  unknownCountColumn,
  type FactLoadPlan,
} from '../sql/render-fact-load.ts'
import { stagingTableName } from '../sql/render-merge-script.ts'
import { inferredColumnName } from '../core/inferred-member.ts'
import { renderInferredFlagColumn } from '../sql/render-inferred-member.ts'
import { renderUnknownMember, renderUnknownMemberQuery } from '../sql/render-unknown-member.ts'
import { keyBucketsFor } from '../sql/surrogate-keys.ts'

export interface LoadFactBatchRequest {
  readonly fact: FactSpec
  /** The project's dimensions; the fact's references are looked up among them by name. */
  readonly dimensions: readonly TableSpec[]
  readonly schema: string
  readonly batchId: string
  readonly now: Date
  /** Run every statement and report the counts, then roll back (nothing is written, no unknown member added). */
  readonly dryRun?: boolean
  /** The load ran out of the warehouse's memory and runs again with more (TransactionOptions.onMemoryRaised). */
  readonly onMemoryRaised?: (raised: MemoryRaised) => void
}

/** How many facts of one reference point at its dimension's unknown member. */
export interface UnknownMemberCount {
  readonly dimension: string
  readonly column: string
  readonly facts: number
  /** References that infer members: the placeholder versions the batch created in the dimension. */
  readonly inferredMembers?: number
}

export interface LoadFactBatchResult {
  readonly status: 'loaded' | 'already-applied' | 'dry-run'
  readonly batchId: string
  /** Facts of the batch now stored. */
  readonly facts?: number
  /** Per reference, in the order of the fact's references. */
  readonly unknown?: readonly UnknownMemberCount[]
  /** A change feed with an order: what its changes did besides the facts stored. */
  readonly feed?: FactFeedCounts
  readonly statements: readonly CompiledStatement[]
}

/** Of a change feed's batch (with an order): the changes applied as deletes, and those that changed nothing. */
export interface FactFeedCounts {
  readonly deletes: number
  /** Not newer than their fact's latest change (later in the batch, or loaded before): nothing to apply. */
  readonly superseded: number
}

export interface LoadFactDeps {
  readonly warehouse: Warehouse<SqlDialect>
  readonly staging: StagingStore
}

/**
 * Loads one committed staged batch of a fact table (staged under the fact's name): every fact is stored with
 * the surrogate key of the version of each referenced dimension that was true at its event time, or of the
 * dimension's unknown member (added to the dimension the first time a fact needs it). One transaction with the
 * ledger row: a batch already loaded is skipped, so a re-delivered batch changes nothing.
 */
export async function loadFactBatch(
  deps: LoadFactDeps,
  request: LoadFactBatchRequest,
): Promise<LoadFactBatchResult> {
  const { warehouse } = deps
  const { fact, batchId } = request
  const d = warehouse.dialect
  const objects = factObjects(fact, request.schema)
  const ledger = renderBatchLedgerDdl(d, objects.batches)
  await runDdl(warehouse, ledger)
  if ((await warehouse.query(renderAppliedBatchQuery(d, objects.batches, fact.target, batchId))).length > 0)
    return { status: 'already-applied', batchId, statements: [] }

  // BigQuery's load fetches the parts group by group (a function's /tmp is smaller than a large batch).
  const batch: OpenedBatch | BatchOnDemand = isScriptWarehouse(warehouse)
    ? await deps.staging.openBatchOnDemand(fact.name, batchId)
    : await deps.staging.openBatch(fact.name, batchId)
  try {
    const flags = request.dryRun ? [] : await addMissingInferredFlags(warehouse, request)
    const dimensions = await Promise.all(
      fact.references.map(async (r) => {
        const table = request.dimensions.find((t) => t.name === r.dimension)
        if (table === undefined)
          throw new Error(
            `fact ${fact.name}: the project has no dimension ${r.dimension} (configuration checks it)`,
          )
        const ref = dimensionObjects(table, request.schema).dimension
        return { table, columns: await warehouse.describeTable(ref) }
      }),
    )
    const stage = isScriptWarehouse(warehouse)
      ? { schema: request.schema, name: stagingTableName(fact.target, batchId) }
      : undefined
    const staged =
      'partPaths' in batch
        ? await warehouse.loadStaging(batch.partPaths, { table: fact.name, batchId })
        : batch.manifest.columns
    const existing = await warehouse.describeTable(objects.table)
    const layout = planFactLayout(fact, batchId, staged, dimensions, existing)
    const plan: FactLoadPlan = {
      fact,
      layout,
      objects,
      schema: request.schema,
      batchId,
      extractedAt: batch.manifest.extractedAt,
      appliedAt: request.now.toISOString(),
      mode: batch.manifest.mode,
      ...(stage !== undefined ? { stage } : {}),
      keyBuckets: keyBucketsFor(batch.manifest.rowCount, d.capabilities.rowsPerKeyBucket),
    }
    const unknownMembers = request.dryRun ? [] : await addMissingUnknownMembers(warehouse, request, layout)
    const { row, statements } =
      isScriptWarehouse(warehouse) && plan.stage !== undefined && 'parts' in batch
        ? await runAsScript(warehouse, request, batch, { ...plan, stage: plan.stage })
        : await runInTransaction(warehouse, request, plan)
    return {
      status: request.dryRun ? 'dry-run' : 'loaded',
      batchId,
      ...(row !== undefined ? reportOf(fact, row) : {}),
      statements: [...flags, ...unknownMembers, ...statements],
    }
  } finally {
    if ('release' in batch) await batch.release()
  }
}

/** DuckDB: the DDL (inside when it is transactional), the load and the report in one transaction. */
async function runInTransaction(
  warehouse: Warehouse<SqlDialect>,
  request: LoadFactBatchRequest,
  plan: FactLoadPlan,
): Promise<{ row?: Row; statements: CompiledStatement[] }> {
  const d = warehouse.dialect
  const ddl = renderFactDdl(d, plan)
  const load = renderFactLoad(d, plan)
  const inside = d.capabilities.transactionalDdl ? [...ddl, ...load] : load
  if (!d.capabilities.transactionalDdl) for (const s of ddl) await runDdl(warehouse, s)
  const row = await warehouse.transaction(
    async (tx) => {
      for (const s of inside) await tx.execute(s)
      return (await tx.query(renderFactReport(d, plan)))[0]
    },
    { commit: !request.dryRun, onMemoryRaised: request.onMemoryRaised },
  )
  return { row, statements: [...ddl, ...load] }
}

/** BigQuery: load the parts into the batch's staging table, then run the whole load as one script job. */
async function runAsScript(
  warehouse: ScriptWarehouse<SqlDialect>,
  request: LoadFactBatchRequest,
  batch: BatchOnDemand,
  plan: FactLoadPlan & { readonly stage: TableRef },
): Promise<{ row?: Row; statements: CompiledStatement[] }> {
  const table = factStagingTable(request.fact)
  const { batchId } = request
  const columns = batch.manifest.columns
  await warehouse.loadBatch({
    table,
    batchId,
    stage: plan.stage,
    parts: batch.parts,
    columns,
    rowCount: batch.manifest.rowCount,
  })
  const script = renderFactScript(warehouse.dialect, plan)
  const result = await warehouse.runMergeScript({
    table,
    batchId,
    script,
    stage: plan.stage,
    dryRun: request.dryRun ?? false,
  })
  return { row: result.row, statements: [...script.ddl, ...script.merge, ...script.after] }
}

/**
 * Adds the unknown member to each referenced dimension that lacks it (once per dimension), before the load:
 * it belongs to the dimension, not to the batch, so a batch refused later keeps it.
 */
async function addMissingUnknownMembers(
  warehouse: Warehouse<SqlDialect>,
  request: LoadFactBatchRequest,
  layout: FactLayout,
): Promise<CompiledStatement[]> {
  const d = warehouse.dialect
  const done = new Set<string>()
  const statements: CompiledStatement[] = []
  for (const r of layout.references) {
    if (done.has(r.dimension.name)) continue
    done.add(r.dimension.name)
    const ref = dimensionObjects(r.dimension, request.schema).dimension
    const key = r.reference.unknownMemberKey
    const present = await warehouse.query(renderUnknownMemberQuery(d, r.dimension, ref, key))
    if (present.length > 0) continue
    const columns = (await warehouse.describeTable(ref)) ?? []
    const member = renderUnknownMember(d, r.dimension, ref, columns, key)
    for (const s of member.ddl) await runDdl(warehouse, s)
    if (isScriptWarehouse(warehouse)) await warehouse.query(member.insert.sql)
    else
      await warehouse.transaction((tx) => tx.execute(member.insert), {
        commit: true,
        onMemoryRaised: request.onMemoryRaised,
      })
    statements.push(...member.ddl, member.insert)
  }
  return statements
}

/**
 * Adds the inferred-member flag column to each dimension a reference infers members of and that lacks it, before
 * the load (DDL cannot run in the load's transaction on BigQuery). A dimension that does not exist yet is left
 * to planFactLayout, which refuses the batch naming it.
 */
async function addMissingInferredFlags(
  warehouse: Warehouse<SqlDialect>,
  request: LoadFactBatchRequest,
): Promise<CompiledStatement[]> {
  const d = warehouse.dialect
  const statements: CompiledStatement[] = []
  const done = new Set<string>()
  for (const r of request.fact.references) {
    const table = request.dimensions.find((t) => t.name === r.dimension)
    if (!r.inferred || table === undefined || done.has(table.name)) continue
    done.add(table.name)
    const ref = dimensionObjects(table, request.schema).dimension
    const columns = await warehouse.describeTable(ref)
    const flag = inferredColumnName(table.columns)
    if (columns === undefined || columns.some((c) => c.name === flag)) continue
    const { ddl, fill } = renderInferredFlagColumn(d, table, ref, flag)
    await runDdl(warehouse, ddl)
    if (isScriptWarehouse(warehouse)) await warehouse.query(fill.sql)
    else
      await warehouse.transaction((tx) => tx.execute(fill), {
        commit: true,
        onMemoryRaised: request.onMemoryRaised,
      })
    statements.push(ddl, fill)
  }
  return statements
}

/** A DDL statement on its own: in a transaction where DDL may run in one, else as a plain statement. */
async function runDdl(warehouse: Warehouse<SqlDialect>, statement: CompiledStatement): Promise<void> {
  if (warehouse.dialect.capabilities.transactionalDdl)
    await warehouse.transaction((tx) => tx.execute(statement), { commit: true })
  else await warehouse.query(statement.sql)
}

function reportOf(fact: FactSpec, row: Row): Pick<LoadFactBatchResult, 'facts' | 'unknown' | 'feed'> {
  return {
    facts: Number(row.facts ?? 0),
    ...(row[FEED_REPORT.deletes] !== undefined
      ? {
          feed: {
            deletes: Number(row[FEED_REPORT.deletes]),
            superseded: Number(row[FEED_REPORT.superseded] ?? 0),
          },
        }
      : {}),
    unknown: fact.references.map((r, i) => ({
      dimension: r.dimension,
      column: r.surrogateKeyColumn,
      facts: Number(row[unknownCountColumn(i)] ?? 0),
      ...(row[inferredCountColumn(i)] !== undefined
        ? { inferredMembers: Number(row[inferredCountColumn(i)]) }
        : {}),
    })),
  }
}
