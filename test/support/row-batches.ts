import type { BatchManifest } from '../../lib/core/batch.ts'
import { noCheckpointError } from '../../lib/core/batch-checkpoint.ts'
import { StagingError } from '../../lib/core/errors.ts'
import type {
  BatchCheckpoint,
  BatchOnDemand,
  BatchWriter,
  OpenedBatch,
  StagingStore,
  UncommittedBatch,
} from '../../lib/ports/staging-store.ts'

/**
 * What the test staging stores (TestBatches on a folder, MemoryBatches on the in-memory store) share: batches come
 * only from `stage`, committed at once, listed in staging order; nothing is ever suspended or abandoned.
 */
export abstract class RowBatches implements StagingStore {
  /** The committed manifests by `table/batchId`; a batch staged again under its id keeps its place. */
  protected readonly manifests = new Map<string, BatchManifest>()
  #seq = 0

  abstract openBatch(table: string, batchId: string): Promise<OpenedBatch>
  abstract openBatchOnDemand(table: string, batchId: string): Promise<BatchOnDemand>
  abstract deleteBatch(table: string, batchId: string): Promise<void>
  abstract dispose(): Promise<void>

  /** The caller's batch id, or the next of `b0001`, `b0002`, … */
  protected batchIdFor(requested: string | undefined): string {
    return requested ?? `b${String(++this.#seq).padStart(4, '0')}`
  }

  protected manifestOf(table: string, batchId: string): BatchManifest {
    const manifest = this.manifests.get(`${table}/${batchId}`)
    if (!manifest) throw new StagingError(`table ${table}: batch ${batchId} has no manifest`)
    return manifest
  }

  async beginBatch(): Promise<BatchWriter> {
    throw new Error(`${this.constructor.name} stages batches with stage()`)
  }
  /** Nothing is ever suspended here: a committed batch or no saved progress, as the port says. */
  async resumeBatch(
    table: string,
    batchId: string,
  ): Promise<{ writer: BatchWriter; checkpoint: BatchCheckpoint }> {
    if (this.manifests.has(`${table}/${batchId}`)) {
      throw new StagingError(`table ${table}: batch ${batchId} is already committed`)
    }
    throw noCheckpointError(table, batchId)
  }
  async listBatches(table: string): Promise<readonly BatchManifest[]> {
    return [...this.manifests.values()].filter((m) => m.table === table)
  }
  async removeAbandoned(): Promise<readonly string[]> {
    return []
  }
  async listUncommitted(): Promise<readonly UncommittedBatch[]> {
    return []
  }
}
