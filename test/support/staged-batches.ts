import { createHash } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { BatchOnDemand, OpenedBatch } from '../../lib/ports/staging-store.ts'
import { type GeneratedRows, type Value, writeParquetPart } from './parquet-rows.ts'
import { RowBatches } from './row-batches.ts'

export type { GeneratedRows, Value } from './parquet-rows.ts'

/**
 * A minimal staging store for engine tests: batches built from JS rows with explicit DuckDB column types,
 * written as real Parquet by DuckDB. (The production LocalStagingStore has its own contract tests.)
 */
export class TestBatches extends RowBatches {
  readonly #root: string
  readonly #paths = new Map<string, string[]>()

  private constructor(root: string) {
    super()
    this.#root = root
  }

  static async create(): Promise<TestBatches> {
    return new TestBatches(await mkdtemp(join(tmpdir(), 'dimsync-test-batches-')))
  }

  /** Stages rows as one committed batch and returns its id. */
  async stage(
    table: string,
    columns: readonly StagedColumn[],
    rows: readonly Record<string, Value>[] | GeneratedRows,
    options: { extractedAt: string; mode?: 'full' | 'incremental'; batchId?: string },
  ): Promise<string> {
    const batchId = this.batchIdFor(options.batchId)
    const dir = join(this.#root, table, batchId)
    await mkdir(dir, { recursive: true })
    const path = join(dir, 'part-00000.parquet')
    await writeParquetPart(path, columns, rows)
    const bytes = (await stat(path)).size
    const sha256 = createHash('sha256')
      .update(await readFile(path))
      .digest('hex')
    this.manifests.set(`${table}/${batchId}`, {
      formatVersion: 1,
      table,
      batchId,
      extractedAt: options.extractedAt,
      mode: options.mode ?? 'full',
      rowCount: rows.length,
      columns,
      parts: [{ name: 'part-00000.parquet', rows: rows.length, bytes, sha256 }],
      sourceDescription: 'test rows',
    })
    this.#paths.set(`${table}/${batchId}`, [path])
    return batchId
  }

  async openBatch(table: string, batchId: string): Promise<OpenedBatch> {
    const manifest = this.manifestOf(table, batchId)
    return { manifest, partPaths: this.#paths.get(`${table}/${batchId}`)!, release: async () => undefined }
  }
  async openBatchOnDemand(table: string, batchId: string): Promise<BatchOnDemand> {
    const { manifest, partPaths } = await this.openBatch(table, batchId)
    return {
      manifest,
      parts: {
        names: partPaths,
        bytes: await Promise.all(partPaths.map(async (path) => (await stat(path)).size)),
        fetch: async (indexes) => ({
          paths: indexes.map((index) => partPaths[index]!),
          release: async () => {},
        }),
      },
    }
  }
  async deleteBatch(table: string, batchId: string): Promise<void> {
    this.manifests.delete(`${table}/${batchId}`)
  }
  async dispose(): Promise<void> {
    await rm(this.#root, { recursive: true, force: true })
  }
}
