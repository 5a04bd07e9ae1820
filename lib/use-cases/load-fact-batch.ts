import type { CompiledStatement } from '../core/compiled-sql.ts'
import { planFactLayout, type FactLayout } from '../core/fact-layout.ts'
import { factStagingTable, type FactSpec } from '../core/fact-spec.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { MemoryRaised, Row, Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { renderAppliedBatchQuery } from '../sql/render-batch-queries.ts'
import { dimensionObjects, renderBatchLedgerDdl } from '../sql/render-ddl.ts'
import { factObjects } from '../sql/render-fact-ddl.ts'
import { renderFactWork } from '../sql/render-batch-work.ts'
import {
  FEED_REPORT,
  inferredCountColumn,
  unknownCountColumn,
  type FactLoadPlan,
} from '../sql/render-fact-load.ts'
import { inferredColumnName } from '../core/inferred-member.ts'
import { renderInferredFlagColumn } from '../sql/render-inferred-member.ts'
import { renderUnknownMember, renderUnknownMemberQuery } from '../sql/render-unknown-member.ts'
import { dialectKeyBuckets } from '../sql/surrogate-keys.ts'

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
  const { fact } = request
  const d = warehouse.dialect
  const objects = factObjects(fact, request.schema)
  const ledger = renderBatchLedgerDdl(d, objects.batches)
  await warehouse.runAlone(ledger)
  // The fact table, and the dimensions a load adds members and flags to and resolves its facts in.
  const writes = [
    objects.table,
    ...request.dimensions
      .filter((t) => fact.references.some((r) => r.dimension === t.name))
      .map((t) => dimensionObjects(t, request.schema).dimension),
  ]
  return await warehouse.whileWriting(writes, () => loadOpened(deps, request))
}

async function loadOpened(deps: LoadFactDeps, request: LoadFactBatchRequest): Promise<LoadFactBatchResult> {
  const { warehouse } = deps
  const { fact, batchId } = request
  const d = warehouse.dialect
  const objects = factObjects(fact, request.schema)
  if ((await warehouse.query(renderAppliedBatchQuery(d, objects.batches, fact.target, batchId))).length > 0)
    return { status: 'already-applied', batchId, statements: [] }

  const batch = await warehouse.openBatch(deps.staging, { table: fact.name, batchId })
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
    const table = factStagingTable(fact)
    const staged = await warehouse.stageBatch(batch, { table, batchId, schema: request.schema })
    const existing = await warehouse.describeTable(objects.table)
    const layout = planFactLayout(fact, batchId, staged.columns, dimensions, existing)
    const plan: FactLoadPlan = {
      fact,
      layout,
      objects,
      schema: request.schema,
      batchId,
      extractedAt: batch.manifest.extractedAt,
      appliedAt: request.now.toISOString(),
      mode: batch.manifest.mode,
      ...(staged.stage !== undefined ? { stage: staged.stage } : {}),
      keyBuckets: dialectKeyBuckets(d, batch.manifest.rowCount),
    }
    const unknownMembers = request.dryRun ? [] : await addMissingUnknownMembers(warehouse, request, layout)
    const { row, statements } = await warehouse.applyWork(renderFactWork(d, plan), {
      table,
      batchId,
      staged,
      dryRun: request.dryRun ?? false,
      ...(request.onMemoryRaised !== undefined ? { onMemoryRaised: request.onMemoryRaised } : {}),
    })
    return {
      status: request.dryRun ? 'dry-run' : 'loaded',
      batchId,
      ...(row !== undefined ? reportOf(fact, row) : {}),
      statements: [...flags, ...unknownMembers, ...statements],
    }
  } finally {
    await batch.release()
  }
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
    for (const s of member.ddl) await warehouse.runAlone(s)
    await warehouse.runAlone(member.insert, { onMemoryRaised: request.onMemoryRaised })
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
    await warehouse.runAlone(ddl)
    await warehouse.runAlone(fill, { onMemoryRaised: request.onMemoryRaised })
    statements.push(ddl, fill)
  }
  return statements
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
