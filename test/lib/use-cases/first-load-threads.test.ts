import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { mergeBatch } from '../../../lib/use-cases/merge-batch.ts'
import { TestBatches } from '../../support/staged-batches.ts'
import { threadsNow } from '../../support/warehouse-threads.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { stageWideShuffledRows, WIDE_ROW_COLUMNS } from '../../support/wide-rows.ts'

/**
 * The first load of a dimension runs on the warehouse's first-load threads, every later merge on its threads
 * (bench/results/log.md), and the history does not depend on the thread count: the surrogate keys
 * follow the keys' order, whatever thread numbered them. 300,000 shuffled rows: three row groups of the staged
 * part, so two threads both work. For a whole-number key and for a composite key of a text and a date.
 */
const ROWS = 300_000
/** A whole-number key, and a composite key of a text and a date: numbering sorts by each. */
const SHAPES = [
  {
    shape: 'a BIGINT key',
    table: tableSpec({ name: 't', target: 'dim_t', key: ['id'] }),
    email: 'user@example.com',
  },
  {
    shape: 'a (VARCHAR, DATE) key',
    table: tableSpec({ name: 'u', target: 'dim_t', key: ['email', 'birth'] }),
    email: 'user0@example.com',
  },
]

let dir: string
let staging: TestBatches
const batches = new Map<string, { first: string; second: string }>()
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-first-load-threads-'))
  staging = await TestBatches.create()
  for (const { table, email } of SHAPES) {
    const first = await stageWideShuffledRows(staging, table.name, ROWS)
    // A delta that changes one row's name: the next merge diffs against the dimension.
    const second = await staging.stage(
      table.name,
      WIDE_ROW_COLUMNS,
      [{ id: 1, name: 'renamed', email, birth: '1970-01-01', note: null }],
      { extractedAt: '2024-01-02T00:00:00.000Z', mode: 'incremental' },
    )
    batches.set(table.name, { first, second })
  }
})
afterAll(async () => {
  await staging?.dispose()
  await rm(dir, { recursive: true, force: true })
})

async function loadTwice(
  table: TableSpec,
  name: string,
  threads: { threads: number; firstLoadThreads?: number },
) {
  const { first, second } = batches.get(table.name)!
  const warehouse = await DuckDbWarehouse.open({
    path: join(dir, `${table.name}-${name}.duckdb`),
    memoryLimit: '1GB',
    ...threads,
  })
  const threadsAtCommit: number[] = []
  const merge = (batchId: string, now: string) =>
    mergeBatch(
      { warehouse, staging },
      {
        table,
        schema: 'main',
        batchId,
        now: new Date(now),
        beforeCommit: async () => {
          threadsAtCommit.push(await threadsNow(warehouse))
        },
      },
    )
  try {
    await merge(first, '2024-01-01T01:00:00Z')
    await merge(second, '2024-01-02T01:00:00Z')
    const [history] = await warehouse.query(
      `SELECT COUNT(*) AS versions, ` +
        `SUM(hash(dimsync_sk, id, name, email, birth, note, valid_from, valid_to, is_current, dimsync_row_hash) % 1000003) AS fingerprint FROM dim_t`,
    )
    return { threadsAtCommit, history }
  } finally {
    await warehouse.close()
  }
}

describe.each(SHAPES)('first loads and their threads, $shape', ({ table }) => {
  it('runs the first load on the first-load threads, the next merge on the others; the same history as one thread', async () => {
    const two = await loadTwice(table, 'two', { threads: 1, firstLoadThreads: 2 })
    const one = await loadTwice(table, 'one', { threads: 1 })
    expect(two.threadsAtCommit).toEqual([2, 1])
    expect(one.threadsAtCommit).toEqual([1, 1])
    expect(two.history).toEqual(one.history)
    expect(two.history!.versions).toBe(ROWS + 1)
  })
})
