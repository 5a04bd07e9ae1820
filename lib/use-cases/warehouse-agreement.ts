import type { Watermark } from '../core/batch.ts'
import { LedgerMismatchError } from '../core/errors.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { describePosition, ledgerDisagreement, type LedgerDisagreement } from '../core/watermark-ledger.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { StateStore } from '../ports/state-store.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { dimensionObjects } from '../sql/render-ddl.ts'
import { assertConfigMatchesContract } from './contract-check.ts'
import { stagedMode } from './extract-pass.ts'
import { readLedgerFacts, type LedgerFacts } from './ledger-facts.ts'

export interface AgreementDeps {
  readonly warehouse: Warehouse<SqlDialect>
  readonly state: StateStore
  readonly staging: StagingStore
  readonly schema: string
}

/**
 * What a run checks before it extracts or merges anything (under the table's lease): the config against the
 * contract recorded with the dimension (an unsafe change is refused, ContractChangedError), and the state store's
 * watermark against the warehouse's batch ledger (LedgerMismatchError when they disagree, naming both and the
 * way out). Reads only.
 */
export async function assertStateAgreesWithWarehouse(deps: AgreementDeps, table: TableSpec): Promise<void> {
  const incremental = stagedMode(table) === 'incremental'
  const stored = incremental ? await deps.state.getWatermark(table.name) : undefined
  const objects = dimensionObjects(table, deps.schema)
  const ledger = await readLedgerFacts(deps.warehouse, {
    batches: objects.batches,
    target: table.target,
    batchIds: stored?.batchId === undefined ? [] : [stored.batchId],
    create: false,
  })
  assertConfigMatchesContract(table, ledger)
  if (!incremental) return
  const staged = new Set((await deps.staging.listBatches(table.name)).map((m) => m.batchId))
  const last = lastWatermark(ledger)
  const problem = ledgerDisagreement(stored, {
    holdsWatermarkBatch: stored?.batchId !== undefined && ledger.applied.has(stored.batchId),
    anyBatch: ledger.anyBatch,
    ...(last !== undefined ? { last } : {}),
    staged,
  })
  if (problem !== undefined) throw mismatchError(table, problem, last, where(deps))
}

/** The ledger's last recorded watermark, parsed. */
export function lastWatermark(
  ledger: LedgerFacts,
): { readonly batchId: string; readonly watermark: Watermark } | undefined {
  if (ledger.watermark === undefined) return undefined
  return { batchId: ledger.watermark.batchId, watermark: JSON.parse(ledger.watermark.text) as Watermark }
}

function where(deps: AgreementDeps): string {
  return `the warehouse (schema ${deps.schema})`
}

function mismatchError(
  table: TableSpec,
  problem: LedgerDisagreement,
  last: ReturnType<typeof lastWatermark>,
  warehouse: string,
): LedgerMismatchError {
  const reset = `dimsync reset-watermark --table ${table.name}`
  const ledgerSays =
    last === undefined
      ? `its ledger holds no batch of ${table.target} with a watermark`
      : `its ledger's last batch of ${table.target} is ${last.batchId} (watermark ${describePosition(last.watermark)})`
  const stored = problem.stored
  const state =
    stored === undefined
      ? 'the state store holds no watermark'
      : `the state store's watermark is ${describePosition(stored)}` +
        (stored.batchId === undefined ? '' : ` (committed by batch ${stored.batchId})`)
  if (problem.kind === 'warehouse-behind')
    return new LedgerMismatchError(
      table.name,
      `table ${table.name}: ${state}, but ${warehouse} has not merged it: ${ledgerSays}. The warehouse was lost ` +
        'or restored from an older copy, and a delta read after that watermark would leave out every row before ' +
        `it; nothing was extracted. Set the watermark back to what the warehouse holds with: ${reset} (the next ` +
        `run reads again ${last === undefined ? 'every row: a full reload' : 'the rows after that batch'})`,
    )
  return new LedgerMismatchError(
    table.name,
    `table ${table.name}: ${state}, but ${warehouse} merged more: ${ledgerSays}. The state was lost or restored ` +
      'from an older copy, and the next delta would read again rows already merged; nothing was extracted. Set ' +
      `the watermark to the ledger's last batch with: ${reset}`,
  )
}
