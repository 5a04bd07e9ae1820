import type { BatchManifest } from '../core/batch.ts'
import { compareManifests } from '../core/batch-manifest.ts'
import type {
  BatchCheckpoint,
  BatchOnDemand,
  BatchWriter,
  OpenedBatch,
  StagedListing,
  StagingStore,
  UncommittedBatch,
} from '../ports/staging-store.ts'

/**
 * One table's staging as a run that holds the table's lease sees it: the table's folder is listed once, on the
 * first question, and then kept current by the run's own writes (a commit adds its manifest, a delete removes the
 * batch). While the run holds the lease no other run commits, merges or removes the table's batches, so the
 * listing stays true; the merge then opens each batch with the manifest it listed instead of reading it again.
 * Other tables, and everything else, go to the store as they are.
 */
export class RunStaging implements StagingStore {
  readonly table: string
  readonly #store: StagingStore
  #listed: Promise<StagedListing> | undefined
  #committed: BatchManifest[] = []
  /** The uncommitted batches, until a writer of this run starts one (its state is then the store's to tell). */
  #uncommitted: UncommittedBatch[] | undefined = []

  constructor(store: StagingStore, table: string) {
    this.#store = store
    this.table = table
  }

  /** The table's committed batches, in merge order (oldest extraction first), listed once. */
  async committed(): Promise<readonly BatchManifest[]> {
    await this.#list()
    return [...this.#committed]
  }

  /** The listed manifest of batch `batchId`, or undefined when it is not committed. */
  async manifestOf(batchId: string): Promise<BatchManifest | undefined> {
    await this.#list()
    return this.#committed.find((m) => m.batchId === batchId)
  }

  async #list(): Promise<void> {
    this.#listed ??= (async () => {
      const listing = await listStaged(this.#store, this.table)
      this.#committed = [...listing.committed]
      this.#uncommitted = [...listing.uncommitted]
      return listing
    })().catch((error: unknown) => {
      this.#listed = undefined
      throw error
    })
    await this.#listed
  }

  async beginBatch(table: string, batchId: string): Promise<BatchWriter> {
    if (table !== this.table) return await this.#store.beginBatch(table, batchId)
    await this.#list()
    this.#uncommitted = undefined
    return this.#tracked(await this.#store.beginBatch(table, batchId))
  }

  async resumeBatch(
    table: string,
    batchId: string,
  ): Promise<{ writer: BatchWriter; checkpoint: BatchCheckpoint }> {
    if (table !== this.table) return await this.#store.resumeBatch(table, batchId)
    await this.#list()
    this.#uncommitted = undefined
    const resumed = await this.#store.resumeBatch(table, batchId)
    return { writer: this.#tracked(resumed.writer), checkpoint: resumed.checkpoint }
  }

  /** The writer, whose commit adds its manifest to the listing. */
  #tracked(writer: BatchWriter): BatchWriter {
    return {
      table: writer.table,
      batchId: writer.batchId,
      scratchDir: writer.scratchDir,
      addPart: (localPath, rows) => writer.addPart(localPath, rows),
      commit: async (manifest) => {
        const committed = await writer.commit(manifest)
        this.#committed = [...this.#committed.filter((m) => m.batchId !== committed.batchId), committed].sort(
          compareManifests,
        )
        return committed
      },
      suspend: (state) => writer.suspend(state),
      abort: (options) => writer.abort(options),
    }
  }

  async listBatches(table: string): Promise<readonly BatchManifest[]> {
    if (table !== this.table) return await this.#store.listBatches(table)
    return await this.committed()
  }

  async listUncommitted(table: string): Promise<readonly UncommittedBatch[]> {
    if (table !== this.table) return await this.#store.listUncommitted(table)
    await this.#list()
    return this.#uncommitted === undefined ? await this.#store.listUncommitted(table) : [...this.#uncommitted]
  }

  async listStaged(table: string): Promise<StagedListing> {
    if (table !== this.table) return await listStaged(this.#store, table)
    return { committed: await this.listBatches(table), uncommitted: await this.listUncommitted(table) }
  }

  async openBatch(table: string, batchId: string): Promise<OpenedBatch> {
    const listed = table === this.table ? await this.manifestOf(batchId) : undefined
    if (listed === undefined || !this.#store.openListedBatch)
      return await this.#store.openBatch(table, batchId)
    return await this.#store.openListedBatch(table, listed)
  }

  async openBatchOnDemand(table: string, batchId: string): Promise<BatchOnDemand> {
    const listed = table === this.table ? await this.manifestOf(batchId) : undefined
    if (listed === undefined || !this.#store.openListedBatchOnDemand)
      return await this.#store.openBatchOnDemand(table, batchId)
    return await this.#store.openListedBatchOnDemand(table, listed)
  }

  async openListedBatch(table: string, manifest: BatchManifest): Promise<OpenedBatch> {
    if (!this.#store.openListedBatch) return await this.#store.openBatch(table, manifest.batchId)
    return await this.#store.openListedBatch(table, manifest)
  }

  async openListedBatchOnDemand(table: string, manifest: BatchManifest): Promise<BatchOnDemand> {
    if (!this.#store.openListedBatchOnDemand)
      return await this.#store.openBatchOnDemand(table, manifest.batchId)
    return await this.#store.openListedBatchOnDemand(table, manifest)
  }

  async deleteBatch(table: string, batchId: string): Promise<void> {
    await this.#store.deleteBatch(table, batchId)
    if (table !== this.table) return
    this.#committed = this.#committed.filter((m) => m.batchId !== batchId)
    this.#uncommitted = this.#uncommitted?.filter((b) => b.batchId !== batchId)
  }

  async removeAbandoned(
    table: string,
    olderThan: Date,
    listed?: readonly UncommittedBatch[],
  ): Promise<readonly string[]> {
    if (table !== this.table) return await this.#store.removeAbandoned(table, olderThan, listed)
    const uncommitted = listed ?? (await this.listUncommitted(table))
    const removed = await this.#store.removeAbandoned(table, olderThan, uncommitted)
    const gone = new Set(removed)
    this.#uncommitted = this.#uncommitted?.filter((b) => !gone.has(b.batchId))
    return removed
  }
}

/** Deps whose staging is one run's listing of its table. */
export type WithRunStaging<D extends { readonly staging: StagingStore }> = D & {
  readonly staging: RunStaging
}

/** `deps` with `table`'s staging listed once for the run (the caller holds the table's lease). */
export function withRunStaging<D extends { readonly staging: StagingStore }>(
  deps: D,
  table: { readonly name: string },
): WithRunStaging<D> {
  return { ...deps, staging: new RunStaging(deps.staging, table.name) }
}

/** A table's committed and uncommitted batches, from one listing where the store can (`listStaged`). */
export async function listStaged(store: StagingStore, table: string): Promise<StagedListing> {
  if (store.listStaged) return await store.listStaged(table)
  return { committed: await store.listBatches(table), uncommitted: await store.listUncommitted(table) }
}
