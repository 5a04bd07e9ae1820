import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { MemoryRaised } from '../../../lib/ports/warehouse.ts'
import { loadFactBatch } from '../../../lib/use-cases/load-fact-batch.ts'
import { mergeBatch } from '../../../lib/use-cases/merge-batch.ts'
import { ORDER_COLUMNS, ordersFact } from '../../support/fact-specs.ts'
import { TestBatches } from '../../support/staged-batches.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/**
 * A fact load that runs out of the warehouse's memory runs again with more, like a merge, and says so: the
 * listener hears which statement ran out and the limits (the CLI logs it, docs/cli.md). Before, fact loads ran
 * again silently. 400,000 orders of 50,000 customers run out of 8MB (measured; the dimension is merged with room
 * first, in a file the load then opens).
 */
const CUSTOMERS = 50_000
const ORDERS = 400_000
const customers = tableSpec({ name: 'customers', target: 'dim_customers', key: ['customer_id'] })
const orders = ordersFact()

let dir: string
let staging: TestBatches
let dimensionBatch: string
let factBatch: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-fact-memory-'))
  staging = await TestBatches.create()
  dimensionBatch = await staging.stage(
    'customers',
    [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
    ],
    { select: `SELECT i, 'region ' || (i % 7) FROM range(1, ${CUSTOMERS + 1}) r(i)`, length: CUSTOMERS },
    { extractedAt: '2024-01-01T00:00:00.000Z' },
  )
  factBatch = await staging.stage(
    'orders',
    ORDER_COLUMNS,
    {
      select:
        `SELECT i, (i * 7919) % ${CUSTOMERS} + 1, TIMESTAMPTZ '2024-02-01 00:00:00+00' + to_seconds(i), i % 1000 ` +
        `FROM range(${ORDERS}) r(i)`,
      length: ORDERS,
    },
    { extractedAt: '2024-03-01T00:00:00.000Z', mode: 'incremental' },
  )
})
afterAll(async () => {
  await staging.dispose()
  await rm(dir, { recursive: true, force: true })
})

async function loadedFrom(startMb: number, firstOut: string): Promise<void> {
  const path = join(dir, `${startMb}.duckdb`)
  const roomy = await DuckDbWarehouse.open({ path, threads: 1, memoryLimit: '1024MB' })
  try {
    await mergeBatch(
      { warehouse: roomy, staging },
      { table: customers, schema: 'main', batchId: dimensionBatch, now: new Date('2024-01-01T01:00:00Z') },
    )
  } finally {
    await roomy.close()
  }
  const warehouse = await DuckDbWarehouse.open({
    path,
    threads: 1,
    memoryLimit: `${startMb}MB`,
    memoryGrowth: { ceilingMb: 1024 },
  })
  try {
    const raised: MemoryRaised[] = []
    const load = await loadFactBatch(
      { warehouse, staging },
      {
        fact: orders,
        dimensions: [customers],
        schema: 'main',
        batchId: factBatch,
        now: new Date('2024-03-01T01:00:00Z'),
        onMemoryRaised: (r) => raised.push(r),
      },
    )
    expect(raised[0]).toMatchObject({ statement: firstOut, from: `${startMb}MB`, to: `${startMb * 2}MB` })
    expect(load).toMatchObject({ status: 'loaded', facts: ORDERS })
  } finally {
    await warehouse.close()
  }
  // Read back with room: a read at the first limit may run out itself (reads do not run again).
  const reader = await DuckDbWarehouse.open({ path, threads: 1, memoryLimit: '1024MB' })
  try {
    const [counts] = await reader.query(
      `SELECT COUNT(*) AS facts, COUNT(DISTINCT order_id) AS orders, COUNT(*) FILTER (WHERE customer_sk = 0) AS unknown FROM fact_orders`,
    )
    expect(counts).toEqual({ facts: ORDERS, orders: ORDERS, unknown: 0 })
    // The unknown member, added in its own transaction (the one whose COMMIT ran out at 4MB), is there once.
    const [dimension] = await reader.query(
      `SELECT COUNT(*) AS versions, COUNT(*) FILTER (WHERE dimsync_sk = 0) AS unknown_members FROM dim_customers`,
    )
    expect(dimension).toEqual({ versions: CUSTOMERS + 1, unknown_members: 1 })
  } finally {
    await reader.close()
  }
}

describe('a fact load that ran out of memory', () => {
  it('runs again at a higher limit, tells its listener, and loads every fact once', async () => {
    await loadedFrom(8, 'check duplicate grain')
  })

  it('runs again when its COMMIT ran out (measured at 4MB: the statements fit, the commit did not)', async () => {
    await loadedFrom(4, 'commit')
  })
})
