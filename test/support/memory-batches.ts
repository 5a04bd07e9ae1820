import { join } from 'node:path'
import { MemoryStagingStore } from '../../lib/adapters/staging/memory-staging-store.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { BatchOnDemand, OpenedBatch } from '../../lib/ports/staging-store.ts'
import { type GeneratedRows, type Value, writeParquetPart } from './parquet-rows.ts'
import { RowBatches } from './row-batches.ts'

/**
 * TestBatches (staged-batches.ts) on the in-memory staging store: the same `stage` (JS rows with explicit DuckDB
 * column types, one committed batch, ids `b0001`, … or the caller's, listed in staging order, a batch staged again
 * under its id replacing it in its place), but the parts are held by `MemoryStagingStore`, which checks them
 * against the manifest on every open as the production stores do. The test opens no file itself; the staging port
 * passes parts as local paths, so DuckDB writes each part into the store's scratch folder, the store takes it into
 * memory, and hands it to the warehouse as a temporary copy it removes.
 */
export class MemoryBatches extends RowBatches {
  readonly store = new MemoryStagingStore()

  static async create(): Promise<MemoryBatches> {
    return new MemoryBatches()
  }

  /** Stages rows as one committed batch and returns its id. */
  async stage(
    table: string,
    columns: readonly StagedColumn[],
    rows: readonly Record<string, Value>[] | GeneratedRows,
    options: { extractedAt: string; mode?: 'full' | 'incremental'; batchId?: string },
  ): Promise<string> {
    const batchId = this.batchIdFor(options.batchId)
    await this.store.deleteBatch(table, batchId)
    const writer = await this.store.beginBatch(table, batchId)
    try {
      const path = join(writer.scratchDir, 'part.parquet')
      await writeParquetPart(path, columns, rows)
      await writer.addPart(path, rows.length)
      const manifest = await writer.commit({
        table,
        batchId,
        extractedAt: options.extractedAt,
        mode: options.mode ?? 'full',
        rowCount: rows.length,
        columns,
        sourceDescription: 'test rows',
      })
      this.manifests.set(`${table}/${batchId}`, manifest)
    } catch (error) {
      await writer.abort()
      throw error
    }
    return batchId
  }

  async openBatch(table: string, batchId: string): Promise<OpenedBatch> {
    return await this.store.openListedBatch(table, this.manifestOf(table, batchId))
  }
  async openBatchOnDemand(table: string, batchId: string): Promise<BatchOnDemand> {
    return await this.store.openListedBatchOnDemand(table, this.manifestOf(table, batchId))
  }
  async deleteBatch(table: string, batchId: string): Promise<void> {
    this.manifests.delete(`${table}/${batchId}`)
    await this.store.deleteBatch(table, batchId)
  }
  /** Nothing to remove: the blobs go with the object. */
  async dispose(): Promise<void> {}
}
