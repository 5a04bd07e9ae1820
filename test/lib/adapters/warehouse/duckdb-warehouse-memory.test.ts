import { describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { MemoryRaised } from '../../../../lib/ports/warehouse.ts'

/**
 * A list aggregate cannot spill to disk: this one needs between 64MB and 128MB of DuckDB's memory (measured), so it
 * runs out at 16MB, 32MB and 64MB and fits 128MB.
 */
const NEEDS_OVER_64MB = {
  label: 'collect every number',
  sql: 'CREATE TABLE numbers AS SELECT list(i) AS l FROM range(4000000) r(i)',
}
const RECORD_ATTEMPT = {
  label: 'record the attempt',
  sql: 'INSERT INTO attempts VALUES (1)',
}

async function openWith(options: { memoryLimit: string; memoryGrowth?: { ceilingMb: number } }) {
  const warehouse = await DuckDbWarehouse.open({ path: ':memory:', threads: 1, ...options })
  await warehouse.query('CREATE TABLE attempts (n INTEGER)')
  return warehouse
}

/** Runs a transaction that needs more than 64MB: how many times its work ran, and the error it ended with. */
async function runOutOfMemory(warehouse: DuckDbWarehouse): Promise<{ runs: number; error?: Error }> {
  let runs = 0
  const error = await warehouse
    .transaction(
      async (tx) => {
        runs++
        await tx.execute(NEEDS_OVER_64MB)
      },
      { commit: true },
    )
    .then(
      () => undefined,
      (e: unknown) => e as Error,
    )
  return { runs, error }
}

const limitNow = async (warehouse: DuckDbWarehouse) =>
  String((await warehouse.query(`SELECT current_setting('memory_limit') AS m`))[0]!.m)

describe('DuckDbWarehouse: a memory limit that grows when a transaction runs out', () => {
  it('rolls the transaction back and runs it again at twice the limit until it fits; then returns to the first limit', async () => {
    const warehouse = await openWith({ memoryLimit: '16MB', memoryGrowth: { ceilingMb: 1024 } })
    try {
      const before = await limitNow(warehouse)
      const raised: MemoryRaised[] = []
      let runs = 0
      const result = await warehouse.transaction(
        async (tx) => {
          runs++
          await tx.execute(RECORD_ATTEMPT)
          await tx.execute(NEEDS_OVER_64MB)
          return 'done'
        },
        { commit: true, onMemoryRaised: (r) => raised.push(r) },
      )
      expect(result).toBe('done')
      expect(raised).toEqual([
        { statement: 'collect every number', from: '16MB', to: '32MB' },
        { statement: 'collect every number', from: '32MB', to: '64MB' },
        { statement: 'collect every number', from: '64MB', to: '128MB' },
      ])
      expect(runs).toBe(4)
      // The three attempts that ran out were rolled back: one attempt's row, one list.
      expect(await warehouse.query('SELECT COUNT(*) AS n FROM attempts')).toEqual([{ n: 1 }])
      expect(await warehouse.query('SELECT COUNT(*) AS n FROM numbers')).toEqual([{ n: 1 }])
      expect(await limitNow(warehouse)).toBe(before)
    } finally {
      await warehouse.close()
    }
  })

  it('stops at the ceiling: the last attempt runs at the ceiling, and its error names the limits tried; nothing is written', async () => {
    const warehouse = await openWith({ memoryLimit: '16MB', memoryGrowth: { ceilingMb: 48 } })
    try {
      const raised: MemoryRaised[] = []
      const error = await warehouse
        .transaction(
          async (tx) => {
            await tx.execute(RECORD_ATTEMPT)
            await tx.execute(NEEDS_OVER_64MB)
          },
          { commit: true, onMemoryRaised: (r) => raised.push(r) },
        )
        .then(
          () => undefined,
          (e: unknown) => e as Error,
        )
      expect(raised.map((r) => r.to)).toEqual(['32MB', '48MB'])
      expect(error?.message).toBe(
        'warehouse statement "collect every number" failed: statement "collect every number" ran out of memory ' +
          '(DIMSYNC_DUCKDB_MEMORY_LIMIT is not set: the default 16MB, raised up to 48MB); ' +
          'set DIMSYNC_DUCKDB_MEMORY_LIMIT higher than 48MB',
      )
      expect(await warehouse.query('SELECT COUNT(*) AS n FROM attempts')).toEqual([{ n: 0 }])
    } finally {
      await warehouse.close()
    }
  })

  it('says the limit was not set when the machine leaves no room to raise it (ceiling at or below the start)', async () => {
    const warehouse = await openWith({ memoryLimit: '16MB', memoryGrowth: { ceilingMb: 16 } })
    try {
      const { runs, error } = await runOutOfMemory(warehouse)
      expect(runs).toBe(1)
      expect(error?.message).toBe(
        'warehouse statement "collect every number" failed: statement "collect every number" ran out of memory ' +
          "(DIMSYNC_DUCKDB_MEMORY_LIMIT is not set: the default 16MB, not raised: this machine's memory leaves no room); " +
          'set DIMSYNC_DUCKDB_MEMORY_LIMIT higher than 16MB',
      )
    } finally {
      await warehouse.close()
    }
  })

  it('keeps a limit the user set: no second attempt', async () => {
    const warehouse = await openWith({ memoryLimit: '16MB' })
    try {
      const { runs, error } = await runOutOfMemory(warehouse)
      expect(runs).toBe(1)
      expect(error?.message).toBe(
        'warehouse statement "collect every number" failed: statement "collect every number" ran out of memory ' +
          '(DIMSYNC_DUCKDB_MEMORY_LIMIT is 16MB); raise DIMSYNC_DUCKDB_MEMORY_LIMIT',
      )
    } finally {
      await warehouse.close()
    }
  })

  it('does not run again what failed for another reason', async () => {
    const warehouse = await openWith({ memoryLimit: '16MB', memoryGrowth: { ceilingMb: 1024 } })
    try {
      let runs = 0
      await expect(
        warehouse.transaction(
          async (tx) => {
            runs++
            await tx.execute({ label: 'bad', sql: 'SELECT no_such_column FROM attempts' })
          },
          { commit: true, onMemoryRaised: () => expect.unreachable() },
        ),
      ).rejects.toThrow('warehouse statement "bad" failed: Binder Error')
      expect(runs).toBe(1)
    } finally {
      await warehouse.close()
    }
  })
})
