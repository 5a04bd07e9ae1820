import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'

import { LocalStagingStore } from '../../../../lib/adapters/staging/local-staging-store.ts'
import type { Watermark } from '../../../../lib/core/batch.ts'
import type { TableSpec } from '../../../../lib/core/table-spec.ts'
import type { ExtractResult, Source } from '../../../../lib/ports/source.ts'

export interface StagedExtract {
  readonly result: ExtractResult
  /** Rows read back from the staged Parquet parts with DuckDB (JSON-friendly values), ordered by `orderBy`. */
  readonly rows: Record<string, unknown>[]
  /** Column types DuckDB reads from the staged Parquet. */
  readonly types: Record<string, string>
  readonly parts: number
}

/**
 * Real staging in a temporary folder: runs one extract, commits the batch like the pipeline does, then reads the
 * committed Parquet parts back with a fresh DuckDB (session in UTC).
 */
export class ExtractHarness {
  private constructor(
    readonly root: string,
    readonly staging: LocalStagingStore,
  ) {}
  #n = 0

  static async create(): Promise<ExtractHarness> {
    const root = await mkdtemp(join(tmpdir(), 'dimsync-db-source-'))
    return new ExtractHarness(root, new LocalStagingStore({ root }))
  }

  async extract(
    source: Source,
    table: TableSpec,
    options: {
      watermark?: Watermark
      orderBy?: string
      onProgress?: (rows: number) => void
      /** The select list read back (default `*`), for values compared as DuckDB's text of them. */
      select?: string
    } = {},
  ): Promise<StagedExtract> {
    const batchId = `b${String(++this.#n).padStart(4, '0')}`
    const writer = await this.staging.beginBatch(table.name, batchId)
    let result: ExtractResult
    try {
      result = await source.extract({
        table,
        batchId,
        extractedAt: new Date('2030-01-01T00:00:00Z'),
        watermark: options.watermark,
        writer,
        onProgress: options.onProgress,
      })
      await writer.commit({
        table: table.name,
        batchId,
        extractedAt: '2030-01-01T00:00:00Z',
        mode: table.extract.mode,
        rowCount: result.rows,
        columns: result.columns,
        watermarkCandidate: result.watermarkCandidate,
        sourceDescription: result.sourceDescription,
      })
    } catch (error) {
      await writer.abort()
      throw error
    }
    const batch = await this.staging.openBatch(table.name, batchId)
    const instance = await DuckDBInstance.create(':memory:')
    const connection = await instance.connect()
    try {
      await connection.run(`SET TimeZone='UTC'`)
      const files = `[${batch.partPaths.map((p) => `'${p}'`).join(', ')}]`
      const described = (
        await connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${files})`)
      ).getRowObjectsJson()
      const types = Object.fromEntries(described.map((r) => [String(r.column_name), String(r.column_type)]))
      const order = options.orderBy ?? table.key.map((k) => `"${k}"`).join(', ')
      const rows = (
        await connection.runAndReadAll(
          `SELECT ${options.select ?? '*'} FROM read_parquet(${files}) ORDER BY ${order}`,
        )
      ).getRowObjectsJson() as Record<string, unknown>[]
      return { result, rows, types, parts: batch.partPaths.length }
    } finally {
      connection.closeSync()
      instance.closeSync()
      await this.staging.deleteBatch(table.name, batchId)
    }
  }

  /** Batch folders left in staging for `table` (an aborted extract must leave none). */
  async leftovers(table: string): Promise<readonly string[]> {
    const { readdir } = await import('node:fs/promises')
    try {
      return await readdir(join(this.root, table))
    } catch {
      return []
    }
  }

  async close(): Promise<void> {
    await rm(this.root, { recursive: true, force: true })
  }
}
