import type { StagedColumn } from '../../core/batch.ts'
import type { BatchWork, TransactionWork } from '../../core/batch-work.ts'
import type { CompiledStatement } from '../../core/compiled-sql.ts'
import type { StagingStore } from '../../ports/staging-store.ts'
import type {
  AppliedWork,
  ApplyOptions,
  ApplyWorkRequest,
  Row,
  StageBatchRequest,
  StagedBatch,
  StagedBatchName,
  TransactionOptions,
  Warehouse,
  WarehouseBatch,
} from '../../ports/warehouse.ts'
import type { SqlDialect } from '../../sql/dialect.ts'

/**
 * How a warehouse that works in a client-side session applies a batch's work (DuckDB, PostgreSQL): every part
 * local at once, loaded into the session's temporary `__dimsync_stage`, then the work statement by statement in one
 * transaction. Each function calls the warehouse's own `transaction` and `query`.
 */

export async function openWholeBatch(staging: StagingStore, batch: StagedBatchName): Promise<WarehouseBatch> {
  const opened = await staging.openBatch(batch.table, batch.batchId)
  return { manifest: opened.manifest, opened, release: () => opened.release() }
}

/** A warehouse whose session reads staged parts into its temporary `__dimsync_stage`. */
export interface SessionWarehouse extends Warehouse<SqlDialect> {
  /**
   * Makes the staged Parquet parts of `batch` (its table or fact and id, for messages) readable as the temporary
   * table (or view) `__dimsync_stage`; returns its columns. A value the warehouse cannot store refuses the batch
   * (`BatchRejectedError`), naming the column.
   */
  loadStaging(partPaths: readonly string[], batch: StagedBatchName): Promise<StagedColumn[]>
}

/**
 * The batch methods of the `Warehouse` port as every session warehouse implements them: DuckDB and PostgreSQL extend
 * this and give the session itself (`transaction`, `query`, `loadStaging`).
 */
export abstract class SessionBatchMethods {
  runAlone(
    this: SessionWarehouse,
    statement: CompiledStatement,
    options?: Pick<TransactionOptions, 'onMemoryRaised'>,
  ): Promise<void> {
    return runAlone(this, statement, options)
  }

  applyInTransaction(
    this: SessionWarehouse,
    work: TransactionWork,
    options: ApplyOptions,
  ): Promise<AppliedWork> {
    return applyInTransaction(this, work, options)
  }

  openBatch(staging: StagingStore, batch: StagedBatchName): Promise<WarehouseBatch> {
    return openWholeBatch(staging, batch)
  }

  stageBatch(
    this: SessionWarehouse,
    batch: WarehouseBatch,
    request: StageBatchRequest,
  ): Promise<StagedBatch> {
    return stageInSession(this, batch, request)
  }

  /** The session's temporary `__dimsync_stage` is replaced by the next batch's: nothing to drop. */
  async dropStaged(): Promise<void> {}

  applyWork(this: SessionWarehouse, work: BatchWork, request: ApplyWorkRequest): Promise<AppliedWork> {
    return applyInTransaction(this, work.inTransaction(), request)
  }
}

export async function stageInSession(
  warehouse: SessionWarehouse,
  batch: WarehouseBatch,
  request: StageBatchRequest,
): Promise<StagedBatch> {
  if (!('partPaths' in batch.opened))
    throw new Error(`table ${request.table.name}: batch ${request.batchId} was not opened by this warehouse`)
  return {
    columns: await warehouse.loadStaging(batch.opened.partPaths, {
      table: request.table.name,
      batchId: request.batchId,
    }),
  }
}

/** One statement committed on its own: in a transaction where DDL may run in one, else as a plain statement. */
export async function runAlone(
  warehouse: Warehouse<SqlDialect>,
  statement: CompiledStatement,
  options: Pick<TransactionOptions, 'onMemoryRaised'> = {},
): Promise<void> {
  if (warehouse.dialect.capabilities.transactionalDdl)
    await warehouse.transaction((tx) => tx.execute(statement), { commit: true, ...options })
  else await warehouse.query(statement.sql)
}

export async function applyInTransaction(
  warehouse: Warehouse<SqlDialect>,
  work: TransactionWork,
  options: ApplyOptions,
): Promise<AppliedWork> {
  const queries = options.around?.queries ?? []
  const before =
    options.around?.before === true
      ? await Promise.all(queries.map((q) => warehouse.query(q)))
      : queries.map((): Row[] => [])
  const after: Row[][] = []
  // DDL that cannot roll back with the work runs before it, on its own (every DDL statement is idempotent).
  const [ddlBefore, inside] = warehouse.dialect.capabilities.transactionalDdl
    ? [[], [...work.ddl, ...work.statements, ...work.ddlAfter]]
    : [[...work.ddl, ...work.ddlAfter], work.statements]
  for (const statement of ddlBefore) await runAlone(warehouse, statement)
  const row = await warehouse.transaction(
    async (tx) => {
      for (const statement of inside) await tx.execute(statement)
      const [report] = work.report === undefined ? [] : await tx.query(work.report)
      for (const q of queries) after.push(await tx.query(q))
      if (!options.dryRun) await options.beforeCommit?.()
      return report
    },
    {
      commit: !options.dryRun,
      ...(options.onMemoryRaised !== undefined ? { onMemoryRaised: options.onMemoryRaised } : {}),
      ...(work.firstLoad !== undefined ? { firstLoad: work.firstLoad } : {}),
    },
  )
  return {
    ...(row !== undefined ? { row } : {}),
    statements: [...(work.alreadyRun ?? []), ...ddlBefore, ...inside],
    ...(options.around !== undefined ? { around: { before, after } } : {}),
  }
}
