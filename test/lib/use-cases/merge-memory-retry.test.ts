import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { MemoryRaised } from '../../../lib/ports/warehouse.ts'
import { mergeBatch } from '../../../lib/use-cases/merge-batch.ts'
import { TestBatches } from '../../support/staged-batches.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { stageWideShuffledRows } from '../../support/wide-rows.ts'

/**
 * A merge that runs out of memory runs again with more (DuckDbWarehouse `memoryGrowth`); the attempts that ran out
 * are rolled back, so the history is the one a single attempt with room writes (invariant 5, docs/invariants.md: surrogate keys
 * given out once (5), a failed attempt leaves nothing (9), a batch applied once (6)). The first load of 200,000
 * wide rows in shuffled key order runs out of 24MB (measured: at 32MB and below, numbered by one window over the
 * rows or by their keys alone).
 */
const ROWS = 200_000
const table = tableSpec({ name: 't', target: 'dim_t', key: ['id'] })

let dir: string
let staging: TestBatches
let batchId: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-merge-memory-'))
  staging = await TestBatches.create()
  batchId = await stageWideShuffledRows(staging, 't', ROWS)
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function merged(options: { memoryLimit: string; memoryGrowth?: { ceilingMb: number } }) {
  const warehouse = await DuckDbWarehouse.open({
    path: join(dir, `${options.memoryLimit}.duckdb`),
    threads: 1,
    ...options,
  })
  const raised: MemoryRaised[] = []
  const request = {
    table,
    schema: 'main',
    batchId,
    now: new Date('2024-01-01T01:00:00Z'),
    onMemoryRaised: (r: MemoryRaised) => raised.push(r),
  }
  try {
    const first = await mergeBatch({ warehouse, staging }, request)
    const again = await mergeBatch({ warehouse, staging }, request)
    const [dimension] = await warehouse.query(
      `SELECT COUNT(*) AS versions, COUNT(DISTINCT dimsync_sk) AS keys, MIN(dimsync_sk) AS lowest, MAX(dimsync_sk) AS highest, ` +
        `SUM(hash(dimsync_sk, id, name, email, birth, note, valid_from, valid_to, is_current, dimsync_row_hash) % 1000003) AS fingerprint FROM dim_t`,
    )
    const keyRecord = await warehouse.query('SELECT highest_surrogate_key FROM dim_t_dimsync_keys')
    const ledger = await warehouse.query('SELECT batch_id, inserted_versions FROM _dimsync_batches')
    return { raised, first: first.counts, again: again.status, dimension, keyRecord, ledger }
  } finally {
    await warehouse.close()
  }
}

describe('a merge that ran out of memory and ran again with more', () => {
  it('writes the history, surrogate keys and ledger row that one attempt with room writes, once', async () => {
    const retried = await merged({ memoryLimit: '24MB', memoryGrowth: { ceilingMb: 1024 } })
    const roomy = await merged({ memoryLimit: '1024MB' })
    expect(retried.raised.length).toBeGreaterThan(0)
    expect(retried.raised[0]).toMatchObject({ from: '24MB', to: '48MB' })
    expect(roomy.raised).toEqual([])
    expect(retried.first?.insertedVersions).toBe(ROWS)
    expect(retried.dimension).toEqual({
      versions: ROWS,
      keys: ROWS,
      lowest: 1,
      highest: ROWS,
      fingerprint: roomy.dimension!.fingerprint,
    })
    expect(retried.keyRecord).toEqual([{ highest_surrogate_key: ROWS }])
    expect(retried.ledger).toEqual([{ batch_id: batchId, inserted_versions: ROWS }])
    expect(retried.again).toBe('already-applied')
    expect({ ...retried, raised: [] }).toEqual(roomy)
  })
})
