import type { TableRef } from '../core/table-ref.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { renderLedgerFactsQuery } from '../sql/render-batch-queries.ts'
import { LEDGER_RECORD_COLUMNS, renderBatchLedgerDdl, renderLedgerColumnsDdl } from '../sql/render-ddl.ts'

/** What the batch ledger says of one target (renderLedgerFactsQuery). */
export interface LedgerFacts {
  /** Those of the batch ids asked about that the ledger holds. */
  readonly applied: ReadonlySet<string>
  /** The ledger holds some batch of the target. */
  readonly anyBatch: boolean
  /** The contract recorded last, and the batch whose merge recorded it. */
  readonly contract?: { readonly batchId: string; readonly text: string }
  /** The last batch that recorded a watermark, and that watermark (canonical JSON). */
  readonly watermark?: { readonly batchId: string; readonly text: string }
}

const NOTHING: LedgerFacts = { applied: new Set(), anyBatch: false }

/**
 * Reads the ledger's facts about `target`. `create`: the ledger is created when missing (a merge), else a missing
 * ledger holds nothing (a check before a run reads only). A ledger written before the record columns existed gets
 * them first (DDL, idempotent).
 */
export async function readLedgerFacts(
  warehouse: Warehouse<SqlDialect>,
  request: {
    readonly batches: TableRef
    readonly target: string
    readonly batchIds: readonly string[]
    readonly create: boolean
  },
): Promise<LedgerFacts> {
  const d = warehouse.dialect
  const { batches } = request
  if (request.create) await warehouse.runAlone(renderBatchLedgerDdl(d, batches))
  const columns = await warehouse.describeTable(batches)
  if (columns === undefined) return NOTHING
  const have = new Set(columns.map((c) => c.name.toLowerCase()))
  const missing = LEDGER_RECORD_COLUMNS.filter((c) => !have.has(c))
  for (const statement of renderLedgerColumnsDdl(d, batches, missing)) await warehouse.runAlone(statement)
  const rows = await warehouse.query(renderLedgerFactsQuery(d, batches, request.target, request.batchIds))
  const applied = new Set<string>()
  let anyBatch = false
  let contract: LedgerFacts['contract']
  let watermark: LedgerFacts['watermark']
  for (const row of rows) {
    const batchId = row.batch_id === null ? undefined : String(row.batch_id)
    if (batchId === undefined) continue
    if (row.fact === 'applied') applied.add(batchId)
    else if (row.fact === 'any') anyBatch = true
    else if (row.fact === 'contract') contract = { batchId, text: String(row.payload) }
    else if (row.fact === 'watermark') watermark = { batchId, text: String(row.payload) }
  }
  return {
    applied,
    anyBatch,
    ...(contract !== undefined ? { contract } : {}),
    ...(watermark !== undefined ? { watermark } : {}),
  }
}
