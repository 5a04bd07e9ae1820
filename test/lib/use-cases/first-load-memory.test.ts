import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { mergeBatch } from '../../../lib/use-cases/merge-batch.ts'
import { TestBatches } from '../../support/staged-batches.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { stageWideShuffledRows } from '../../support/wide-rows.ts'

/**
 * A first load numbers its surrogate keys by sorting the keys alone, not the wide rows (render-first-load.ts).
 * Found in session 10: a 1M-row, 10-column first load ran out of the default 112MB in `insert first versions`,
 * because one window over the wide rows sorted every column. 500,000 such rows in shuffled key order, one DuckDB
 * thread (measured): the wide window ran out of 56MB and 64MB and fit 80MB; the keys numbered alone fit 48MB and
 * 56MB and ran out of 40MB.
 */
const ROWS = 500_000
const table = tableSpec({ name: 't', target: 'dim_t', key: ['id'] })

let dir: string
let staging: TestBatches
let batchId: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-first-load-memory-'))
  staging = await TestBatches.create()
  batchId = await stageWideShuffledRows(staging, 't', ROWS)
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('the first load of wide rows in shuffled key order', () => {
  it('fits a memory limit a sort of the wide rows does not, and numbers the keys in key order', async () => {
    // No memoryGrowth: the limit is fixed, so the merge has one attempt.
    const warehouse = await DuckDbWarehouse.open({
      path: join(dir, 'w.duckdb'),
      memoryLimit: '56MB',
      threads: 1,
    })
    try {
      const merged = await mergeBatch(
        { warehouse, staging },
        { table, schema: 'main', batchId, now: new Date('2024-01-01T01:00:00Z') },
      )
      expect(merged.counts?.insertedVersions).toBe(ROWS)
      // Keys 1..ROWS in shuffled order: numbered in key order, each row's surrogate key is its key; and each row
      // is the one generated for its key (row i has key (i * 7919) % ROWS + 1, name 'name i').
      const [dimension] = await warehouse.query(
        `SELECT COUNT(*) AS versions, COUNT(*) FILTER (WHERE dimsync_sk = id) AS numbered_in_key_order, ` +
          `COUNT(*) FILTER (WHERE id = CAST(substr(name, 6) AS BIGINT) * 7919 % ${ROWS} + 1 ` +
          `AND email = 'user' || substr(name, 6) || '@example.com') AS rows_as_generated FROM dim_t`,
      )
      expect(dimension).toEqual({ versions: ROWS, numbered_in_key_order: ROWS, rows_as_generated: ROWS })
      const keyRecord = await warehouse.query('SELECT highest_surrogate_key FROM dim_t_dimsync_keys')
      expect(keyRecord).toEqual([{ highest_surrogate_key: ROWS }])
    } finally {
      await warehouse.close()
    }
  })
})
