import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { readParquetValueCounts } from '../adapters/duckdb/parquet-values.ts'
import { LocalStagingStore } from '../adapters/staging/local-staging-store.ts'
import { makeBatchId } from '../core/batch-id.ts'
import type { StateStore } from '../ports/state-store.ts'
import type { ValidateOptions } from '../use-cases/validate-project.ts'

/** More distinct values than this in an operation column: the first ones already show what is wrong. */
const MOST_VALUES = 1000

/**
 * `dimsync validate`'s reader of staged values: extracts what the next run would (after the table's committed
 * watermark, the columns the table spec keeps) into a temporary folder, counts the values of one column, and
 * removes the folder. Nothing is staged where runs look, and no state is written.
 */
export function stagedValuesReader(state: StateStore): NonNullable<ValidateOptions['stagedValues']> {
  return async (source, table, column) => {
    const root = await mkdtemp(join(tmpdir(), 'dimsync-validate-'))
    try {
      const extractedAt = new Date()
      const batchId = makeBatchId(extractedAt)
      const writer = await new LocalStagingStore({ root }).beginBatch(table.name, batchId)
      const watermark = await state.getWatermark(table.name)
      await source.extract({ table, batchId, extractedAt, writer, ...(watermark ? { watermark } : {}) })
      const folder = join(root, table.name, batchId)
      const parts = (await readdir(folder)).filter((name) => name.endsWith('.parquet')).sort()
      return await readParquetValueCounts(
        parts.map((name) => join(folder, name)),
        column,
        MOST_VALUES,
      )
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  }
}
